package cloud

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/ejob-io/ejob/core/reg"
)

// The ZooKeeper layout (upstream ElasticJob-Cloud's, under the namespace).
const (
	pathApps        = "/config/app"
	pathJobs        = "/config/job"
	pathReady       = "/state/ready"
	pathRunning     = "/state/running"
	pathFailover    = "/state/failover"
	pathDisableApp  = "/state/disable/app"
	pathDisableJob  = "/state/disable/job"
	pathElection    = "/ha/election/latch"
	pathLeader      = "/ha/election/instance"
	taskIDSeparator = "@-@"
	unassignedSlave = "unassigned-slave"
)

// store reads and writes the cloud state in the registry. Every method
// is safe for concurrent use.
type store struct {
	c reg.Client
}

func children(ctx context.Context, c reg.Client, path string) ([]string, error) {
	names, err := c.Children(ctx, path)
	if errors.Is(err, reg.ErrNoNode) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("children of %s: %w", path, err)
	}
	sort.Strings(names)
	return names, nil
}

func (s store) get(ctx context.Context, path string) ([]byte, bool, error) {
	data, _, err := s.c.Get(ctx, path)
	if errors.Is(err, reg.ErrNoNode) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("read %s: %w", path, err)
	}
	return data, true, nil
}

func (s store) exists(ctx context.Context, path string) (bool, error) {
	_, ok, err := s.c.Exists(ctx, path)
	if err != nil {
		return false, fmt.Errorf("read %s: %w", path, err)
	}
	return ok, nil
}

func (s store) create(ctx context.Context, path string, data []byte) error {
	_, err := s.c.Create(ctx, path, data, reg.Persistent, reg.WithParents())
	if err != nil && !errors.Is(err, reg.ErrNodeExists) {
		return fmt.Errorf("create %s: %w", path, err)
	}
	return err
}

func (s store) put(ctx context.Context, path string, data []byte) error {
	if _, err := reg.Persist(ctx, s.c, path, data); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}

func (s store) remove(ctx context.Context, path string) error {
	if err := reg.DeleteRecursive(ctx, s.c, path); err != nil && !errors.Is(err, reg.ErrNoNode) {
		return fmt.Errorf("delete %s: %w", path, err)
	}
	return nil
}

// App reads an app (ok false when absent).
func (s store) App(ctx context.Context, name string) (App, bool, error) {
	data, ok, err := s.get(ctx, pathApps+"/"+name)
	if !ok || err != nil {
		return App{}, false, err
	}
	a := App{}
	if err := unmarshalYAML(data, &a); err != nil {
		return App{}, false, fmt.Errorf("app %s: stored YAML: %w", name, err)
	}
	return a, true, nil
}

// Apps reads every app, by name.
func (s store) Apps(ctx context.Context) ([]App, error) {
	names, err := children(ctx, s.c, pathApps)
	if err != nil {
		return nil, err
	}
	out := []App{}
	for _, n := range names {
		a, ok, err := s.App(ctx, n)
		if err != nil {
			return nil, err
		}
		if ok {
			out = append(out, a)
		}
	}
	return out, nil
}

// Job reads a job (ok false when absent).
func (s store) Job(ctx context.Context, name string) (Job, bool, error) {
	data, ok, err := s.get(ctx, pathJobs+"/"+name)
	if !ok || err != nil {
		return Job{}, false, err
	}
	j := Job{}
	if err := unmarshalYAML(data, &j); err != nil {
		return Job{}, false, fmt.Errorf("job %s: stored YAML: %w", name, err)
	}
	return j, true, nil
}

// Jobs reads every job, by name.
func (s store) Jobs(ctx context.Context) ([]Job, error) {
	names, err := children(ctx, s.c, pathJobs)
	if err != nil {
		return nil, err
	}
	out := []Job{}
	for _, n := range names {
		j, ok, err := s.Job(ctx, n)
		if err != nil {
			return nil, err
		}
		if ok {
			out = append(out, j)
		}
	}
	return out, nil
}

// AppDisabled and JobDisabled report the disable nodes.
func (s store) AppDisabled(ctx context.Context, app string) (bool, error) {
	return s.exists(ctx, pathDisableApp+"/"+app)
}

