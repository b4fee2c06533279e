package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/hashicorp/go-hclog"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
)

// maxKillGrace bounds the wait between SIGTERM and SIGKILL of a deleted
// pod's processes, whatever the pod's terminationGracePeriodSeconds.
const maxKillGrace = 5 * time.Second

// podRun runs one pod's processes.
type podRun struct {
	a    *agent
	pod  *corev1.Pod
	dir  string
	log  hclog.Logger
	once sync.Once
	// killed is closed when the pod is deleted or the agent stops.
	killed chan struct{}
}

func newPodRun(a *agent, p *corev1.Pod) *podRun {
	return &podRun{
		a: a, pod: p.DeepCopy(), killed: make(chan struct{}),
		dir: filepath.Join(a.cfg.dir, "pods", fmt.Sprintf("%s_%s_%s", p.Namespace, p.Name, p.UID)),
		log: a.log.With("pod", p.Namespace+"/"+p.Name),
	}
}

func (r *podRun) kill() { r.once.Do(func() { close(r.killed) }) }

func (r *podRun) run(ctx context.Context) {
	start := metav1.Now()
	if err := r.prepare(); err != nil {
		r.log.Error("pod directory", "error", err)
		r.finish(ctx, start, nil, fmt.Sprintf("pod directory: %v", err))
		r.awaitDeletion(ctx)
		return
	}
	r.setStatus(ctx, func(s *corev1.PodStatus) {
		s.Phase = corev1.PodPending
		s.HostIP, s.PodIP = "127.0.0.1", "127.0.0.1"
		s.HostIPs = []corev1.HostIP{{IP: "127.0.0.1"}}
		s.PodIPs = []corev1.PodIP{{IP: "127.0.0.1"}}
		s.StartTime = &start
		setCondition(s, corev1.PodInitialized, corev1.ConditionFalse, "")
	})
	for _, c := range r.pod.Spec.InitContainers {
		for {
			code, err := r.runContainer(c)
			if r.wasKilled() {
				r.stopped(ctx)
				return
			}
			if err == nil && code == 0 {
				break
			}
			msg := fmt.Sprintf("init container %s exited with %d", c.Name, code)
			if err != nil {
				msg = fmt.Sprintf("init container %s: %v", c.Name, err)
			}
			if r.pod.Spec.RestartPolicy == corev1.RestartPolicyNever {
				r.log.Warn("init container failed", "container", c.Name, "exit_code", code, "error", err)
				r.finish(ctx, start, []corev1.ContainerStatus{terminated(c, code, start)}, msg)
				r.awaitDeletion(ctx)
				return
			}
			if !r.sleep(time.Second) {
				r.stopped(ctx)
				return
			}
		}
	}

	statuses := make([]corev1.ContainerStatus, len(r.pod.Spec.Containers))
	var mu sync.Mutex
	var wg sync.WaitGroup
	for i, c := range r.pod.Spec.Containers {
		statuses[i] = corev1.ContainerStatus{Name: c.Name, Image: c.Image, ImageID: c.Image, Ready: true, Started: ptrTrue(),
			State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: metav1.Now()}}}
	}
	r.setStatus(ctx, func(s *corev1.PodStatus) {
		s.Phase = corev1.PodRunning
		setCondition(s, corev1.PodInitialized, corev1.ConditionTrue, "")
		setCondition(s, corev1.ContainersReady, corev1.ConditionTrue, "")
		setCondition(s, corev1.PodReady, corev1.ConditionTrue, "")
		s.ContainerStatuses = append([]corev1.ContainerStatus(nil), statuses...)
	})
	for i, c := range r.pod.Spec.Containers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for restarts := int32(0); ; restarts++ {
				began := metav1.Now()
				code, err := r.runContainer(c)
				if err != nil {
					r.log.Warn("container did not start", "container", c.Name, "error", err)
				}
				if r.wasKilled() {
					return
				}
				again := r.pod.Spec.RestartPolicy == corev1.RestartPolicyAlways ||
					(r.pod.Spec.RestartPolicy == corev1.RestartPolicyOnFailure && code != 0)
				mu.Lock()
				statuses[i] = terminated(c, code, began)
				statuses[i].RestartCount = restarts
				mu.Unlock()
				if !again {
					return
				}
				if !r.sleep(time.Second) {
					return
				}
				mu.Lock()
				statuses[i].RestartCount = restarts + 1
				statuses[i].State = corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: metav1.Now()}}
				snapshot := append([]corev1.ContainerStatus(nil), statuses...)
				mu.Unlock()
				r.setStatus(ctx, func(s *corev1.PodStatus) { s.ContainerStatuses = snapshot })
			}
		}()
	}
	wg.Wait()
	if r.wasKilled() {
		r.stopped(ctx)
		return
	}
	r.finish(ctx, start, statuses, "")
	r.awaitDeletion(ctx)
}

