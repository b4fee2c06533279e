package lifecycle

import (
	"context"
	"fmt"
	"slices"

	"github.com/ejob-io/ejob/core/node"
	"github.com/ejob-io/ejob/core/reg"
)

// DisableItem is upstream's ShardingOperateAPI.disable: it persists
// sharding/{item}/disabled (value ""), and the instance that owns the item
// skips it from its next fire on. ErrJobNotFound without a config node;
// ErrInvalid when item is outside [0, shardingTotalCount) (upstream does
// not check).
func DisableItem(ctx context.Context, c reg.Client, jobName string, item int) error {
	j := node.New(jobName)
	if err := checkItem(ctx, c, j, item); err != nil {
		return fmt.Errorf("disable item: %w", err)
	}
	if _, err := reg.Persist(ctx, c, j.Disabled(item), []byte{}); err != nil {
		return fmt.Errorf("disable item %d of job %q: %w", item, jobName, err)
	}
	return nil
}

// EnableItem is upstream's ShardingOperateAPI.enable: it removes
// sharding/{item}/disabled. Errors as DisableItem.
func EnableItem(ctx context.Context, c reg.Client, jobName string, item int) error {
	j := node.New(jobName)
	if err := checkItem(ctx, c, j, item); err != nil {
		return fmt.Errorf("enable item: %w", err)
	}
	if err := reg.DeleteRecursive(ctx, c, j.Disabled(item)); err != nil {
		return fmt.Errorf("enable item %d of job %q: %w", item, jobName, err)
	}
	return nil
}

func checkItem(ctx context.Context, c Reader, j node.Job, item int) error {
	cfg, _, err := readConfig(ctx, c, j)
	if err != nil {
		return err
	}
	if item < 0 || item >= cfg.ShardingTotalCount {
		return invalidf("job %q has items 0 to %d (shardingTotalCount %d), not %d", j.Name(), cfg.ShardingTotalCount-1, cfg.ShardingTotalCount, item)
	}
	return nil
}

// Sharding is upstream's getShardingInfo: one entry per child of the job's
// sharding node (children that are not item numbers are skipped), sorted by
// item. Status is DISABLED when sharding/{item}/disabled exists, else
// RUNNING when .../running exists, else SHARDING_FLAG when the owner named
// by .../instance is not a live instance, else PENDING. ErrJobNotFound when
// the job has no config node (upstream returns an empty list).
func Sharding(ctx context.Context, c Reader, jobName string) ([]ShardingInfo, error) {
	j := node.New(jobName)
	if err := mustExist(ctx, c, j); err != nil {
		return nil, fmt.Errorf("sharding: %w", err)
	}
	names, err := children(ctx, c, j.Sharding())
	if err != nil {
		return nil, fmt.Errorf("job %q: list sharding items: %w", jobName, err)
	}
	var items []int
	for _, s := range names {
		if p, ok := j.Parse(j.Sharding() + "/" + s); ok && p.Kind == node.KindShardingItem {
			items = append(items, p.Item)
		}
	}
	out := make([]ShardingInfo, len(items))
	err = fanOut(ctx, len(items), func(ctx context.Context, i int) error {
		info, err := shardingInfo(ctx, c, j, items[i])
		out[i] = info
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("job %q: %w", jobName, err)
	}
	slices.SortFunc(out, func(a, b ShardingInfo) int { return a.Item - b.Item })
	return out, nil
}

func shardingInfo(ctx context.Context, c Reader, j node.Job, item int) (ShardingInfo, error) {
	info := ShardingInfo{Item: item}
	owner, _, err := get(ctx, c, j.ShardingInstance(item))
	if err != nil {
		return info, err
	}
	var disabled, running, live bool
	for _, q := range []struct {
		path string
		dst  *bool
	}{{j.Disabled(item), &disabled}, {j.Running(item), &running}, {j.Failover(item), &info.Failover}} {
		if *q.dst, err = exists(ctx, c, q.path); err != nil {
			return info, err
		}
	}
	id := string(owner)
	if id != "" {
		var data []byte
		if data, live, err = get(ctx, c, j.Instance(id)); err != nil {
			return info, err
		}
		info.ServerIP, info.InstanceID = serverOf(id), id
		if in, err := node.DecodeInstance(data); live && err == nil {
			info.ServerIP, info.InstanceID = in.ServerIP, in.JobInstanceID
		}
	}
	switch {
	case disabled:
		info.Status = ShardingDisabled
	case running:
		info.Status = ShardingRunning
	case !live:
		info.Status = ShardingFlag
	default:
		info.Status = ShardingPending
	}
	return info, nil
}