func (s store) JobDisabled(ctx context.Context, job string) (bool, error) {
	return s.exists(ctx, pathDisableJob+"/"+job)
}

// Ready reads the pending rounds of every job.
func (s store) Ready(ctx context.Context) (map[string]int, error) {
	names, err := children(ctx, s.c, pathReady)
	if err != nil {
		return nil, err
	}
	out := map[string]int{}
	for _, n := range names {
		data, ok, err := s.get(ctx, pathReady+"/"+n)
		if err != nil {
			return nil, err
		}
		if !ok {
			continue
		}
		times, err := strconv.Atoi(strings.TrimSpace(string(data)))
		if err != nil || times < 1 {
			times = 1
		}
		out[n] = times
	}
	return out, nil
}

// AddRound queues one round of job: +1 when misfire, else at most one
// pending (upstream's ReadyService.addTransient). It refuses when
// queueSize jobs are queued and job is not among them.
func (s store) AddRound(ctx context.Context, job string, misfire bool, queueSize int) error {
	path := pathReady + "/" + job
	for {
		data, st, err := s.c.Get(ctx, path)
		switch {
		case errors.Is(err, reg.ErrNoNode):
			if err := s.room(ctx, pathReady, job, queueSize); err != nil {
				return err
			}
			err = s.create(ctx, path, []byte("1"))
			if errors.Is(err, reg.ErrNodeExists) {
				continue
			}
			return err
		case err != nil:
			return fmt.Errorf("read %s: %w", path, err)
		}
		if !misfire {
			return nil
		}
		n, _ := strconv.Atoi(strings.TrimSpace(string(data)))
		_, err = s.c.Set(ctx, path, []byte(strconv.Itoa(max(n, 1)+1)), st.Version)
		if errors.Is(err, reg.ErrBadVersion) {
			continue
		}
		if err != nil {
			return fmt.Errorf("write %s: %w", path, err)
		}
		return nil
	}
}

// readyOp is the op that takes one round of job: delete at 1, else
// decrement (with version check).
func (s store) readyOp(ctx context.Context, job string) ([]reg.Op, error) {
	path := pathReady + "/" + job
	data, st, err := s.c.Get(ctx, path)
	if errors.Is(err, reg.ErrNoNode) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	n, _ := strconv.Atoi(strings.TrimSpace(string(data)))
	if n <= 1 {
		return []reg.Op{reg.DeleteOp(path, st.Version)}, nil
	}
	return []reg.Op{reg.SetOp(path, []byte(strconv.Itoa(n-1)), st.Version)}, nil
}

// itemNode is {job}@-@{item}, the node of an item under running and
// failover.
func itemNode(job string, item int) string { return job + taskIDSeparator + strconv.Itoa(item) }

// TaskID is upstream's task id: job@-@item@-@type@-@slave@-@fire.
type TaskID struct {
	Job   string
	Item  int
	Type  string // READY or FAILOVER
	Slave string
	Fire  string
}

func (t TaskID) String() string {
	return strings.Join([]string{t.Job, strconv.Itoa(t.Item), t.Type, t.Slave, t.Fire}, taskIDSeparator)
}

// ParseTaskID parses a task id.
func ParseTaskID(s string) (TaskID, error) {
	f := strings.Split(s, taskIDSeparator)
	if len(f) != 5 {
		return TaskID{}, fmt.Errorf("task id %q: want job@-@item@-@type@-@slave@-@id", s)
	}
	item, err := strconv.Atoi(f[1])
	if err != nil {
		return TaskID{}, fmt.Errorf("task id %q: item %q is not a number", s, f[1])
	}
	return TaskID{Job: f[0], Item: item, Type: f[2], Slave: f[3], Fire: f[4]}, nil
}

// itemIDs reads the item nodes of job under base: item -> task id.
func (s store) itemIDs(ctx context.Context, base, job string) (map[int]TaskID, error) {
	names, err := children(ctx, s.c, base+"/"+job)
	if err != nil {
		return nil, err
	}
	out := map[int]TaskID{}
	for _, n := range names {
		_, itemText, ok := strings.Cut(n, job+taskIDSeparator)
		item, err := strconv.Atoi(itemText)
		if !ok || err != nil {
			continue
		}
		data, ok, err := s.get(ctx, base+"/"+job+"/"+n)
		if err != nil {
			return nil, err
		}
		if !ok {
			continue
		}
		id, err := ParseTaskID(string(data))
		if err != nil {
			continue
		}
		out[item] = id
	}
	return out, nil
}

