package main

import (
	"context"
	"fmt"
	"net"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
)

type agentConfig struct {
	kubeconfig  string
	name        string
	cpu, memory resource.Quantity
	maxPods     int
	dir         string
	heartbeat   time.Duration
}

// agent is one node: its registration, its Lease and the pods it runs.
type agent struct {
	cfg    agentConfig
	client kubernetes.Interface
	log    hclog.Logger

	// logPort is the port of the container log server (the kubelet
	// endpoint of the Node).
	logPort int32

	mu   sync.Mutex
	pods map[types.UID]*podRun // pods started and not yet forgotten
	wg   sync.WaitGroup
}

func newAgent(cfg agentConfig, client kubernetes.Interface, log hclog.Logger) *agent {
	return &agent{cfg: cfg, client: client, log: log, pods: map[types.UID]*podRun{}}
}

func (a *agent) run(ctx context.Context) error {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return fmt.Errorf("log server: %w", err)
	}
	a.logPort = int32(ln.Addr().(*net.TCPAddr).Port)
	go func() {
		if err := a.serveLogs(ctx, ln); err != nil {
			a.log.Error("container logs not served", "error", err)
		}
	}()
	if err := a.register(ctx); err != nil {
		return err
	}
	a.log.Info("node registered", "cpu", a.cfg.cpu.String(), "memory", a.cfg.memory.String())
	factory := informers.NewSharedInformerFactoryWithOptions(a.client, 30*time.Second,
		informers.WithTweakListOptions(func(o *metav1.ListOptions) {
			o.FieldSelector = fields.OneTermEqualSelector("spec.nodeName", a.cfg.name).String()
		}))
	inf := factory.Core().V1().Pods().Informer()
	if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { a.sync(ctx, obj) },
		UpdateFunc: func(_, obj any) { a.sync(ctx, obj) },
		DeleteFunc: func(obj any) {
			if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				obj = t.Obj
			}
			if p, ok := obj.(*corev1.Pod); ok {
				a.forget(p.UID)
			}
		},
	}); err != nil {
		return fmt.Errorf("pod informer: %w", err)
	}
	factory.Start(ctx.Done())
	go a.heartbeat(ctx)
	<-ctx.Done()
	factory.Shutdown()
	a.mu.Lock()
	for _, r := range a.pods {
		r.kill()
	}
	a.mu.Unlock()
	a.wg.Wait()
	a.log.Info("node agent stopped")
	return nil
}

// register creates the Node (or takes over an existing one of that name,
// as a restarted kubelet does) and its Lease.
func (a *agent) register(ctx context.Context) error {
	node := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: a.cfg.name, Labels: map[string]string{
			corev1.LabelHostname: a.cfg.name, corev1.LabelOSStable: "linux", "ejob.io/test-node": "true",
		}},
	}
	_, err := a.client.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("register node %s: %w", a.cfg.name, err)
	}
	if err := a.refreshNode(ctx); err != nil {
		return err
	}
	return a.renewLease(ctx)
}

// refreshNode writes the node's capacity and Ready condition, retrying
// when the node lifecycle controller changed the Node meanwhile.
func (a *agent) refreshNode(ctx context.Context) error {
	return retry.RetryOnConflict(retry.DefaultBackoff, func() error {
		node, err := a.client.CoreV1().Nodes().Get(ctx, a.cfg.name, metav1.GetOptions{})
		if err != nil {
			return fmt.Errorf("node %s: %w", a.cfg.name, err)
		}
		return a.updateNodeStatus(ctx, node)
	})
}

