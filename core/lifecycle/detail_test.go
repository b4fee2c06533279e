package lifecycle_test

import (
	"errors"
	"testing"

	"github.com/ejob-io/ejob/core/lifecycle"
	"github.com/ejob-io/ejob/core/node"
	"github.com/ejob-io/ejob/core/reg"
)

// Detail on Java's section B tree after a crash: the items with their
// parameters (0=A,1=B,2=C), the failover of item 1 by another instance,
// a disabled item, a leftover item 5 of a former larger
// shardingTotalCount, and the live instances with IP, PID, leader and
// items.
func TestDetail(t *testing.T) {
	registries(t, func(t *testing.T, c reg.Client) {
		ctx := ctxOf(t)
		load(t, c, javaTree(t, "B"))
		j := node.New(javaSimple)
		del(t, c, j.Instance(jid(15966)))
		del(t, c, j.Running(1))
		put(t, c, j.Failover(1), jid(15920))
		put(t, c, j.Disabled(2), "")
		put(t, c, j.ShardingInstance(5), jid(16020))
		put(t, c, j.FailoverItem(5), "")
		put(t, c, j.Server("10.0.0.9"), "DISABLED")
		d, err := lifecycle.Detail(ctx, c, javaSimple)
		if err != nil {
			t.Fatal(err)
		}
		want := lifecycle.JobDetail{
			JobBrief: lifecycle.JobBrief{JobName: javaSimple, Status: lifecycle.StatusShardingFlag, State: lifecycle.StateRunning, Description: "java reference peer simple job",
				Cron: "0/2 * * * * ?", InstanceCount: 2, ShardingTotalCount: 3, Instances: []string{jid(15920), jid(16020)}},
			State:  lifecycle.StateRunning,
			Leader: jid(15920),
			Items: []lifecycle.ItemDetail{
				{ShardingInfo: lifecycle.ShardingInfo{Item: 0, ServerIP: javaIP, InstanceID: jid(16020), Status: lifecycle.ShardingRunning}, State: lifecycle.ItemRunning, Parameter: "A"},
				{ShardingInfo: lifecycle.ShardingInfo{Item: 1, ServerIP: javaIP, InstanceID: jid(15966), Status: lifecycle.ShardingFlag, Failover: true},
					State: lifecycle.ItemResharding, Parameter: "B", FailoverInstanceID: jid(15920)},
				{ShardingInfo: lifecycle.ShardingInfo{Item: 2, ServerIP: javaIP, InstanceID: jid(15920), Status: lifecycle.ShardingDisabled}, State: lifecycle.ItemDisabled, Parameter: "C"},
				{ShardingInfo: lifecycle.ShardingInfo{Item: 5, ServerIP: javaIP, InstanceID: jid(16020), Status: lifecycle.ShardingPending},
					State: lifecycle.ItemReady, FailoverPending: true},
			},
			Instances: []lifecycle.InstanceDetail{
				{InstanceID: jid(15920), ServerIP: javaIP, PID: "15920", ServerStatus: "ENABLED", Leader: true, Items: []int{2}, FailoverItems: []int{1}},
				{InstanceID: jid(16020), ServerIP: javaIP, PID: "16020", ServerStatus: "ENABLED", Items: []int{0, 5}, FailoverItems: []int{}},
			},
			Servers: []lifecycle.JobServer{
				{ServerIP: "10.0.0.9", Status: "DISABLED", Instances: []string{}},
				{ServerIP: javaIP, Status: "ENABLED", Instances: []string{jid(15920), jid(16020)}},
			},
		}
		eq(t, "Detail", d, want)

		if _, err := lifecycle.Detail(ctx, c, "nope"); !errors.Is(err, lifecycle.ErrJobNotFound) {
			t.Errorf("Detail of a missing job: %v, want ErrJobNotFound", err)
		}
	})
}
