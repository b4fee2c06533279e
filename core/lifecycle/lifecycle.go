package lifecycle

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/ejob-io/ejob/core/config"
	"github.com/ejob-io/ejob/core/node"
	"github.com/ejob-io/ejob/core/reg"
)

// ErrNoSuchJob means the job has no config node in the namespace.
var ErrNoSuchJob = errors.New("no such job")

// Status is a job's status as the console reports it (executors spec §8.4).
type Status string

// Job statuses.
const (
	StatusOK           Status = "OK"
	StatusCrashed      Status = "CRASHED"
	StatusDisabled     Status = "DISABLED"
	StatusShardingFlag Status = "SHARDING_FLAG"
)

// JobBrief summarises one job.
type JobBrief struct {
	JobName            string
	Description        string
	Cron               string
	ShardingTotalCount int
	InstanceCount      int
	Status             Status
	// Instances are the live instance ids, sorted.
	Instances []string
}

// TriggerAll asks every live instance of the job to run it once now, as the
// console's trigger button and OneOffJobBootstrap.execute() do (protocol
// spec §12.2): the trigger node is cleared, then trigger/{instanceId} is
// created for each instance. It returns the instances asked.
func TriggerAll(ctx context.Context, c reg.Client, jobName string) ([]string, error) {
	j := node.New(jobName)
	if _, ok, err := c.Exists(ctx, j.Config()); err != nil {
		return nil, fmt.Errorf("trigger %q: %w", jobName, err)
	} else if !ok {
		return nil, fmt.Errorf("trigger %q: %w in namespace %q", jobName, ErrNoSuchJob, c.Namespace())
	}
	if err := reg.DeleteRecursive(ctx, c, j.Trigger()); err != nil {
		return nil, fmt.Errorf("trigger %q: clear trigger nodes: %w", jobName, err)
	}
	ids, err := children(ctx, c, j.Instances())
	if err != nil {
		return nil, fmt.Errorf("trigger %q: list instances: %w", jobName, err)
	}
	for _, id := range ids {
		if _, err := c.Create(ctx, j.TriggerInstance(id), nil, reg.Persistent, reg.WithParents()); err != nil && !errors.Is(err, reg.ErrNodeExists) {
			return nil, fmt.Errorf("trigger %q on %s: %w", jobName, id, err)
		}
	}
	return ids, nil
}

// Jobs summarises every job of the namespace (every top-level node with a
// config), sorted by name.
func Jobs(ctx context.Context, c reg.Client) ([]JobBrief, error) {
	names, err := children(ctx, c, "/")
	if err != nil {
		return nil, fmt.Errorf("list jobs: %w", err)
	}
	var out []JobBrief
	for _, name := range names {
		b, err := Job(ctx, c, name)
		if errors.Is(err, ErrNoSuchJob) {
			continue
		}
		if err != nil {
			return nil, err
		}
		out = append(out, b)
	}
	return out, nil
}

// Job summarises one job; ErrNoSuchJob when it has no config node.
func Job(ctx context.Context, c reg.Client, jobName string) (JobBrief, error) {
	j := node.New(jobName)
	data, _, err := c.Get(ctx, j.Config())
	if errors.Is(err, reg.ErrNoNode) {
		return JobBrief{}, fmt.Errorf("job %q: %w", jobName, ErrNoSuchJob)
	}
	if err != nil {
		return JobBrief{}, fmt.Errorf("job %q: read config: %w", jobName, err)
	}
	cfg, err := config.Unmarshal(data)
	if err != nil {
		return JobBrief{}, fmt.Errorf("job %q: %w", jobName, err)
	}
	b := JobBrief{JobName: jobName, Description: cfg.Description, Cron: cfg.Cron, ShardingTotalCount: cfg.ShardingTotalCount}
	if b.Instances, err = children(ctx, c, j.Instances()); err != nil {
		return JobBrief{}, fmt.Errorf("job %q: list instances: %w", jobName, err)
	}
	b.InstanceCount = len(b.Instances)
	if b.Status, err = status(ctx, c, j, b.Instances); err != nil {
		return JobBrief{}, fmt.Errorf("job %q: %w", jobName, err)
	}
	return b, nil
}

// status follows JobStatisticsAPI.getJobBriefInfo: CRASHED without
// instances; DISABLED when every server is disabled (vacuously true without
// servers); SHARDING_FLAG when no item is assigned or one is assigned to an
// instance that is gone; else OK.
func status(ctx context.Context, c reg.Client, j node.Job, instances []string) (Status, error) {
	if len(instances) == 0 {
		return StatusCrashed, nil
	}
	servers, err := children(ctx, c, j.Servers())
	if err != nil {
		return "", err
	}
	allDisabled := true
	for _, ip := range servers {
		v, _, err := c.Get(ctx, j.Server(ip))
		if err != nil && !errors.Is(err, reg.ErrNoNode) {
			return "", err
		}
		if !strings.EqualFold(string(v), node.ServerDisabled) {
			allDisabled = false
		}
	}
	if allDisabled {
		return StatusDisabled, nil
	}
	live := map[string]bool{}
	for _, id := range instances {
		live[id] = true
	}
	items, err := children(ctx, c, j.Sharding())
	if err != nil {
		return "", err
	}
	owners := map[string]bool{}
	for _, it := range items {
		v, _, err := c.Get(ctx, j.Full(node.ShardingNode+"/"+it+"/"+node.ItemInstance))
		if errors.Is(err, reg.ErrNoNode) {
			continue
		}
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
		if !live[id] {
			return StatusShardingFlag, nil
		}
	}
	return StatusOK, nil
}

// children lists a node's children sorted; an absent node has none.
func children(ctx context.Context, c reg.Client, path string) ([]string, error) {
	names, err := c.Children(ctx, path)
	if errors.Is(err, reg.ErrNoNode) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	sort.Strings(names)
	return names, nil
}
