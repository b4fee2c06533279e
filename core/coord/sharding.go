package coord

import (
	"context"
	"slices"

	"github.com/ejob-io/ejob/core/node"
)

// availableInstances lists instance ids (descending) whose server is
// ENABLED, skipping nodes without data
// (InstanceService.getAvailableJobInstances). The instance nodes are read
// together, then the servers of their IPs (getMany): a few round trips instead
// of two reads per instance. A server node found missing or empty is read again
// as upstream does (isEnableServer).
func (j *Job) availableInstances(ctx context.Context) ([]string, error) {
	ids, err := j.s.children(ctx, j.s.p.Instances())
	if err != nil {
		return nil, err
	}
	paths := make([]string, len(ids))
	for i, id := range ids {
		paths[i] = j.s.p.Instance(id)
	}
	data, ok, err := j.s.getMany(ctx, paths)
	if err != nil {
		return nil, err
	}
	ips := make([]string, len(ids))
	var servers []string // distinct IPs, in the order first seen
	for i, id := range ids {
		if !ok[i] || data[i] == "" {
			continue
		}
		ips[i] = node.InstanceServerIP(id, []byte(data[i]))
		if !slices.Contains(servers, ips[i]) {
			servers = append(servers, ips[i])
		}
	}
	paths = paths[:0]
	for _, ip := range servers {
		paths = append(paths, j.s.p.Server(ip))
	}
	status, found, err := j.s.getMany(ctx, paths)
	if err != nil {
		return nil, err
	}
	enabled := make(map[string]bool, len(servers))
	for i, ip := range servers {
		if found[i] && status[i] != "" {
			enabled[ip] = status[i] == node.ServerEnabled
		} else if enabled[ip], err = j.ldr.isEnableServer(ctx, ip); err != nil {
			return nil, err
		}
	}
	var out []string
	for i, id := range ids {
		if ips[i] != "" && enabled[ips[i]] {
			out = append(out, id)
		}
	}
	return out, nil
}

// localShardingItems are the items assigned to this instance, ascending
// (ShardingService.getLocalShardingItems); none when this server is not
// available.
func (j *Job) localShardingItems(ctx context.Context) ([]int, error) {
	if j.shutdown.Load() {
		return nil, nil
	}
	if ok, err := j.ldr.isAvailableServer(ctx, j.ip); err != nil || !ok {
		return nil, err
	}
	cfg, err := j.config(ctx)
	if err != nil {
		return nil, err
	}
	var items []int
	for i := 0; i < cfg.ShardingTotalCount; i++ {
		v, _, err := j.s.get(ctx, j.s.p.ShardingInstance(i))
		if err != nil {
			return nil, err
		}
		if v == j.id {
			items = append(items, i)
		}
	}
	return items, nil
}

func without(items, drop []int) []int {
	if len(drop) == 0 {
		return items
	}
	out := items[:0:0]
	for _, i := range items {
		if !slices.Contains(drop, i) {
			out = append(out, i)
		}
	}
	return out
}
