package kubernetes

import (
	"context"
	"strconv"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
)

// A DAEMON item reports its fires as on the LOCAL launcher: the item
// appends a line BEGIN to the file named by EJOB_FIRE_LOG when a fire
// starts and COMPLETE when it ends. The file is on an emptyDir volume of
// the pod, shared with the fires container, which prints a line
// "fires N idle|busy" (N the COMPLETE lines, idle unless the last line is
// BEGIN) each time that changes; the launcher reads the last line of that
// container's log (pods/log, tailLines 1).
const (
	firesContainer = "fires"
	firesVolume    = "fires"
	firesMount     = "/ejob/fires"
	fireLogPath    = firesMount + "/fires.log"
)

// firesScript is the fires container's command.
const firesScript = `f=$EJOB_FIRE_LOG
: >>"$f"
last=
while :; do
	n=$(grep -c '^COMPLETE$' "$f") || :
	s=idle
	[ "$(tail -n 1 "$f")" = BEGIN ] && s=busy
	[ "$n $s" = "$last" ] || { echo "fires $n $s"; last="$n $s"; }
	sleep 1
done
`

// fireReport is what a DAEMON item's fires container last reported.
type fireReport struct {
	fires int
	idle  bool
}

// parseFireReport reads a fires container's line "fires N idle|busy".
func parseFireReport(line string) (fireReport, bool) {
	f := strings.Fields(line)
	if len(f) != 3 || f[0] != "fires" || (f[2] != "idle" && f[2] != "busy") {
		return fireReport{}, false
	}
	n, err := strconv.Atoi(f[1])
	if err != nil || n < 0 {
		return fireReport{}, false
	}
	return fireReport{fires: n, idle: f[2] == "idle"}, true
}

// fireReports keeps the last report read of each DAEMON pod, by its
// StatefulSet, so that a log that cannot be read for a moment does not
// report fewer fires.
type fireReports struct {
	mu   sync.Mutex
	last map[string]map[types.UID]fireReport
}

// fillFires sets Idle and Fires of the items of StatefulSet set from
// their pods' fires containers' logs, read for the running items. An item
// whose log is not read (not running, as on a node that is not Ready) or
// cannot be read keeps its pod's last report (none: busy, no fire).
func (l *Launcher) fillFires(ctx context.Context, set string, items []ItemStatus, pods []corev1.Pod) {
	byName := map[string]*corev1.Pod{}
	for i := range pods {
		byName[pods[i].Name] = &pods[i]
	}
	l.fires.mu.Lock()
	prev := l.fires.last[set]
	l.fires.mu.Unlock()
	cur := map[types.UID]fireReport{}
	for i := range items {
		p := byName[items[i].Pod]
		if p == nil {
			continue
		}
		rep, ok := fireReport{}, false
		if items[i].State == Running {
			rep, ok = l.readFireReport(ctx, p)
		}
		if !ok {
			rep = prev[p.UID]
		}
		cur[p.UID] = rep
		items[i].Idle, items[i].Fires = rep.idle, rep.fires
	}
	l.fires.mu.Lock()
	if l.fires.last == nil {
		l.fires.last = map[string]map[types.UID]fireReport{}
	}
	l.fires.last[set] = cur
	l.fires.mu.Unlock()
}

// forgetFires drops the reports of the StatefulSets not in sets.
func (l *Launcher) forgetFires(sets map[string]bool) {
	l.fires.mu.Lock()
	defer l.fires.mu.Unlock()
	for name := range l.fires.last {
		if !sets[name] {
			delete(l.fires.last, name)
		}
	}
}

// readFireReport reads the last line of p's fires container's log.
func (l *Launcher) readFireReport(ctx context.Context, p *corev1.Pod) (fireReport, bool) {
	b, err := l.client.CoreV1().Pods(p.Namespace).GetLogs(p.Name, &corev1.PodLogOptions{
		Container: firesContainer, TailLines: ptr.To(int64(1)),
	}).DoRaw(ctx)
	if err != nil {
		l.log.Debug("daemon item's fires not read", "k8s_pod", p.Name, "error", err)
		return fireReport{}, false
	}
	return parseFireReport(strings.TrimSpace(string(b)))
}
