package lifecycle

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"strconv"
	"strings"

	"golang.org/x/sync/errgroup"

	"github.com/ejob-io/ejob/core/config"
	"github.com/ejob-io/ejob/core/instance"
	"github.com/ejob-io/ejob/core/node"
	"github.com/ejob-io/ejob/core/reg"
)

// Reader is what the read-only calls need: a reg.Client, or a view of one
// with the same semantics. The statistics read through reg.ReadMany, so a
// Reader that is also a reg.MultiReader gets batched reads.
type Reader interface {
	reg.Reader
	// Namespace names the namespace in messages.
	Namespace() string
}

// Parallelism bounds how many jobs the namespace-wide calls that read job
// by job (ShardingOf's items, operations over all jobs) handle at once.
// Their requests are pipelined on the registry connection, so a namespace
// of 1,000 jobs costs a few round trips per job, not a few per job in
// sequence. The statistics (Jobs, JobsOfServer, Servers) read in rounds of
// reg.ReadMany instead: a few multiRead requests for the whole namespace.
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
// with a config node, sorted by job name. It reads in two rounds of
// reg.ReadMany over all jobs (configs and child lists, then the server and
// item nodes the statuses need): on ZooKeeper a few multiRead requests
// instead of 8 reads per job.
func Jobs(ctx context.Context, c Reader) ([]JobBrief, error) {
	names, err := children(ctx, c, "/")
	if err != nil {
		return nil, fmt.Errorf("list jobs: %w", err)
	}
	briefs, err := jobBriefs(ctx, c, names)
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
	briefs, err := jobBriefs(ctx, c, []string{jobName})
	if err != nil {
		return JobBrief{}, err
	}
	if briefs[0] == nil {
		return JobBrief{}, fmt.Errorf("%w: %q in namespace %q", ErrJobNotFound, jobName, c.Namespace())
	}
	return *briefs[0], nil
}

// jobReads is what one job's brief is computed from.
type jobReads struct {
	servers, items reg.ReadResult   // children of servers and sharding
	serverVals     []reg.ReadResult // servers/{ip}, in sorted ip order
	owners         []reg.ReadResult // sharding/{item}/instance, in sorted item order
	running        []reg.ReadResult // sharding/{item}/running, in sorted item order
	necessary      reg.ReadResult   // leader/sharding/necessary
}