// awaitDeletion completes the deletion of a finished pod once it comes.
func (r *podRun) awaitDeletion(ctx context.Context) {
	select {
	case <-ctx.Done():
	case <-r.killed:
		r.stopped(ctx)
	}
}

// prepare makes the pod's directory and its volumes' directories: one
// subdirectory per emptyDir, and for a hostPath its path in the node's
// filesystem (created for DirectoryOrCreate, required for Directory).
func (r *podRun) prepare() error {
	for _, v := range r.pod.Spec.Volumes {
		switch {
		case v.EmptyDir != nil:
		case v.HostPath != nil:
			t := corev1.HostPathDirectoryOrCreate
			if v.HostPath.Type != nil && *v.HostPath.Type != "" {
				t = *v.HostPath.Type
			}
			switch t {
			case corev1.HostPathDirectoryOrCreate:
			case corev1.HostPathDirectory:
				if fi, err := os.Stat(r.volumeDir(v.Name)); err != nil || !fi.IsDir() {
					return fmt.Errorf("volume %s: hostPath %s is not a directory", v.Name, v.HostPath.Path)
				}
			default:
				return fmt.Errorf("volume %s: hostPath type %s is not supported by this node", v.Name, t)
			}
		default:
			return fmt.Errorf("volume %s: only emptyDir and hostPath volumes are supported by this node", v.Name)
		}
		if err := os.MkdirAll(r.volumeDir(v.Name), 0o755); err != nil {
			return err
		}
	}
	return os.MkdirAll(r.dir, 0o755)
}

// volumeDir is where volume name's files are: a hostPath is its path
// under the node's filesystem (the agent's directory's host/, so that
// nodes on one machine keep apart what they keep across pods), any other
// volume a directory of the pod's own.
func (r *podRun) volumeDir(name string) string {
	for _, v := range r.pod.Spec.Volumes {
		if v.Name == name && v.HostPath != nil {
			return filepath.Join(r.a.cfg.dir, "host", filepath.Clean("/"+v.HostPath.Path))
		}
	}
	return filepath.Join(r.dir, "volumes", name)
}

// finish reports the pod's end: Succeeded when every container exited 0,
// Failed otherwise (failure, when set, says why).
func (r *podRun) finish(ctx context.Context, start metav1.Time, statuses []corev1.ContainerStatus, failure string) {
	phase := corev1.PodSucceeded
	if failure != "" || len(statuses) == 0 {
		phase = corev1.PodFailed
	}
	for _, s := range statuses {
		if s.State.Terminated == nil || s.State.Terminated.ExitCode != 0 {
			phase = corev1.PodFailed
		}
	}
	r.setStatus(ctx, func(s *corev1.PodStatus) {
		s.Phase = phase
		if failure != "" {
			s.Reason, s.Message = "AgentFailure", failure
		}
		setCondition(s, corev1.ContainersReady, corev1.ConditionFalse, "PodCompleted")
		setCondition(s, corev1.PodReady, corev1.ConditionFalse, "PodCompleted")
		if statuses != nil {
			s.ContainerStatuses = statuses
		}
	})
	r.log.Info("pod finished", "phase", phase)
}

