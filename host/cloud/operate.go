package cloud

import (
	"context"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/ejob-io/ejob/spi"
)

// ReconcileGuard is how long after a reconciliation asked for through the
// REST API the next one is refused (upstream's 10 seconds, shared by
// explicit and implicit).
const ReconcileGuard = 10 * time.Second

// reconcileGuard remembers this instance's last manual reconciliation.
type reconcileGuard struct {
	mu   sync.Mutex
	last time.Time
}

// take reports whether a reconciliation may run now, and records it.
func (g *reconcileGuard) take(now time.Time) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if !g.last.IsZero() && now.Sub(g.last) < ReconcileGuard {
		return false
	}
	g.last = now
	return true
}

// ReconcileReport is the answer of POST /api/operate/reconcile/{kind}:
// what the launcher holds compared with the running items in ZooKeeper.
// The leader acts on both lists at its next pass (at once when this
// instance leads): a missing item's fire is launched again (launching is
// idempotent per fire), an unknown fire is stopped.
type ReconcileReport struct {
	// Checked counts the running items compared (explicit) or the
	// launcher's items compared (implicit).
	Checked int `json:"checked"`
	// Missing are the task ids of running items the launcher does not
	// hold.
	Missing []string `json:"missing"`
	// Unknown are the fires ({jobName}/{fireId}) the launcher holds, not
	// ended, that no running item names (implicit only).
	Unknown []string `json:"unknown"`
}

// reconcile is POST /api/operate/reconcile/explicit and /implicit.
func (a api) reconcile(w http.ResponseWriter, r *http.Request, implicit bool) {
	op := map[bool]string{false: "explicitReconcile", true: "implicitReconcile"}[implicit]
	if !a.s.guard.take(time.Now()) {
		a.answer(w, r, op, "", nil, fmt.Errorf("%w: Repeat %s (one reconciliation per %s)", ErrTooSoon, op, ReconcileGuard))
		return
	}
	ctx, cancel := a.ctx(r)
	defer cancel()
	rep, err := a.s.reconcile(ctx, implicit)
	a.answer(w, r, op, "", rep, err)
}

// reconcile compares the launcher's items with the running items.
func (s *Scheduler) reconcile(ctx context.Context, implicit bool) (ReconcileReport, error) {
	rep := ReconcileReport{Missing: []string{}, Unknown: []string{}}
	list, err := s.launcher.List(ctx, spi.LaunchListRequest{Config: s.lcfg})
	if err != nil {
		return rep, fmt.Errorf("launcher list: %w", err)
	}
	running, err := s.st.Running(ctx)
	if err != nil {
		return rep, err
	}
	held := byFire(list.Items)
	named := map[fireKey]bool{}
	for _, job := range slices.Sorted(maps.Keys(running)) {
		for _, item := range slices.Sorted(maps.Keys(running[job])) {
			tid := running[job][item]
			k := fireKey{job, tid.Fire}
			named[k] = true
			rep.Checked++
			if _, ok := held[k][item]; !ok {
				rep.Missing = append(rep.Missing, tid.String())
			}
		}
	}
	if implicit {
		rep.Checked = len(list.Items)
		unknown := map[string]bool{}
		for _, it := range list.Items {
			if k := (fireKey{it.JobName, it.FireID}); !named[k] && !it.State.Final() {
				unknown[k.job+"/"+k.fire] = true
			}
		}
		rep.Unknown = slices.Sorted(maps.Keys(unknown))
	}
	s.nudge()
	return rep, nil
}

// Sandbox is one entry of GET /api/operate/sandbox: where a running item
// of the app runs. Hostname is the node; Path is the launcher's name for
// what runs the item (Kubernetes: the pod's name in the launcher's
// namespace, for kubectl logs or exec); JobName, Item, TaskID and State
// name the item.
type Sandbox struct {
	Hostname string `json:"hostname"`
	Path     string `json:"path"`
	JobName  string `json:"jobName"`
	Item     int    `json:"item"`
	TaskID   string `json:"taskId"`
	State    string `json:"state"`
}

// sandbox is GET /api/operate/sandbox?appName=: the running items of the
// app's jobs, as the launcher reports them.
func (a api) sandbox(w http.ResponseWriter, r *http.Request) {
	name := r.URL.Query().Get("appName")
	if name == "" {
		a.answer(w, r, "", "", nil, fmt.Errorf("%w: Lack param 'appName'", ErrInvalid))
		return
	}
	ctx, cancel := a.ctx(r)
	defer cancel()
	out, err := a.s.sandboxes(ctx, name)
	a.answer(w, r, "", name, out, err)
}

func (s *Scheduler) sandboxes(ctx context.Context, app string) ([]Sandbox, error) {
	if _, ok, err := s.st.App(ctx, app); err != nil || !ok {
		if err == nil {
			err = fmt.Errorf("%w: no app '%s'", ErrNotFound, app)
		}
		return nil, err
	}
	jobs, err := s.st.Jobs(ctx)
	if err != nil {
		return nil, err
	}
	running, err := s.st.Running(ctx)
	if err != nil {
		return nil, err
	}
	list, err := s.launcher.List(ctx, spi.LaunchListRequest{Config: s.lcfg})
	if err != nil {
		return nil, fmt.Errorf("launcher list: %w", err)
	}
	byItem := byFire(list.Items)
	out := []Sandbox{}
	for _, j := range jobs {
		if j.AppName != app {
			continue
		}
		for _, item := range slices.Sorted(maps.Keys(running[j.JobName])) {
			tid := running[j.JobName][item]
			st, ok := byItem[fireKey{j.JobName, tid.Fire}][item]
			if !ok || st.State.Final() {
				continue
			}
			out = append(out, Sandbox{Hostname: st.Node, Path: st.Name, JobName: j.JobName, Item: item, TaskID: tid.String(), State: string(st.State)})
		}
	}
	return out, nil
}

// leaderName is the leading instance's id, or a note that none leads.
func (s *Scheduler) leaderName(ctx context.Context) string {
	data, ok, err := s.st.get(ctx, pathLeader)
	if err != nil || !ok || len(data) == 0 {
		return "the leader (none leads now)"
	}
	return "the leader " + string(data)
}

// fireItem names one item of one fire.
type fireItem struct {
	job, fire string
	item      int
}

// itemStatuses is the launcher's view of the items: the leader's latest
// pass, or on a standby the launcher's list.
func (s *Scheduler) itemStatuses(ctx context.Context) (map[fireItem]spi.ItemStatus, error) {
	if s.Leading() {
		s.mu.Lock()
		defer s.mu.Unlock()
		return s.reasons, nil
	}
	list, err := s.launcher.List(ctx, spi.LaunchListRequest{Config: s.lcfg})
	if err != nil {
		return nil, fmt.Errorf("launcher list: %w", err)
	}
	out := map[fireItem]spi.ItemStatus{}
	for _, it := range list.Items {
		out[fireItem{it.JobName, it.FireID, it.Item}] = it
	}
	return out, nil
}
