package kubernetes

import (
	"context"
	"fmt"
	"strconv"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
)

// daemonFire names a DAEMON job's StatefulSet (ObjectName(job, daemonFire)):
// a DAEMON job has one, for as long as it runs, whatever fire launched it.
const daemonFire = "daemon"

// LaunchDaemon runs a DAEMON job: a StatefulSet of ShardingTotalCount
// replicas (podManagementPolicy Parallel), ordinal i running item i until
// stopped, restarted when it exits. Called again for the same job it
// updates the StatefulSet in place: a changed ShardingTotalCount reshards
// (every item restarts with its new context, the surplus ordinals are
// removed). f.Items is ignored; f.FireID (the launching fire) is kept in
// the fire-id annotation and the task ids. It returns the StatefulSet's
// name.
func (l *Launcher) LaunchDaemon(ctx context.Context, f Fire) (string, error) {
	f.Items = nil
	if err := f.check(); err != nil {
		return "", err
	}
	items, _ := f.items()
	name := ObjectName(f.JobName, daemonFire)
	tmpl := l.podTemplate(f, items, name, corev1.RestartPolicyAlways)
	n := int32(len(items))
	want := &appsv1.StatefulSet{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: tmpl.Labels, Annotations: tmpl.Annotations},
		Spec: appsv1.StatefulSetSpec{
			Replicas:            &n,
			Selector:            &metav1.LabelSelector{MatchLabels: map[string]string{LabelFire: name}},
			PodManagementPolicy: appsv1.ParallelPodManagement,
			Template:            tmpl,
		},
	}
	sets := l.client.AppsV1().StatefulSets(l.namespace)
	err := retry.RetryOnConflict(retry.DefaultBackoff, func() error {
		cur, err := sets.Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			_, err = sets.Create(ctx, want, metav1.CreateOptions{})
			return err
		}
		if err != nil {
			return err
		}
		cur.Labels, cur.Annotations = want.Labels, want.Annotations
		cur.Spec.Replicas, cur.Spec.Template = want.Spec.Replicas, want.Spec.Template
		_, err = sets.Update(ctx, cur, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		return "", fmt.Errorf("kubernetes: launch daemon job %q: %w", f.JobName, err)
	}
	l.log.Info("daemon job launched", "job", f.JobName, "k8s_statefulset", name, "items", n)
	return name, nil
}

// DaemonStatus reads the state of a DAEMON job's items: ready, running or
// lost (a daemon item never ends by itself). Failures counts the item's
// container restarts. It wraps ErrNotFound when the job has no StatefulSet.
func (l *Launcher) DaemonStatus(ctx context.Context, jobName string) (FireStatus, error) {
	name := ObjectName(jobName, daemonFire)
	set, err := l.client.AppsV1().StatefulSets(l.namespace).Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return FireStatus{}, fmt.Errorf("%w: daemon job %q (%s)", ErrNotFound, jobName, name)
	}
	if err != nil {
		return FireStatus{}, fmt.Errorf("kubernetes: daemon job %q: %w", jobName, err)
	}
	pods, err := l.client.CoreV1().Pods(l.namespace).List(ctx, metav1.ListOptions{LabelSelector: labels.Set{LabelFire: name}.String()})
	if err != nil {
		return FireStatus{}, fmt.Errorf("kubernetes: pods of daemon job %q: %w", jobName, err)
	}
	nodes, err := l.readyNodes(ctx)
	if err != nil {
		return FireStatus{}, err
	}
	st := FireStatus{Name: name}
	st.Items = daemonItems(set, pods.Items, nodes)
	l.fillFires(ctx, name, st.Items, pods.Items)
	return st, nil
}

// daemonItems are the items of a DAEMON job's StatefulSet.
func daemonItems(set *appsv1.StatefulSet, pods []corev1.Pod, nodes map[string]bool) []ItemStatus {
	var out []ItemStatus
	byOrdinal := map[int]*corev1.Pod{}
	for i := range pods {
		if o, err := strconv.Atoi(pods[i].Labels[podIndexLabel]); err == nil {
			byOrdinal[o] = &pods[i]
		}
	}
	for o := 0; o < int(ptr.Deref(set.Spec.Replicas, 0)); o++ {
		it := ItemStatus{Item: o, State: Ready, Reason: "no pod yet",
			JobName: set.Annotations[AnnotationJob], FireID: set.Annotations[AnnotationFire]}
		if p := byOrdinal[o]; p != nil {
			it.Pod, it.Node = p.Name, p.Spec.NodeName
			it.State, it.Reason = podState(p, nodes)
			it.Started, it.Finished = processTimes(p)
			for _, c := range p.Status.ContainerStatuses {
				if c.Name == "item" {
					it.Failures = int(c.RestartCount)
				}
			}
		}
		out = append(out, it)
	}
	return out
}