// stopped ends a killed pod: when the pod is being deleted (not when the
// agent stops) the deletion completes.
func (r *podRun) stopped(ctx context.Context) {
	if ctx.Err() != nil {
		return
	}
	r.log.Info("pod stopped")
	r.a.finalDelete(ctx, r.pod)
}

func (r *podRun) wasKilled() bool {
	select {
	case <-r.killed:
		return true
	default:
		return false
	}
}

// sleep waits d; false when the pod was killed meanwhile.
func (r *podRun) sleep(d time.Duration) bool {
	select {
	case <-r.killed:
		return false
	case <-time.After(d):
		return true
	}
}

// runContainer runs c's command as a host process in its own process group
// and returns its exit code (128+signal when a signal ended it). When the
// pod is killed, the group gets SIGTERM, then SIGKILL after the grace.
func (r *podRun) runContainer(c corev1.Container) (int32, error) {
	if len(c.Command) == 0 {
		return -1, fmt.Errorf("container %s has no command (images are not run on this node)", c.Name)
	}
	env := r.env(c)
	vars := map[string]string{}
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		vars[k] = v
	}
	var argv []string
	for _, w := range append(append([]string(nil), c.Command...), c.Args...) {
		argv = append(argv, r.mapPath(c, expand(w, vars)))
	}
	log, err := os.OpenFile(filepath.Join(r.dir, c.Name+".log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return -1, err
	}
	defer log.Close()
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = env
	cmd.Dir = r.dir
	if c.WorkingDir != "" {
		cmd.Dir = r.mapPath(c, c.WorkingDir)
	}
	cmd.Stdout, cmd.Stderr = log, log
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return -1, fmt.Errorf("container %s: %w", c.Name, err)
	}
	r.log.Info("container started", "container", c.Name, "pid", cmd.Process.Pid, "argv", argv)
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err = <-done:
	case <-r.killed:
		pgid := cmd.Process.Pid
		_ = syscall.Kill(-pgid, syscall.SIGTERM)
		grace := maxKillGrace
		if g := r.pod.Spec.TerminationGracePeriodSeconds; g != nil && time.Duration(*g)*time.Second < grace {
			grace = time.Duration(*g) * time.Second
		}
		select {
		case err = <-done:
		case <-time.After(grace):
			_ = syscall.Kill(-pgid, syscall.SIGKILL)
			err = <-done
		}
		_ = syscall.Kill(-pgid, syscall.SIGKILL) // what the leader left behind
	}
	var exitErr *exec.ExitError
	switch {
	case err == nil:
		return 0, nil
	case errors.As(err, &exitErr):
		ws, _ := exitErr.Sys().(syscall.WaitStatus)
		if ws.Signaled() {
			return 128 + int32(ws.Signal()), nil
		}
		return int32(ws.ExitStatus()), nil
	}
	return -1, fmt.Errorf("container %s: %w", c.Name, err)
}

// env is the container's environment: PATH, HOME (the pod's directory) and
// HOSTNAME (the pod's name), then the container's variables in order, with
// $(VAR) references and field references resolved.
func (r *podRun) env(c corev1.Container) []string {
	vars := map[string]string{"PATH": os.Getenv("PATH"), "HOME": r.dir, "HOSTNAME": r.pod.Name}
	order := []string{"PATH", "HOME", "HOSTNAME"}
	for _, e := range c.Env {
		v := expand(e.Value, vars)
		if e.ValueFrom != nil && e.ValueFrom.FieldRef != nil {
			v = r.field(e.ValueFrom.FieldRef.FieldPath)
		}
		if _, seen := vars[e.Name]; !seen {
			order = append(order, e.Name)
		}
		vars[e.Name] = r.mapPath(c, v)
	}
	out := make([]string, 0, len(order))
	for _, k := range order {
		out = append(out, k+"="+vars[k])
	}
	return out
}

