package lifecycle

import (
	"context"
	"fmt"
	"maps"
	"slices"

	"github.com/ejob-io/ejob/core/config"
	"github.com/ejob-io/ejob/core/instance"
	"github.com/ejob-io/ejob/core/node"
)

// JobDetail is one job as a console's detail page shows it: its brief,
// every sharding item with its parameter and failover state, and every
// live instance with its IP, PID and items. Not part of upstream's API,
// which gives the items only (getShardingInfo).
type JobDetail struct {
	JobBrief
	// State is the brief's State, in the JSON (the brief leaves it out of
	// upstream's fields).
	State        State  `json:"state"`
	JobParameter string `json:"jobParameter"`
	// Leader is the leader's instance id ("" while none is elected).
	Leader string `json:"leader"`
	// Items are the items 0 to shardingTotalCount-1 plus any other child
	// of the sharding node (left by a smaller shardingTotalCount until
	// the next sharding), sorted.
	Items []ItemDetail `json:"items"`
	// Instances are the job's live instances, sorted by id.
	Instances []InstanceDetail `json:"instances"`
	// Servers are the job's servers (JobServers).
	Servers []JobServer `json:"servers"`
}

// ItemDetail is one sharding item: upstream's ShardingInfo and more.
type ItemDetail struct {
	ShardingInfo
	// State is ejob's own state of the item (see ItemState).
	State ItemState `json:"state"`
	// Parameter is the item's value in shardingItemParameters ("" when
	// it has none).
	Parameter string `json:"parameter"`
	// FailoverInstanceID is the instance running the item for its
	// crashed owner (the value of sharding/{item}/failover), "" when none.
	FailoverInstanceID string `json:"failoverInstanceId"`
	// FailoverPending: the item waits for an instance to take it over
	// (leader/failover/items/{item} exists).
	FailoverPending bool `json:"failoverPending"`
}

// InstanceDetail is one live instance of a job.
type InstanceDetail struct {
	InstanceID string `json:"instanceId"`
	ServerIP   string `json:"serverIp"`
	// PID is the part of the id after "@-@" (a process id for ejob and
	// Java ElasticJob instances).
	PID    string `json:"pid"`
	Labels string `json:"labels,omitempty"`
	// ServerStatus is the value of the job's servers/{ip} node (ENABLED
	// or DISABLED; "" before it is written).
	ServerStatus string `json:"serverStatus"`
	Leader       bool   `json:"leader"`
	// Items are the items it owns (sharding/{item}/instance), and
	// FailoverItems those it runs for a crashed owner.
	Items         []int `json:"items"`
	FailoverItems []int `json:"failoverItems"`
}

