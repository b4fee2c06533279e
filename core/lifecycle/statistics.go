package lifecycle

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"golang.org/x/sync/errgroup"

	"github.com/ejob-io/ejob/core/config"
	"github.com/ejob-io/ejob/core/instance"
	"github.com/ejob-io/ejob/core/node"
	"github.com/ejob-io/ejob/core/reg"
)

// Reader is what the read-only calls need: a reg.Client, or a view of one
// with the same semantics (a cache of the namespace that a long-running
// server keeps, for instance).
type Reader interface {
	reg.Reader
	// Namespace names the namespace in messages.
	Namespace() string
}

// Parallelism bounds how many jobs the namespace-wide calls (Jobs,
// JobsOfServer, Servers, ...) read at once. Their requests are pipelined
// on the registry connection, so a namespace of 1,000 jobs costs a few
// round trips per job, not a few per job in sequence.
const Parallelism = 32

// JobsTotalCount is upstream's getJobsTotalCount: the number of top-level
// nodes of the namespace, jobs or not.
func JobsTotalCount(ctx context.Context, c Reader) (int, error) {
	names, err := children(ctx, c, "/")
	if err != nil {
		return 0, fmt.Errorf("count jobs: %w", err)
	}
	return len(names), nil
}

// Jobs is upstream's getAllJobsBriefInfo: the brief of every top-level node
// with a config node, sorted by job name.
func Jobs(ctx context.Context, c Reader) ([]JobBrief, error) {
	names, err := children(ctx, c, "/")
	if err != nil {
		return nil, fmt.Errorf("list jobs: %w", err)
	}
	briefs := make([]*JobBrief, len(names))
	err = eachJob(ctx, names, func(ctx context.Context, i int, name string) error {
		b, err := Job(ctx, c, name)
		if errors.Is(err, ErrJobNotFound) {
			return nil
		}
		if err != nil {
			return err
		}
		briefs[i] = &b
		return nil
	})
	if err != nil {
		return nil, err
	}
	return compact(briefs), nil
}

// Job is upstream's getJobBriefInfo: one job summarised, or ErrJobNotFound
// when it has no config node. Status follows upstream: CRASHED without
// instances; DISABLED when every servers/{ip} value is exactly DISABLED
// (vacuously true without server nodes); SHARDING_FLAG when no item has
// an owner, or an owner is not a live instance; else OK.
func Job(ctx context.Context, c Reader, jobName string) (JobBrief, error) {
	j := node.New(jobName)
	cfg, _, err := readConfig(ctx, c, j)
	if err != nil {
		return JobBrief{}, err
	}
	b := JobBrief{JobName: jobName, Description: cfg.Description, Cron: cfg.Cron, ShardingTotalCount: cfg.ShardingTotalCount,
		TimeZone: cfg.TimeZone}
	if b.Instances, err = children(ctx, c, j.Instances()); err != nil {
		return JobBrief{}, fmt.Errorf("job %q: list instances: %w", jobName, err)
	}
	b.InstanceCount = len(b.Instances)
	if b.Status, err = status(ctx, c, j, b.Instances); err != nil {
		return JobBrief{}, fmt.Errorf("job %q: %w", jobName, err)
	}
	return b, nil
}

// JobsOfServer is upstream's getJobsBriefInfo(ip): for each job with a
// servers/{ip} node, a brief with only JobName, Status (DISABLED when that
// node's value is DISABLED in any case, else OK), InstanceCount and
// Instances (the job's instances whose id starts with ip@-@). Sorted by
// job name; ErrServerNotFound when no job has the server.
func JobsOfServer(ctx context.Context, c Reader, ip string) ([]JobBrief, error) {
	names, err := children(ctx, c, "/")
	if err != nil {
		return nil, fmt.Errorf("list jobs: %w", err)
	}
	briefs := make([]*JobBrief, len(names))
	err = eachJob(ctx, names, func(ctx context.Context, i int, name string) error {
		j := node.New(name)
		v, ok, err := get(ctx, c, j.Server(ip))
		if err != nil || !ok {
			return err
		}
		b := &JobBrief{JobName: name, Status: StatusOK}
		if strings.EqualFold(string(v), node.ServerDisabled) {
			b.Status = StatusDisabled
		}
		ids, err := children(ctx, c, j.Instances())
		if err != nil {
			return fmt.Errorf("job %q: list instances: %w", name, err)
		}
		for _, id := range ids {
			if serverOf(id) == ip {
				b.Instances = append(b.Instances, id)
			}
		}
		b.InstanceCount = len(b.Instances)
		briefs[i] = b
		return nil
	})
	if err != nil {
		return nil, err
	}
	out := compact(briefs)
	if len(out) == 0 {
		return nil, fmt.Errorf("%w: no job has server %q in namespace %q", ErrServerNotFound, ip, c.Namespace())
	}
	return out, nil
}