// jobBriefs reads the briefs of names (nil for a name without a config
// node) in two rounds of reads.
func jobBriefs(ctx context.Context, c Reader, names []string) ([]*JobBrief, error) {
	ops := make([]reg.ReadOp, 0, 4*len(names))
	for _, name := range names {
		j := node.New(name)
		ops = append(ops, reg.GetOp(j.Config()), reg.ChildrenOp(j.Instances()), reg.ChildrenOp(j.Servers()), reg.ChildrenOp(j.Sharding()))
	}
	res, err := reg.ReadMany(ctx, c, ops...)
	if err != nil {
		return nil, fmt.Errorf("read jobs: %w", err)
	}

	// Parsing the configs (YAML) costs more than reading them: on every
	// core.
	briefs := make([]*JobBrief, len(names))
	g := errgroup.Group{}
	g.SetLimit(runtime.GOMAXPROCS(0))
	const parseChunk = 64
	for lo := 0; lo < len(names); lo += parseChunk {
		g.Go(func() error {
			for i := lo; i < min(lo+parseChunk, len(names)); i++ {
				b, err := brief(names[i], res[4*i], res[4*i+1])
				if err != nil {
					return err
				}
				briefs[i] = b
			}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	reads := make([]jobReads, len(names))
	var more []reg.ReadOp
	for i, name := range names {
		j := node.New(name)
		r := res[4*i : 4*i+4]
		b := briefs[i]
		if b == nil || b.InstanceCount == 0 || b.Status == StatusConfigError {
			continue // CRASHED or CONFIG_ERROR: nothing more to read
		}
		reads[i] = jobReads{servers: r[2], items: r[3]}
		// The second batch reads every server and item node; status
		// consults them (and their errors) in the order reading them one
		// by one would, so the outcome is the same.
		ips, _ := childList(r[2])
		for _, ip := range ips {
			more = append(more, reg.GetOp(j.Server(ip)))
		}
		items, _ := childList(r[3])
		for _, it := range items {
			more = append(more, reg.GetOp(j.Full(node.ShardingNode+"/"+it+"/"+node.ItemInstance)))
		}
		// What State needs besides: the running nodes and the flag.
		for _, it := range items {
			more = append(more, reg.GetOp(j.Full(node.ShardingNode+"/"+it+"/"+node.ItemRunning)))
		}
		more = append(more, reg.GetOp(j.ShardingNecessary()))
	}
	if res, err = reg.ReadMany(ctx, c, more...); err != nil {
		return nil, fmt.Errorf("read jobs: %w", err)
	}
	for i, b := range briefs {
		if b == nil {
			continue
		}
		if b.Status == StatusConfigError {
			b.State = StateConfigError
			continue
		}
		if b.InstanceCount == 0 {
			b.Status, b.State = StatusCrashed, StateCrashed
			continue
		}
		r := &reads[i]
		ips, _ := childList(r.servers)
		r.serverVals, res = res[:len(ips)], res[len(ips):]
		items, _ := childList(r.items)
		r.owners, res = res[:len(items)], res[len(items):]
		r.running, res = res[:len(items)], res[len(items):]
		r.necessary, res = res[0], res[1:]
		if b.Status, err = status(r, b.Instances); err != nil {
			return nil, fmt.Errorf("job %q: %w", b.JobName, err)
		}
		if b.State, err = state(r, items, b.Instances, b.ShardingTotalCount); err != nil {
			return nil, fmt.Errorf("job %q: %w", b.JobName, err)
		}
	}
	return briefs, nil
}

// brief is a job's brief without its status (but StatusConfigError for a
// config node that config.Decode refuses), from the reads of its config
// and instances nodes; nil without a config node.
func brief(name string, cfgRead, instRead reg.ReadResult) (*JobBrief, error) {
	if errors.Is(cfgRead.Err, reg.ErrNoNode) {
		return nil, nil
	}
	if cfgRead.Err != nil {
		return nil, fmt.Errorf("job %q: read config: %w", name, cfgRead.Err)
	}
	b := &JobBrief{JobName: name}
	cfg, err := config.Decode(cfgRead.Data)
	if err != nil {
		// One bad node makes one row in error, not a failed list.
		b.Status, b.ConfigError = StatusConfigError, err.Error()
	}
	if cfg != nil {
		b.Description, b.Cron, b.ShardingTotalCount, b.TimeZone = cfg.Description, cfg.Cron, cfg.ShardingTotalCount, cfg.TimeZone
	}
	if b.Instances, err = childList(instRead); err != nil {
		return nil, fmt.Errorf("job %q: list instances: %w", name, err)
	}
	b.InstanceCount = len(b.Instances)
	return b, nil
}

// childList is a sorted child list from a read (an absent node has none).
func childList(r reg.ReadResult) ([]string, error) {
	if errors.Is(r.Err, reg.ErrNoNode) {
		return nil, nil
	}
	if r.Err != nil {
		return nil, r.Err
	}
	names := slices.Clone(r.Children)
	slices.Sort(names)
	return names, nil
}

// value is a node's data from a read (an absent node has none).
func value(r reg.ReadResult) ([]byte, error) {
	if errors.Is(r.Err, reg.ErrNoNode) {
		return nil, nil
	}
	return r.Data, r.Err
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
	ops := make([]reg.ReadOp, 0, 2*len(names))
	for _, name := range names {
		j := node.New(name)
		ops = append(ops, reg.GetOp(j.Server(ip)), reg.ChildrenOp(j.Instances()))
	}
	res, err := reg.ReadMany(ctx, c, ops...)
	if err != nil {
		return nil, fmt.Errorf("read jobs: %w", err)
	}
	briefs := make([]*JobBrief, len(names))
	for i, name := range names {
		if errors.Is(res[2*i].Err, reg.ErrNoNode) {
			continue
		}
		if err := res[2*i].Err; err != nil {
			return nil, err
		}
		b := &JobBrief{JobName: name, Status: StatusOK}
		if strings.EqualFold(string(res[2*i].Data), node.ServerDisabled) {
			b.Status = StatusDisabled
		}
		ids, err := childList(res[2*i+1])
		if err != nil {
			return nil, fmt.Errorf("job %q: list instances: %w", name, err)
		}
		for _, id := range ids {
			if serverOf(id) == ip {
				b.Instances = append(b.Instances, id)
			}
		}
		b.InstanceCount = len(b.Instances)
		briefs[i] = b
	}
	out := compact(briefs)
	if len(out) == 0 {
		return nil, fmt.Errorf("%w: no job has server %q in namespace %q", ErrServerNotFound, ip, c.Namespace())
	}
	return out, nil
}

// status is a job's status (see Job) from its reads, for a job with
// instances; it looks at the reads, errors included, in upstream's order.
func status(r *jobReads, instances []string) (Status, error) {
	if _, err := childList(r.servers); err != nil {
		return "", err
	}
	allDisabled := true
	for _, sv := range r.serverVals {
		v, err := value(sv)
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
	if _, err := childList(r.items); err != nil {
		return "", err
	}
	owners := map[string]bool{}
	for _, o := range r.owners {
		v, err := value(o)
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

// state is a job's State from its reads, for a job with instances and a
// config node that is not refused (status has read them without error):
// items are the children of its sharding node, in the order of r's reads,
// and total its shardingTotalCount.
func state(r *jobReads, items, instances []string, total int) (State, error) {
	disabled := len(r.serverVals) > 0
	for _, sv := range r.serverVals {
		if v, _ := value(sv); string(v) != node.ServerDisabled {
			disabled = false
			break
		}
	}
	if disabled {
		return StateDisabled, nil
	}
	for _, rn := range r.running {
		if rn.Err == nil {
			return StateRunning, nil
		}
		if !errors.Is(rn.Err, reg.ErrNoNode) {
			return "", fmt.Errorf("read running nodes: %w", rn.Err)
		}
	}
	owned, inRange, gone := 0, 0, false
	for i, o := range r.owners {
		v, _ := value(o)
		if len(v) == 0 {
			continue
		}
		owned++
		if n, err := strconv.Atoi(items[i]); err == nil && n >= 0 && n < total {
			inRange++
		}
		if _, live := slices.BinarySearch(instances, string(v)); !live {
			gone = true
		}
	}
	if owned == 0 {
		return StateNeverRun, nil
	}
	flag, err := present(r.necessary)
	if err != nil {
		return "", fmt.Errorf("read resharding flag: %w", err)
	}
	// An item of [0, total) without an owner waits for a resharding too.
	if flag || gone || inRange < total {
		return StateResharding, nil
	}
	return StateReady, nil
}

// present reports whether a read found its node.
func present(r reg.ReadResult) (bool, error) {
	if errors.Is(r.Err, reg.ErrNoNode) {
		return false, nil
	}
	return r.Err == nil, r.Err
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