// Running reads every running item: job -> item -> task id.
func (s store) Running(ctx context.Context) (map[string]map[int]TaskID, error) {
	return s.byJob(ctx, pathRunning)
}

// Failover reads every item queued for failover: job -> item -> the
// original task id.
func (s store) Failover(ctx context.Context) (map[string]map[int]TaskID, error) {
	return s.byJob(ctx, pathFailover)
}

func (s store) byJob(ctx context.Context, base string) (map[string]map[int]TaskID, error) {
	jobs, err := children(ctx, s.c, base)
	if err != nil {
		return nil, err
	}
	out := map[string]map[int]TaskID{}
	for _, j := range jobs {
		ids, err := s.itemIDs(ctx, base, j)
		if err != nil {
			return nil, err
		}
		if len(ids) > 0 {
			out[j] = ids
		}
	}
	return out, nil
}

// errNodeExists is the registry's "node exists", for callers of create.
var errNodeExists = reg.ErrNodeExists

// room refuses adding name under base when base holds queueSize nodes
// and name is not among them (ejob.cloud.jobStateQueueSize).
func (s store) room(ctx context.Context, base, name string, queueSize int) error {
	names, err := children(ctx, s.c, base)
	if err != nil {
		return err
	}
	if len(names) >= queueSize && !slices.Contains(names, name) {
		return fmt.Errorf("%w: %s holds %d jobs, the bound ejob.cloud.jobStateQueueSize", ErrConflict, base, len(names))
	}
	return nil
}

// setFlag creates (on) or deletes (off) a disable node holding its name;
// the disable nodes are bounded by queueSize.
func (s store) setFlag(ctx context.Context, path string, on bool, queueSize int) error {
	if !on {
		return s.remove(ctx, path)
	}
	name := path[strings.LastIndex(path, "/")+1:]
	if err := s.room(ctx, path[:strings.LastIndex(path, "/")], name, queueSize); err != nil {
		return err
	}
	if err := s.create(ctx, path, []byte(name)); err != nil && !errors.Is(err, reg.ErrNodeExists) {
		return err
	}
	return nil
}

// jobOff is upstream's GET /api/job/{jobName}/disable: true when the job
// is missing, or it or its app is disabled.
func (s store) jobOff(ctx context.Context, name string) (bool, error) {
	j, ok, err := s.Job(ctx, name)
	if err != nil || !ok {
		return true, err
	}
	if d, err := s.JobDisabled(ctx, name); err != nil || d {
		return true, err
	}
	return s.AppDisabled(ctx, j.AppName)
}

// checkJob checks a job body against the state: on register, the job is
// not disabled or there already; on update, it is there; its app exists.
func (s store) checkJob(ctx context.Context, j Job, create bool) error {
	there, err := s.exists(ctx, pathJobs+"/"+j.JobName)
	if err != nil {
		return err
	}
	if create {
		if d, err := s.JobDisabled(ctx, j.JobName); err != nil || d {
			if d {
				return fmt.Errorf("%w: Job '%s' has been disable.", ErrConflict, j.JobName)
			}
			return err
		}
		if there {
			return fmt.Errorf("%w: Job '%s' already existed.", ErrConflict, j.JobName)
		}
	} else if !there {
		return fmt.Errorf("%w: Cannot found job '%s', please register first.", ErrNotFound, j.JobName)
	}
	if _, ok, err := s.App(ctx, j.AppName); err != nil || !ok {
		if err == nil {
			err = fmt.Errorf("%w: Register app '%s' firstly.", ErrNotFound, j.AppName)
		}
		return err
	}
	return nil
}

// deregister removes a job's configuration, disable node and ready
// rounds; the leader stops what runs of it.
func (s store) deregister(ctx context.Context, job string) error {
	for _, p := range []string{pathJobs + "/" + job, pathDisableJob + "/" + job, pathReady + "/" + job} {
		if err := s.remove(ctx, p); err != nil {
			return err
		}
	}
	return nil
}