func status(ctx context.Context, c Reader, j node.Job, instances []string) (Status, error) {
	if len(instances) == 0 {
		return StatusCrashed, nil
	}
	servers, err := children(ctx, c, j.Servers())
	if err != nil {
		return "", err
	}
	allDisabled := true
	for _, ip := range servers {
		v, _, err := get(ctx, c, j.Server(ip))
		if err != nil {
			return "", err
		}
		if string(v) != node.ServerDisabled {
			allDisabled = false
			break
		}
	}
	if allDisabled {
		return StatusDisabled, nil
	}
	items, err := children(ctx, c, j.Sharding())
	if err != nil {
		return "", err
	}
	owners := map[string]bool{}
	for _, it := range items {
		v, _, err := get(ctx, c, j.Full(node.ShardingNode+"/"+it+"/"+node.ItemInstance))
		if err != nil {
			return "", err
		}
		if len(v) > 0 {
			owners[string(v)] = true
		}
	}
	if len(owners) == 0 {
		return StatusShardingFlag, nil
	}
	for id := range owners {
		if _, live := slices.BinarySearch(instances, id); !live {
			return StatusShardingFlag, nil
		}
	}
	return StatusOK, nil
}

// readConfig reads and parses a job's config node: ErrJobNotFound when it
// is absent.
func readConfig(ctx context.Context, c Reader, j node.Job) (*config.JobConfiguration, reg.Stat, error) {
	data, st, err := c.Get(ctx, j.Config())
	if errors.Is(err, reg.ErrNoNode) {
		return nil, reg.Stat{}, fmt.Errorf("%w: %q in namespace %q", ErrJobNotFound, j.Name(), c.Namespace())
	}
	if err != nil {
		return nil, reg.Stat{}, fmt.Errorf("job %q: read config: %w", j.Name(), err)
	}
	cfg, err := config.Unmarshal(data)
	if err != nil {
		return nil, reg.Stat{}, fmt.Errorf("job %q: %w", j.Name(), err)
	}
	return cfg, st, nil
}

// eachJob runs fn for every name, at most Parallelism at once, and
// returns the first error.
func eachJob(ctx context.Context, names []string, fn func(ctx context.Context, i int, name string) error) error {
	return fanOut(ctx, len(names), func(ctx context.Context, i int) error { return fn(ctx, i, names[i]) })
}

// fanOut runs fn for 0 <= i < n, at most Parallelism at once, and returns
// the first error (the others' ctx is then cancelled).
func fanOut(ctx context.Context, n int, fn func(ctx context.Context, i int) error) error {
	g, ctx := errgroup.WithContext(ctx)
	g.SetLimit(Parallelism)
	for i := range n {
		g.Go(func() error { return fn(ctx, i) })
	}
	return g.Wait()
}

// compact drops the nil entries and sorts the rest by job name (Java's
// String order, which is byte order for the names ZooKeeper accepts).
func compact(briefs []*JobBrief) []JobBrief {
	out := make([]JobBrief, 0, len(briefs))
	for _, b := range briefs {
		if b != nil {
			out = append(out, *b)
		}
	}
	slices.SortFunc(out, func(a, b JobBrief) int { return strings.Compare(a.JobName, b.JobName) })
	return out
}

// children lists a node's children sorted; an absent node has none.
func children(ctx context.Context, c Reader, path string) ([]string, error) {
	names, err := c.Children(ctx, path)
	if errors.Is(err, reg.ErrNoNode) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	slices.Sort(names)
	return names, nil
}

// get reads a node; an absent node is (nil, false, nil).
func get(ctx context.Context, c Reader, path string) ([]byte, bool, error) {
	v, _, err := c.Get(ctx, path)
	if errors.Is(err, reg.ErrNoNode) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	return v, true, nil
}

// exists reports whether a node exists.
func exists(ctx context.Context, c Reader, path string) (bool, error) {
	_, ok, err := c.Exists(ctx, path)
	return ok, err
}

// serverOf is the server IP of an instance id: the part before "@-@", as
// upstream's split("@-@")[0] (the whole id when it has no separator).
func serverOf(instanceID string) string {
	ip, _ := instance.ServerIP(instanceID)
	return ip
}