// field resolves a downward-API field path of the pod.
func (r *podRun) field(path string) string {
	p := r.pod
	switch path {
	case "metadata.name":
		return p.Name
	case "metadata.namespace":
		return p.Namespace
	case "metadata.uid":
		return string(p.UID)
	case "spec.nodeName":
		return p.Spec.NodeName
	case "spec.serviceAccountName":
		return p.Spec.ServiceAccountName
	case "status.hostIP", "status.podIP":
		return "127.0.0.1"
	}
	for prefix, m := range map[string]map[string]string{"metadata.labels": p.Labels, "metadata.annotations": p.Annotations} {
		if key, ok := strings.CutPrefix(path, prefix+"['"); ok {
			return m[strings.TrimSuffix(key, "']")]
		}
	}
	return ""
}

// mapPath rewrites a path under one of c's volume mounts to the volume's
// directory of this pod.
func (r *podRun) mapPath(c corev1.Container, s string) string {
	for _, m := range c.VolumeMounts {
		mp := strings.TrimSuffix(m.MountPath, "/")
		if mp == "" {
			continue
		}
		if s == mp || strings.HasPrefix(s, mp+"/") {
			return r.volumeDir(m.Name) + strings.TrimPrefix(s, mp)
		}
	}
	return s
}

// expand resolves $(VAR) as the kubelet does: a defined variable is
// replaced, an undefined reference is kept, $$ is a literal $.
func expand(s string, vars map[string]string) string {
	if !strings.Contains(s, "$") {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '$' || i+1 == len(s) {
			b.WriteByte(s[i])
			continue
		}
		switch s[i+1] {
		case '$':
			b.WriteByte('$')
			i++
		case '(':
			end := strings.IndexByte(s[i:], ')')
			if end < 0 {
				b.WriteString(s[i:])
				return b.String()
			}
			name := s[i+2 : i+end]
			if v, ok := vars[name]; ok {
				b.WriteString(v)
			} else {
				b.WriteString(s[i : i+end+1])
			}
			i += end
		default:
			b.WriteByte('$')
		}
	}
	return b.String()
}

func terminated(c corev1.Container, code int32, began metav1.Time) corev1.ContainerStatus {
	reason := "Completed"
	if code != 0 {
		reason = "Error"
	}
	return corev1.ContainerStatus{Name: c.Name, Image: c.Image, ImageID: c.Image, Started: new(bool),
		State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
			ExitCode: code, Reason: reason, StartedAt: began, FinishedAt: metav1.Now(),
		}}}
}

func ptrTrue() *bool { t := true; return &t }

func setCondition(s *corev1.PodStatus, t corev1.PodConditionType, st corev1.ConditionStatus, reason string) {
	now := metav1.Now()
	for i := range s.Conditions {
		if s.Conditions[i].Type == t {
			if s.Conditions[i].Status != st {
				s.Conditions[i].LastTransitionTime = now
			}
			s.Conditions[i].Status, s.Conditions[i].Reason = st, reason
			return
		}
	}
	s.Conditions = append(s.Conditions, corev1.PodCondition{Type: t, Status: st, Reason: reason, LastTransitionTime: now})
}

// setStatus applies change to the pod's current status and writes it.
func (r *podRun) setStatus(ctx context.Context, change func(*corev1.PodStatus)) {
	pods := r.a.client.CoreV1().Pods(r.pod.Namespace)
	err := retry.RetryOnConflict(retry.DefaultBackoff, func() error {
		p, err := pods.Get(ctx, r.pod.Name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if p.UID != r.pod.UID {
			return apierrors.NewNotFound(corev1.Resource("pods"), r.pod.Name)
		}
		change(&p.Status)
		_, err = pods.UpdateStatus(ctx, p, metav1.UpdateOptions{})
		return err
	})
	if err != nil && !apierrors.IsNotFound(err) && ctx.Err() == nil {
		r.log.Warn("pod status update failed", "error", err)
	}
}
