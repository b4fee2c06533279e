package kubernetes

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/utils/ptr"
)

// State is where an item of a fire is.
type State string

const (
	// Ready: no pod of the item runs yet, typically Pending for lack of
	// room (Reason holds the scheduler's message).
	Ready State = "ready"
	// Running: the item's pod is bound to a ready node.
	Running State = "running"
	// Lost: the item's pod is on a node that is not ready or gone, or is
	// being evicted; the Job replaces it while retries are left.
	Lost State = "lost"
	// Succeeded and Failed are final (the Job's completedIndexes and
	// failedIndexes; Succeeded also as soon as the item's pod succeeded).
	Succeeded State = "succeeded"
	Failed    State = "failed"
)

// ItemStatus is the state of one item of a fire.
type ItemStatus struct {
	Item  int
	State State
	// Reason explains Ready (the scheduler's message), Lost and Failed.
	Reason string
	Node   string
	Pod    string
	// Failures counts the item's failed or lost pods so far.
	Failures int
	// ExitCode is the exit code of the item's last finished pod.
	ExitCode *int32
	// LastLost tells that the item's last failure was a pod lost with its
	// node (or evicted from it) rather than a process that failed.
	LastLost bool
	// Started and Finished are those of the item's current pod's process
	// (zero until known).
	Started, Finished time.Time
	// JobName and FireID say whose item this is.
	JobName, FireID string
	// Idle and Fires are a running DAEMON item's report of its fires
	// (EJOB_FIRE_LOG): idle between two fires, and the fires completed
	// by its pod.
	Idle  bool
	Fires int
}

// FireStatus is the state of a fire's items, in item order.
type FireStatus struct {
	Name  string
	Items []ItemStatus
}

// Done tells whether every item has succeeded or failed.
func (s FireStatus) Done() bool {
	for _, it := range s.Items {
		if it.State != Succeeded && it.State != Failed {
			return false
		}
	}
	return true
}

// Status reads the state of the fire's items from its Job's status and
// pods. It wraps ErrNotFound when the fire's Job does not exist.
func (l *Launcher) Status(ctx context.Context, jobName, fireID string) (FireStatus, error) {
	name := ObjectName(jobName, fireID)
	job, err := l.client.BatchV1().Jobs(l.namespace).Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return FireStatus{}, fmt.Errorf("%w: job %q fire %q (%s)", ErrNotFound, jobName, fireID, name)
	}
	if err != nil {
		return FireStatus{}, fmt.Errorf("kubernetes: job %q fire %q: %w", jobName, fireID, err)
	}
	pods, err := l.client.CoreV1().Pods(l.namespace).List(ctx, metav1.ListOptions{
		LabelSelector: labels.Set{LabelFire: name}.String(),
	})
	if err != nil {
		return FireStatus{}, fmt.Errorf("kubernetes: pods of job %q fire %q: %w", jobName, fireID, err)
	}
	nodes, err := l.readyNodes(ctx)
	if err != nil {
		return FireStatus{}, err
	}
	return fireStatus(job, pods.Items, nodes), nil
}

// readyNodes maps each node to whether it is Ready.
func (l *Launcher) readyNodes(ctx context.Context) (map[string]bool, error) {
	list, err := l.client.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("kubernetes: nodes: %w", err)
	}
	out := map[string]bool{}
	for _, n := range list.Items {
		ready := false
		for _, c := range n.Status.Conditions {
			if c.Type == corev1.NodeReady {
				ready = c.Status == corev1.ConditionTrue
			}
		}
		out[n.Name] = ready
	}
	return out, nil
}