// Detail reads one job for a console's detail page. ErrJobNotFound
// without a config node.
func Detail(ctx context.Context, c Reader, jobName string) (JobDetail, error) {
	j := node.New(jobName)
	brief, err := Job(ctx, c, jobName)
	if err != nil {
		return JobDetail{}, fmt.Errorf("detail: %w", err)
	}
	d := JobDetail{JobBrief: brief, State: brief.State, Items: []ItemDetail{}, Instances: []InstanceDetail{}}
	// A config node that breaks a bound or does not parse still shows,
	// with its error (brief.ConfigError): its items are then the children
	// of the sharding node only, never as many as its count says.
	total := 0
	params := map[int]string{}
	if cfg, _, err := readConfig(ctx, c, j); err == nil {
		d.JobParameter = cfg.JobParameter
		if brief.Status != StatusConfigError {
			total = cfg.ShardingTotalCount
			// A config that does not validate still shows; its items then
			// have no parameters.
			params, _ = config.ParseShardingItemParameters(cfg.ShardingItemParameters)
		}
	} else if brief.Status != StatusConfigError {
		return JobDetail{}, fmt.Errorf("detail: %w", err)
	}
	leader, _, err := get(ctx, c, j.LeaderInstance())
	if err != nil {
		return JobDetail{}, fmt.Errorf("job %q: read leader: %w", jobName, err)
	}
	d.Leader = string(leader)
	if d.Servers, err = JobServers(ctx, c, jobName); err != nil {
		return JobDetail{}, fmt.Errorf("detail: %w", err)
	}
	serverStatus := map[string]string{}
	for _, s := range d.Servers {
		serverStatus[s.ServerIP] = s.Status
	}

	itemSet := map[int]bool{}
	for i := range total {
		itemSet[i] = true
	}
	names, err := children(ctx, c, j.Sharding())
	if err != nil {
		return JobDetail{}, fmt.Errorf("job %q: list sharding items: %w", jobName, err)
	}
	for _, s := range names {
		if p, ok := j.Parse(j.Sharding() + "/" + s); ok && p.Kind == node.KindShardingItem {
			itemSet[p.Item] = true
		}
	}
	items := slices.Sorted(maps.Keys(itemSet))
	d.Items = make([]ItemDetail, len(items))
	err = fanOut(ctx, len(items), func(ctx context.Context, i int) error {
		item := items[i]
		info, err := shardingInfo(ctx, c, j, item)
		if err != nil {
			return err
		}
		fo, _, err := get(ctx, c, j.Failover(item))
		if err != nil {
			return err
		}
		pending, err := exists(ctx, c, j.FailoverItem(item))
		if err != nil {
			return err
		}
		d.Items[i] = ItemDetail{ShardingInfo: info, Parameter: params[item], FailoverInstanceID: string(fo), FailoverPending: pending}
		return nil
	})
	if err != nil {
		return JobDetail{}, fmt.Errorf("job %q: %w", jobName, err)
	}
	reshard, err := exists(ctx, c, j.ShardingNecessary())
	if err != nil {
		return JobDetail{}, fmt.Errorf("job %q: read resharding flag: %w", jobName, err)
	}
	setItemStates(d.Items, reshard)

	byID := map[string]*InstanceDetail{}
	for _, id := range brief.Instances {
		data, live, err := get(ctx, c, j.Instance(id))
		if err != nil {
			return JobDetail{}, fmt.Errorf("job %q: read instance %s: %w", jobName, id, err)
		}
		if !live {
			continue // left since it was listed
		}
		in := InstanceDetail{InstanceID: id, ServerIP: serverOf(id), Leader: id == d.Leader, Items: []int{}, FailoverItems: []int{}}
		if v, err := node.DecodeInstance(data); err == nil {
			in.ServerIP, in.Labels = v.ServerIP, v.Labels
		}
		if p, err := instance.ParseID(id); err == nil {
			in.PID = p.PID
		}
		in.ServerStatus = serverStatus[in.ServerIP]
		byID[id] = &in
	}
	for _, it := range d.Items {
		if in := byID[it.InstanceID]; in != nil {
			in.Items = append(in.Items, it.Item)
		}
		if in := byID[it.FailoverInstanceID]; in != nil {
			in.FailoverItems = append(in.FailoverItems, it.Item)
		}
	}
	for _, id := range slices.Sorted(maps.Keys(byID)) {
		d.Instances = append(d.Instances, *byID[id])
	}
	return d, nil
}

// setItemStates sets each item's State from its upstream status, whether
// any item has an owner, and the job's resharding flag.
func setItemStates(items []ItemDetail, reshard bool) {
	owned := slices.ContainsFunc(items, func(it ItemDetail) bool { return it.InstanceID != "" })
	for i := range items {
		it := &items[i]
		switch {
		case it.Status == ShardingDisabled:
			it.State = ItemDisabled
		case it.Status == ShardingRunning:
			it.State = ItemRunning
		case !owned:
			it.State = ItemNeverRun
		case it.Status == ShardingFlag || reshard:
			it.State = ItemResharding
		default:
			it.State = ItemReady
		}
	}
}
