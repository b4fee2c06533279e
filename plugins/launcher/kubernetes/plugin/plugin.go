// Package plugin serves the Kubernetes launcher as an spi.Launcher: each
// call's Config names the cluster (kubeconfig, context, namespace, and
// helperImage for the fetch of appURL apps, appCacheDir for the nodes'
// cache of apps with appCacheEnable), a TRANSIENT fire becomes an
// Indexed Job, a DAEMON job a StatefulSet.
//
// The launcher does not retry items itself (the scheduler fails them over
// as new fires), and reports an item final only when Kubernetes will not
// run it again: a pod on a node that is not ready counts as running (the
// node may come back) until it is evicted; an item whose pod was evicted
// or lost with its node is lost, one whose process failed is failed.
package plugin

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"

	"github.com/ejob-io/ejob/spi"
	"github.com/hashicorp/go-hclog"

	kubernetes "github.com/ejob-io/ejob/plugins/launcher/kubernetes"
)

// TypeName is the launcher's ejob.cloud.launcher.type.
const TypeName = "KUBERNETES"

// The Config keys the launcher reads; any other is refused.
const (
	KeyKubeconfig  = "kubeconfig"
	KeyContext     = "context"
	KeyNamespace   = "namespace"
	KeyHelperImage = "helperImage"
	KeyAppCacheDir = "appCacheDir"
)

func keys() []string {
	return []string{KeyKubeconfig, KeyContext, KeyNamespace, KeyHelperImage, KeyAppCacheDir}
}

// Launcher is the spi.Launcher of Kubernetes. It keeps one client per
// distinct Config.
type Launcher struct {
	log     hclog.Logger
	mu      sync.Mutex
	clients map[[5]string]*kubernetes.Launcher
}

// New returns the launcher, logging to log.
func New(log hclog.Logger) *Launcher {
	return &Launcher{log: log, clients: map[[5]string]*kubernetes.Launcher{}}
}

func (a *Launcher) client(cfg map[string]string) (*kubernetes.Launcher, error) {
	for k := range cfg {
		if !slices.Contains(keys(), k) {
			return nil, fmt.Errorf("%w: unknown setting %q (the Kubernetes launcher reads %s)", spi.ErrInvalidConfig, k, strings.Join(keys(), ", "))
		}
	}
	key := [5]string{cfg[KeyKubeconfig], cfg[KeyContext], cfg[KeyNamespace], cfg[KeyHelperImage], cfg[KeyAppCacheDir]}
	a.mu.Lock()
	defer a.mu.Unlock()
	if l, ok := a.clients[key]; ok {
		return l, nil
	}
	if p := key[0]; p != "" {
		if _, err := os.Stat(p); err != nil {
			return nil, fmt.Errorf("%w: %s %q: %v", spi.ErrInvalidConfig, KeyKubeconfig, p, err)
		}
	}
	l, err := kubernetes.New(kubernetes.Config{
		Kubeconfig: key[0], Context: key[1], Namespace: key[2], HelperImage: key[3], AppCacheDir: key[4], Logger: a.log,
	})
	if err != nil {
		return nil, fmt.Errorf("%w: %v", spi.ErrInvalidConfig, err)
	}
	a.clients[key] = l
	return l, nil
}

// Validate connects to the cluster and reads the namespace's Jobs.
func (a *Launcher) Validate(ctx context.Context, req spi.LaunchValidateRequest) error {
	l, err := a.client(req.Config)
	if err != nil {
		return err
	}
	if _, err := l.List(ctx, ""); err != nil {
		return fmt.Errorf("kubernetes launcher: cluster not usable: %w", err)
	}
	return nil
}