func fireStatus(job *batchv1.Job, pods []corev1.Pod, nodes map[string]bool) FireStatus {
	st := FireStatus{Name: job.Name}
	jobName, fireID := job.Annotations[AnnotationJob], job.Annotations[AnnotationFire]
	n := int(ptr.Deref(job.Spec.Completions, 0))
	completed := parseIndexes(job.Status.CompletedIndexes)
	failed := map[int]bool{}
	if job.Status.FailedIndexes != nil {
		failed = parseIndexes(*job.Status.FailedIndexes)
	}
	items := itemsOf(job)
	byIndex := map[int][]corev1.Pod{}
	for _, p := range pods {
		if i, err := strconv.Atoi(p.Annotations[indexAnnotation]); err == nil {
			byIndex[i] = append(byIndex[i], p)
		}
	}
	for idx := 0; idx < n; idx++ {
		it := ItemStatus{Item: idx, State: Ready, Reason: "no pod yet", JobName: jobName, FireID: fireID}
		if v, ok := items[idx]; ok {
			it.Item = v
		}
		ps := byIndex[idx]
		sort.Slice(ps, func(a, b int) bool { return ps[a].CreationTimestamp.Before(&ps[b].CreationTimestamp) })
		for _, p := range ps {
			lost := (p.Spec.NodeName != "" && !nodes[p.Spec.NodeName]) || hasCondition(&p, corev1.DisruptionTarget) ||
				(p.DeletionTimestamp != nil && p.Status.Phase != corev1.PodSucceeded && p.Status.Phase != corev1.PodFailed)
			if p.Status.Phase == corev1.PodFailed || lost {
				it.Failures++
				it.LastLost = lost
			}
			if code := exitCode(p); code != nil {
				it.ExitCode = code
			}
		}
		switch {
		case completed[idx]:
			it.State, it.Reason = Succeeded, ""
		case failed[idx]:
			it.State, it.Reason = Failed, fmt.Sprintf("failed %d time(s)", it.Failures)
			if it.ExitCode != nil {
				it.Reason += fmt.Sprintf(", last exit code %d", *it.ExitCode)
			}
		}
		if last := current(ps); last != nil {
			it.Pod, it.Node = last.Name, last.Spec.NodeName
			it.Started, it.Finished = processTimes(last)
			if it.State == Ready {
				it.State, it.Reason = podState(last, nodes)
			}
		}
		st.Items = append(st.Items, it)
	}
	return st
}

// current is the pod that stands for the item now: the newest one not
// finished, else the newest one.
func current(ps []corev1.Pod) *corev1.Pod {
	for i := len(ps) - 1; i >= 0; i-- {
		if ps[i].Status.Phase != corev1.PodFailed && ps[i].Status.Phase != corev1.PodSucceeded && ps[i].DeletionTimestamp == nil {
			return &ps[i]
		}
	}
	if len(ps) > 0 {
		return &ps[len(ps)-1]
	}
	return nil
}

func podState(p *corev1.Pod, nodes map[string]bool) (State, string) {
	switch {
	case p.Spec.NodeName != "" && !nodes[p.Spec.NodeName]:
		return Lost, fmt.Sprintf("node %s is not ready", p.Spec.NodeName)
	case p.DeletionTimestamp != nil || hasCondition(p, corev1.DisruptionTarget):
		return Lost, fmt.Sprintf("pod %s is being evicted from node %s", p.Name, p.Spec.NodeName)
	case p.Spec.NodeName == "":
		for _, c := range p.Status.Conditions {
			if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse {
				return Ready, c.Message
			}
		}
		return Ready, "waiting for the scheduler"
	case p.Status.Phase == corev1.PodFailed:
		return Ready, "failed; waiting for the retry"
	case p.Status.Phase == corev1.PodSucceeded:
		// The Job's completedIndexes follow a moment later.
		return Succeeded, ""
	}
	return Running, ""
}

func hasCondition(p *corev1.Pod, t corev1.PodConditionType) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == t && c.Status == corev1.ConditionTrue {
			return true
		}
	}
	return false
}

// processTimes are the start and end of p's item container.
func processTimes(p *corev1.Pod) (started, finished time.Time) {
	for _, c := range p.Status.ContainerStatuses {
		if c.Name != "item" {
			continue
		}
		if r := c.State.Running; r != nil {
			return r.StartedAt.Time, time.Time{}
		}
		if t := c.State.Terminated; t != nil {
			return t.StartedAt.Time, t.FinishedAt.Time
		}
	}
	return time.Time{}, time.Time{}
}

func exitCode(p corev1.Pod) *int32 {
	for _, c := range p.Status.ContainerStatuses {
		if c.Name == "item" && c.State.Terminated != nil {
			return ptr.To(c.State.Terminated.ExitCode)
		}
	}
	return nil
}

// itemsOf maps the Job's completion indexes to sharding items (they differ
// in a failover fire).
func itemsOf(job *batchv1.Job) map[int]int {
	out := map[int]int{}
	for _, c := range job.Spec.Template.Spec.Containers {
		for _, e := range c.Env {
			if s, ok := strings.CutPrefix(e.Name, "EJOB_SHARDING_ITEM_"); ok {
				idx, err1 := strconv.Atoi(s)
				item, err2 := strconv.Atoi(e.Value)
				if err1 == nil && err2 == nil {
					out[idx] = item
				}
			}
		}
	}
	return out
}