func (a *agent) updateNodeStatus(ctx context.Context, node *corev1.Node) error {
	now := metav1.Now()
	rl := corev1.ResourceList{
		corev1.ResourceCPU:    a.cfg.cpu,
		corev1.ResourceMemory: a.cfg.memory,
		corev1.ResourcePods:   *resource.NewQuantity(int64(a.cfg.maxPods), resource.DecimalSI),
	}
	node = node.DeepCopy()
	node.Status.Capacity = rl
	node.Status.Allocatable = rl
	node.Status.Phase = corev1.NodeRunning
	// No Hostname address: the API server would prefer it to reach the
	// log server, and the node's name does not resolve.
	node.Status.Addresses = []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "127.0.0.1"}}
	node.Status.DaemonEndpoints.KubeletEndpoint.Port = a.logPort
	node.Status.NodeInfo = corev1.NodeSystemInfo{
		OperatingSystem: "linux", Architecture: "amd64", KubeletVersion: "ejob-nodeagent",
	}
	transition := now
	for _, c := range node.Status.Conditions {
		if c.Type == corev1.NodeReady && c.Status == corev1.ConditionTrue {
			transition = c.LastTransitionTime
		}
	}
	node.Status.Conditions = []corev1.NodeCondition{{
		Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "AgentReady",
		Message: "ejob test node agent is running", LastHeartbeatTime: now, LastTransitionTime: transition,
	}}
	if _, err := a.client.CoreV1().Nodes().UpdateStatus(ctx, node, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("node %s status: %w", a.cfg.name, err)
	}
	return nil
}

func (a *agent) renewLease(ctx context.Context) error {
	leases := a.client.CoordinationV1().Leases(corev1.NamespaceNodeLease)
	now := metav1.NewMicroTime(time.Now())
	l, err := leases.Get(ctx, a.cfg.name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		_, err = leases.Create(ctx, &coordinationv1.Lease{
			ObjectMeta: metav1.ObjectMeta{Name: a.cfg.name},
			Spec: coordinationv1.LeaseSpec{
				HolderIdentity: ptr.To(a.cfg.name), LeaseDurationSeconds: ptr.To(int32(40)), RenewTime: &now,
			},
		}, metav1.CreateOptions{})
	} else if err == nil {
		l.Spec.HolderIdentity = ptr.To(a.cfg.name)
		l.Spec.RenewTime = &now
		_, err = leases.Update(ctx, l, metav1.UpdateOptions{})
	}
	if err != nil {
		return fmt.Errorf("node %s lease: %w", a.cfg.name, err)
	}
	return nil
}

// heartbeat renews the Lease every interval and refreshes the Ready
// condition every fifth time.
func (a *agent) heartbeat(ctx context.Context) {
	t := time.NewTicker(a.cfg.heartbeat)
	defer t.Stop()
	for n := 1; ; n++ {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if err := a.renewLease(ctx); err != nil && ctx.Err() == nil {
			a.log.Warn("lease renewal failed", "error", err)
		}
		if n%5 == 0 {
			if err := a.refreshNode(ctx); err != nil && ctx.Err() == nil {
				a.log.Warn("node status update failed", "error", err)
			}
		}
	}
}

// sync starts a new pod, or stops one that is being deleted.
func (a *agent) sync(ctx context.Context, obj any) {
	p, ok := obj.(*corev1.Pod)
	if !ok || ctx.Err() != nil {
		return
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	r, known := a.pods[p.UID]
	if p.DeletionTimestamp != nil {
		if known {
			r.kill()
			return
		}
		// Never started (or finished before this agent started): nothing
		// runs, so the deletion completes at once.
		a.wg.Add(1)
		go func() {
			defer a.wg.Done()
			a.finalDelete(ctx, p)
		}()
		a.pods[p.UID] = &podRun{killed: make(chan struct{})}
		return
	}
	if known || p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
		return
	}
	r = newPodRun(a, p)
	a.pods[p.UID] = r
	a.wg.Add(1)
	go func() {
		defer a.wg.Done()
		r.run(ctx)
	}()
}

func (a *agent) forget(uid types.UID) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if r, ok := a.pods[uid]; ok {
		r.kill()
		delete(a.pods, uid)
	}
}

// finalDelete removes a pod whose processes are gone, as a kubelet does
// once a deleted pod's containers have stopped.
func (a *agent) finalDelete(ctx context.Context, p *corev1.Pod) {
	err := a.client.CoreV1().Pods(p.Namespace).Delete(ctx, p.Name, metav1.DeleteOptions{
		GracePeriodSeconds: ptr.To(int64(0)), Preconditions: &metav1.Preconditions{UID: &p.UID},
	})
	if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) && ctx.Err() == nil {
		a.log.Warn("final pod delete failed", "pod", p.Namespace+"/"+p.Name, "error", err)
	}
}