// Launch creates the fire's Job (TRANSIENT) or the job's StatefulSet
// (DAEMON).
func (a *Launcher) Launch(ctx context.Context, req spi.LaunchRequest) (spi.LaunchResponse, error) {
	l, err := a.client(req.Config)
	if err != nil {
		return spi.LaunchResponse{}, err
	}
	f := kubernetes.Fire{
		App: kubernetes.App{
			Name: req.App.Name, Image: req.App.Image, AppURL: req.App.AppURL, BootstrapScript: req.App.BootstrapScript,
			CacheEnable: req.App.AppCacheEnable, CPUCount: req.App.CPUCount, MemoryMB: req.App.MemoryMB,
		},
		JobName: req.Job.Name, FireID: req.FireID, ShardingTotalCount: req.Job.ShardingTotalCount,
		JobParameter: req.Job.JobParameter, ShardingItemParameters: req.Job.ShardingItemParameters,
		Failover: req.ExecutionType == "FAILOVER", CPUCount: req.Job.CPUCount, MemoryMB: req.Job.MemoryMB,
		Labels: req.Labels, ItemEnv: map[int]map[string]string{},
	}
	for _, it := range req.Items {
		f.Items = append(f.Items, it.Item)
		f.ItemEnv[it.Item] = it.Env
	}
	switch req.Job.ExecutionType {
	case "DAEMON":
		_, err = l.LaunchDaemon(ctx, f)
	case "TRANSIENT":
		_, err = l.Launch(ctx, f)
	default:
		return spi.LaunchResponse{}, fmt.Errorf("%w: job %q: jobExecutionType %q is neither TRANSIENT nor DAEMON",
			spi.ErrInvalidConfig, req.Job.Name, req.Job.ExecutionType)
	}
	if errors.Is(err, kubernetes.ErrInvalidFire) {
		return spi.LaunchResponse{}, fmt.Errorf("%w: %v", spi.ErrInvalidConfig, err)
	}
	return spi.LaunchResponse{}, err
}

// List reports every item of every fire the cluster holds.
func (a *Launcher) List(ctx context.Context, req spi.LaunchListRequest) (spi.LaunchList, error) {
	l, err := a.client(req.Config)
	if err != nil {
		return spi.LaunchList{}, err
	}
	items, err := l.ListItems(ctx, req.JobName)
	if err != nil {
		return spi.LaunchList{}, err
	}
	out := spi.LaunchList{Items: make([]spi.ItemStatus, 0, len(items))}
	for _, it := range items {
		out.Items = append(out.Items, itemStatus(it))
	}
	return out, nil
}

func itemStatus(it kubernetes.ItemStatus) spi.ItemStatus {
	s := spi.ItemStatus{
		JobName: it.JobName, FireID: it.FireID, Item: it.Item, Reason: it.Reason, Node: it.Node, Name: it.Pod,
		ExitCode: -1, Started: it.Started, Finished: it.Finished, Idle: it.Idle, Fires: it.Fires,
	}
	if it.ExitCode != nil {
		s.ExitCode = int(*it.ExitCode)
	}
	switch it.State {
	case kubernetes.Ready:
		s.State = spi.ItemReady
	case kubernetes.Running, kubernetes.Lost:
		// A pod on a node that is not ready may still run there.
		s.State = spi.ItemRunning
	case kubernetes.Succeeded:
		s.State = spi.ItemSucceeded
	case kubernetes.Failed:
		s.State = spi.ItemFailed
		if it.LastLost {
			s.State = spi.ItemLost
		}
	}
	return s
}

// Stop deletes the job's fire (or all its fires and its StatefulSet) and
// returns once their pods are gone.
func (a *Launcher) Stop(ctx context.Context, req spi.LaunchStopRequest) (spi.LaunchStopResponse, error) {
	l, err := a.client(req.Config)
	if err != nil {
		return spi.LaunchStopResponse{}, err
	}
	items, err := l.ListItems(ctx, req.JobName)
	if err != nil {
		return spi.LaunchStopResponse{}, err
	}
	n := 0
	for _, it := range items {
		if (req.FireID == "" || it.FireID == req.FireID) && !itemStatus(it).State.Final() {
			n++
		}
	}
	if req.FireID == "" {
		err = l.StopJob(ctx, req.JobName)
	} else {
		err = l.Stop(ctx, req.JobName, req.FireID)
	}
	return spi.LaunchStopResponse{Stopped: n}, err
}