// parseIndexes reads the Job status's "1,3-5" index lists.
func parseIndexes(s string) map[int]bool {
	out := map[int]bool{}
	for _, part := range strings.Split(s, ",") {
		if part == "" {
			continue
		}
		lo, hi, isRange := strings.Cut(part, "-")
		a, err := strconv.Atoi(lo)
		if err != nil {
			continue
		}
		b := a
		if isRange {
			if b, err = strconv.Atoi(hi); err != nil {
				continue
			}
		}
		for i := a; i <= b; i++ {
			out[i] = true
		}
	}
	return out
}

// Stop deletes the fire's Job with foreground propagation and returns once
// the Job and its pods are gone (pods on a node that is not ready are
// force-deleted: nothing there would confirm their end). Stopping a fire
// that does not exist is not an error.
func (l *Launcher) Stop(ctx context.Context, jobName, fireID string) error {
	return l.deleteJobs(ctx, jobName, fireID)
}

// StopJob stops every fire of the job and its daemon StatefulSet.
func (l *Launcher) StopJob(ctx context.Context, jobName string) error {
	return l.deleteJobs(ctx, jobName, "")
}

// deleteJobs deletes, with foreground propagation, the Jobs and
// StatefulSets of jobName (of its fire fireID only, when not empty), and
// waits until they and their pods are gone.
func (l *Launcher) deleteJobs(ctx context.Context, jobName, fireID string) error {
	jobs := l.client.BatchV1().Jobs(l.namespace)
	sets := l.client.AppsV1().StatefulSets(l.namespace)
	opts := metav1.ListOptions{LabelSelector: labels.Set{LabelManaged: managedValue, LabelJob: labelValue(jobName)}.String()}
	jl, err := jobs.List(ctx, opts)
	if err != nil {
		return fmt.Errorf("kubernetes: list fires of job %q: %w", jobName, err)
	}
	sl, err := sets.List(ctx, opts)
	if err != nil {
		return fmt.Errorf("kubernetes: list daemon of job %q: %w", jobName, err)
	}
	type object struct {
		meta   metav1.ObjectMeta
		delete func(context.Context, string, metav1.DeleteOptions) error
		get    func(context.Context, string) error
	}
	var objs []object
	for _, j := range jl.Items {
		objs = append(objs, object{j.ObjectMeta, jobs.Delete, func(ctx context.Context, n string) error {
			_, err := jobs.Get(ctx, n, metav1.GetOptions{})
			return err
		}})
	}
	for _, s := range sl.Items {
		objs = append(objs, object{s.ObjectMeta, sets.Delete, func(ctx context.Context, n string) error {
			_, err := sets.Get(ctx, n, metav1.GetOptions{})
			return err
		}})
	}
	for _, o := range objs {
		if o.meta.Annotations[AnnotationJob] != jobName || (fireID != "" && o.meta.Annotations[AnnotationFire] != fireID) {
			continue
		}
		err := o.delete(ctx, o.meta.Name, metav1.DeleteOptions{PropagationPolicy: ptr.To(metav1.DeletePropagationForeground)})
		if err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("kubernetes: delete %s of job %q: %w", o.meta.Name, jobName, err)
		}
		if err := l.awaitGone(ctx, o.meta.Name, o.get); err != nil {
			return fmt.Errorf("kubernetes: delete %s of job %q: %w", o.meta.Name, jobName, err)
		}
		l.log.Info("fire stopped", "job", jobName, "fire", o.meta.Annotations[AnnotationFire], "k8s_object", o.meta.Name)
	}
	return nil
}

// awaitGone waits until the object name (get says whether it is still
// there) and its pods are gone, force-deleting its terminating pods on
// nodes that are not ready.
func (l *Launcher) awaitGone(ctx context.Context, name string, get func(context.Context, string) error) error {
	t := time.NewTicker(200 * time.Millisecond)
	defer t.Stop()
	for {
		pods, err := l.client.CoreV1().Pods(l.namespace).List(ctx, metav1.ListOptions{LabelSelector: labels.Set{LabelFire: name}.String()})
		if err != nil {
			return err
		}
		gerr := get(ctx, name)
		if apierrors.IsNotFound(gerr) && len(pods.Items) == 0 {
			return nil
		}
		if gerr != nil && !apierrors.IsNotFound(gerr) {
			return gerr
		}
		nodes, err := l.readyNodes(ctx)
		if err != nil {
			return err
		}
		for _, p := range pods.Items {
			if p.DeletionTimestamp != nil && (p.Spec.NodeName == "" || !nodes[p.Spec.NodeName]) {
				err := l.client.CoreV1().Pods(l.namespace).Delete(ctx, p.Name, metav1.DeleteOptions{GracePeriodSeconds: ptr.To(int64(0))})
				if err != nil && !apierrors.IsNotFound(err) {
					return err
				}
			}
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
		}
	}
}

// ListItems returns the items of every fire of jobName (all jobs when
// empty) the cluster holds, fire by fire, oldest fire first, then those of
// DAEMON jobs: one list each of Jobs, StatefulSets, pods and nodes,
// however many fires there are.
func (l *Launcher) ListItems(ctx context.Context, jobName string) ([]ItemStatus, error) {
	sel := labels.Set{LabelManaged: managedValue}
	if jobName != "" {
		sel[LabelJob] = labelValue(jobName)
	}
	opts := metav1.ListOptions{LabelSelector: sel.String()}
	jobs, err := l.client.BatchV1().Jobs(l.namespace).List(ctx, opts)
	if err != nil {
		return nil, fmt.Errorf("kubernetes: list fires: %w", err)
	}
	pods, err := l.client.CoreV1().Pods(l.namespace).List(ctx, opts)
	if err != nil {
		return nil, fmt.Errorf("kubernetes: list pods of fires: %w", err)
	}
	nodes, err := l.readyNodes(ctx)
	if err != nil {
		return nil, err
	}
	byFire := map[string][]corev1.Pod{}
	for _, p := range pods.Items {
		byFire[p.Labels[LabelFire]] = append(byFire[p.Labels[LabelFire]], p)
	}
	sort.Slice(jobs.Items, func(a, b int) bool {
		return jobs.Items[a].CreationTimestamp.Before(&jobs.Items[b].CreationTimestamp)
	})
	var out []ItemStatus
	for i := range jobs.Items {
		j := &jobs.Items[i]
		if jobName != "" && j.Annotations[AnnotationJob] != jobName {
			continue
		}
		out = append(out, fireStatus(j, byFire[j.Name], nodes).Items...)
	}
	sets, err := l.client.AppsV1().StatefulSets(l.namespace).List(ctx, opts)
	if err != nil {
		return nil, fmt.Errorf("kubernetes: list daemon jobs: %w", err)
	}
	listed := map[string]bool{}
	for i := range sets.Items {
		s := &sets.Items[i]
		listed[s.Name] = true
		if jobName == "" || s.Annotations[AnnotationJob] == jobName {
			items := daemonItems(s, byFire[s.Name], nodes)
			l.fillFires(ctx, s.Name, items, byFire[s.Name])
			out = append(out, items...)
		}
	}
	if jobName == "" {
		l.forgetFires(listed)
	}
	return out, nil
}

// Launched is one fire the cluster holds.
type Launched struct {
	Name, App, JobName, FireID string
	Active, Succeeded, Failed  int
	Finished                   bool
}

// List returns the fires the cluster holds, of one job (exact name) or of
// all when jobName is empty, oldest first.
func (l *Launcher) List(ctx context.Context, jobName string) ([]Launched, error) {
	sel := labels.Set{LabelManaged: managedValue}
	if jobName != "" {
		sel[LabelJob] = labelValue(jobName)
	}
	list, err := l.client.BatchV1().Jobs(l.namespace).List(ctx, metav1.ListOptions{LabelSelector: sel.String()})
	if err != nil {
		return nil, fmt.Errorf("kubernetes: list fires: %w", err)
	}
	var out []Launched
	sort.Slice(list.Items, func(a, b int) bool {
		return list.Items[a].CreationTimestamp.Before(&list.Items[b].CreationTimestamp)
	})
	for _, j := range list.Items {
		if jobName != "" && j.Annotations[AnnotationJob] != jobName {
			continue
		}
		fin := false
		for _, c := range j.Status.Conditions {
			if (c.Type == batchv1.JobComplete || c.Type == batchv1.JobFailed) && c.Status == corev1.ConditionTrue {
				fin = true
			}
		}
		out = append(out, Launched{
			Name: j.Name, App: j.Annotations[AnnotationApp], JobName: j.Annotations[AnnotationJob],
			FireID: j.Annotations[AnnotationFire], Active: int(j.Status.Active), Succeeded: int(j.Status.Succeeded),
			Failed: int(j.Status.Failed), Finished: fin,
		})
	}
	return out, nil
}
