package lifecycle_test

import (
	"errors"
	"fmt"
	"reflect"
	"testing"

	"github.com/ejob-io/ejob/core/config"
	"github.com/ejob-io/ejob/core/lifecycle"
	"github.com/ejob-io/ejob/core/node"
	"github.com/ejob-io/ejob/core/reg"
)

const (
	javaIP     = "192.0.2.2"
	javaSimple = "javaSimpleJob"
	javaScript = "javaScriptJob"
)

func jid(pid int) string { return fmt.Sprintf("%s@-@%d", javaIP, pid) }

func eq[T any](t *testing.T, what string, got, want T) {
	t.Helper()
	if !reflect.DeepEqual(got, want) {
		t.Errorf("%s =\n  %+v\nwant\n  %+v", what, got, want)
	}
}

// Section A of the tree Java wrote: one JVM running a simple and a SCRIPT
// job, between executions.
func TestStatisticsOfAJavaTree(t *testing.T) {
	registries(t, func(t *testing.T, c reg.Client) {
		load(t, c, javaTree(t, "A"))
		ctx := ctxOf(t)
		id := jid(12474)
		jobs, err := lifecycle.Jobs(ctx, c)
		if err != nil {
			t.Fatal(err)
		}
		eq(t, "Jobs", jobs, []lifecycle.JobBrief{
			{JobName: javaScript, Status: lifecycle.StatusOK, State: lifecycle.StateReady, Cron: "0/5 * * * * ?", InstanceCount: 1, ShardingTotalCount: 2, Instances: []string{id}},
			{JobName: javaSimple, Status: lifecycle.StatusOK, State: lifecycle.StateReady, Description: "java reference peer simple job", Cron: "0/2 * * * * ?",
				InstanceCount: 1, ShardingTotalCount: 3, Instances: []string{id}},
		})
		if n, err := lifecycle.JobsTotalCount(ctx, c); err != nil || n != 2 {
			t.Errorf("JobsTotalCount = %d, %v; want 2", n, err)
		}
		servers, err := lifecycle.Servers(ctx, c)
		if err != nil {
			t.Fatal(err)
		}
		eq(t, "Servers", servers, []lifecycle.ServerBrief{{ServerIP: javaIP, Instances: []string{id},
			JobNames: []string{javaScript, javaSimple}, InstancesNum: 1, JobsNum: 2}})
		if n, err := lifecycle.ServersTotalCount(ctx, c); err != nil || n != 1 {
			t.Errorf("ServersTotalCount = %d, %v; want 1", n, err)
		}
		perServer, err := lifecycle.JobsOfServer(ctx, c, javaIP)
		if err != nil {
			t.Fatal(err)
		}
		eq(t, "JobsOfServer", perServer, []lifecycle.JobBrief{
			{JobName: javaScript, Status: lifecycle.StatusOK, InstanceCount: 1, Instances: []string{id}},
			{JobName: javaSimple, Status: lifecycle.StatusOK, InstanceCount: 1, Instances: []string{id}},
		})
		items, err := lifecycle.Sharding(ctx, c, javaSimple)
		if err != nil {
			t.Fatal(err)
		}
		var want []lifecycle.ShardingInfo
		for i := range 3 {
			want = append(want, lifecycle.ShardingInfo{Item: i, ServerIP: javaIP, InstanceID: id, Status: lifecycle.ShardingPending})
		}
		eq(t, "Sharding", items, want)
	})
}

// Sections B and C: three JVMs mid-execution (running and misfire nodes),
// then a crashed one's items failed over; then the states the console
// tells apart, made from them.
func TestShardingAndStatusOfJavaTrees(t *testing.T) {
	registries(t, func(t *testing.T, c reg.Client) {
		ctx := ctxOf(t)
		load(t, c, javaTree(t, "B"))
		b, err := lifecycle.Job(ctx, c, javaSimple)
		if err != nil {
			t.Fatal(err)
		}
		eq(t, "Job in B", b, lifecycle.JobBrief{JobName: javaSimple, Status: lifecycle.StatusOK, State: lifecycle.StateRunning, Description: "java reference peer simple job",
			Cron: "0/2 * * * * ?", InstanceCount: 3, ShardingTotalCount: 3, Instances: []string{jid(15920), jid(15966), jid(16020)}})
		items, err := lifecycle.Sharding(ctx, c, javaSimple)
		if err != nil {
			t.Fatal(err)
		}
		eq(t, "Sharding in B", items, []lifecycle.ShardingInfo{
			{Item: 0, ServerIP: javaIP, InstanceID: jid(16020), Status: lifecycle.ShardingRunning},
			{Item: 1, ServerIP: javaIP, InstanceID: jid(15966), Status: lifecycle.ShardingRunning},
			{Item: 2, ServerIP: javaIP, InstanceID: jid(15920), Status: lifecycle.ShardingRunning},
		})
		j := node.New(javaSimple)
		// B's instance 15966 crashes: its item 1 is owned by a gone
		// instance (SHARDING_FLAG once its running node is gone too);
		// another instance runs it on failover; item 2 is disabled.
		del(t, c, j.Instance(jid(15966)))
		del(t, c, j.Running(1))
		put(t, c, j.Failover(1), jid(15920))
		put(t, c, j.Disabled(2), "")
		b, err = lifecycle.Job(ctx, c, javaSimple)
		if err != nil || b.Status != lifecycle.StatusShardingFlag || b.InstanceCount != 2 {
			t.Errorf("Job after a crash = %+v, %v; want SHARDING_FLAG with 2 instances", b, err)
		}
		items, err = lifecycle.Sharding(ctx, c, javaSimple)
		if err != nil {
			t.Fatal(err)
		}
		eq(t, "Sharding after a crash", items, []lifecycle.ShardingInfo{
			{Item: 0, ServerIP: javaIP, InstanceID: jid(16020), Status: lifecycle.ShardingRunning},
			{Item: 1, ServerIP: javaIP, InstanceID: jid(15966), Status: lifecycle.ShardingFlag, Failover: true},
			{Item: 2, ServerIP: javaIP, InstanceID: jid(15920), Status: lifecycle.ShardingDisabled},
		})

		// Section C, in a fresh job tree: after failover and resharding
		// everything is OK again.
		del(t, c, j.Root())
		load(t, c, javaTree(t, "C"))
		b, err = lifecycle.Job(ctx, c, javaSimple)
		if err != nil || b.Status != lifecycle.StatusOK || b.InstanceCount != 2 {
			t.Errorf("Job in C = %+v, %v; want OK with 2 instances", b, err)
		}
	})
}

// The status rules of JobStatisticsAPIImpl, one job per rule.
func TestJobStatus(t *testing.T) {
	registries(t, func(t *testing.T, c reg.Client) {
		a, b := "10.0.0.1@-@1", "10.0.0.2@-@2"
		job(t, c, "ok", []string{a, b}, map[string]string{"10.0.0.1": "ENABLED", "10.0.0.2": "DISABLED"}, map[int]string{0: a, 1: b, 2: a})
		job(t, c, "crashed", nil, map[string]string{"10.0.0.1": "ENABLED"}, map[int]string{0: a})
		job(t, c, "disabled", []string{a}, map[string]string{"10.0.0.1": "DISABLED", "10.0.0.2": "DISABLED"}, map[int]string{0: a})
		job(t, c, "noServers", []string{a}, nil, map[int]string{0: a})
		// Upstream compares DISABLED case-sensitively here (and ignoring
		// case in the per-server briefs).
		job(t, c, "lowerCase", []string{a}, map[string]string{"10.0.0.1": "disabled"}, map[int]string{0: a})
		job(t, c, "flagNoOwner", []string{a}, map[string]string{"10.0.0.1": "ENABLED"}, nil)
		job(t, c, "flagEmptyOwner", []string{a}, map[string]string{"10.0.0.1": "ENABLED"}, map[int]string{0: ""})
		job(t, c, "flagGoneOwner", []string{a}, map[string]string{"10.0.0.1": "ENABLED"}, map[int]string{0: a, 1: "10.0.0.9@-@9"})
		put(t, c, "/notAJob", "")
		put(t, c, "/notAJob/servers/10.0.0.1", "ENABLED")

		briefs, err := lifecycle.Jobs(ctxOf(t), c)
		if err != nil {
			t.Fatal(err)
		}
		got := map[string]lifecycle.Status{}
		var order []string
		for _, b := range briefs {
			got[b.JobName] = b.Status
			order = append(order, b.JobName)
		}
		eq(t, "job order", order, []string{"crashed", "disabled", "flagEmptyOwner", "flagGoneOwner", "flagNoOwner", "lowerCase", "noServers", "ok"})
		eq(t, "statuses", got, map[string]lifecycle.Status{
			"ok": lifecycle.StatusOK, "crashed": lifecycle.StatusCrashed, "disabled": lifecycle.StatusDisabled,
			"noServers": lifecycle.StatusDisabled, "lowerCase": lifecycle.StatusOK, "flagNoOwner": lifecycle.StatusShardingFlag,
			"flagEmptyOwner": lifecycle.StatusShardingFlag, "flagGoneOwner": lifecycle.StatusShardingFlag,
		})
		if n, err := lifecycle.JobsTotalCount(ctxOf(t), c); err != nil || n != 9 {
			t.Errorf("JobsTotalCount = %d, %v; want 9 (every top-level node counts)", n, err)
		}
		if _, err := lifecycle.Job(ctxOf(t), c, "notAJob"); !errors.Is(err, lifecycle.ErrJobNotFound) || !errors.Is(err, lifecycle.ErrNotFound) {
			t.Errorf("Job of a node without config: %v, want ErrJobNotFound", err)
		}
		if _, err := lifecycle.Sharding(ctxOf(t), c, "nope"); !errors.Is(err, lifecycle.ErrJobNotFound) {
			t.Errorf("Sharding of an unknown job: %v, want ErrJobNotFound", err)
		}

		per, err := lifecycle.JobsOfServer(ctxOf(t), c, "10.0.0.2")
		if err != nil {
			t.Fatal(err)
		}
		eq(t, "JobsOfServer(10.0.0.2)", per, []lifecycle.JobBrief{
			{JobName: "disabled", Status: lifecycle.StatusDisabled},
			{JobName: "ok", Status: lifecycle.StatusDisabled, InstanceCount: 1, Instances: []string{b}},
		})
		per, err = lifecycle.JobsOfServer(ctxOf(t), c, "10.0.0.1")
		if err != nil {
			t.Fatal(err)
		}
		st := map[string]lifecycle.Status{}
		for _, b := range per {
			st[b.JobName] = b.Status
		}
		if st["lowerCase"] != lifecycle.StatusDisabled || st["notAJob"] != lifecycle.StatusOK || len(per) != 8 {
			t.Errorf("JobsOfServer(10.0.0.1) = %+v; want 8 jobs (notAJob too), lowerCase DISABLED ignoring case", per)
		}
		if _, err := lifecycle.JobsOfServer(ctxOf(t), c, "10.9.9.9"); !errors.Is(err, lifecycle.ErrServerNotFound) {
			t.Errorf("JobsOfServer of an unknown server: %v, want ErrServerNotFound", err)
		}
	})
}

// ServerStatisticsAPIImpl walks the jobs in descending name order and
// counts an instance only for a server already seen; DISABLED is compared
// ignoring case.
func TestServersAggregation(t *testing.T) {
	registries(t, func(t *testing.T, c reg.Client) {
		// "b" is walked first: its instance on 10.0.0.5 has no server
		// yet (10.0.0.5 appears only in "a"), so it is not counted.
		job(t, c, "b", []string{"10.0.0.1@-@1", "10.0.0.5@-@5"}, map[string]string{"10.0.0.1": "disabled"}, nil)
		job(t, c, "a", []string{"10.0.0.1@-@2", "10.0.0.5@-@6"}, map[string]string{"10.0.0.1": "ENABLED", "10.0.0.5": "DISABLED"}, nil)
		got, err := lifecycle.Servers(ctxOf(t), c)
		if err != nil {
			t.Fatal(err)
		}
		eq(t, "Servers", got, []lifecycle.ServerBrief{
			{ServerIP: "10.0.0.1", Instances: []string{"10.0.0.1@-@1", "10.0.0.1@-@2"}, JobNames: []string{"a", "b"},
				InstancesNum: 2, JobsNum: 2, DisabledJobsNum: 1},
			{ServerIP: "10.0.0.5", Instances: []string{"10.0.0.5@-@6"}, JobNames: []string{"a"},
				InstancesNum: 1, JobsNum: 1, DisabledJobsNum: 1},
		})
		if n, err := lifecycle.ServersTotalCount(ctxOf(t), c); err != nil || n != 2 {
			t.Errorf("ServersTotalCount = %d, %v; want 2", n, err)
		}
	})
}

// job writes a job's config (3 items) and the given instances (ephemeral,
// YAML as Java writes it), servers and item owners.
func job(t *testing.T, c reg.Client, name string, instances []string, servers map[string]string, owners map[int]string) {
	t.Helper()
	j := node.New(name)
	cfg := config.New(name, 3)
	cfg.Cron = "0/5 * * * * ?"
	cfg.Description = "desc of " + name
	data, err := config.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	put(t, c, j.Root(), "SCRIPT")
	put(t, c, j.Config(), string(data))
	for _, id := range instances {
		ip, _, _ := cut(id)
		v, err := node.EncodeInstance(node.JobInstance{JobInstanceID: id, ServerIP: ip})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.Create(ctxOf(t), j.Instance(id), v, reg.Ephemeral, reg.WithParents()); err != nil {
			t.Fatal(err)
		}
	}
	for ip, v := range servers {
		put(t, c, j.Server(ip), v)
	}
	for item, id := range owners {
		put(t, c, j.ShardingInstance(item), id)
	}
}

func cut(id string) (string, string, bool) {
	for i := 0; i+3 <= len(id); i++ {
		if id[i:i+3] == "@-@" {
			return id[:i], id[i+3:], true
		}
	}
	return id, "", false
}

func TestJobServers(t *testing.T) {
	registries(t, func(t *testing.T, c reg.Client) {
		job(t, c, "j", []string{"10.0.0.1@-@1", "10.0.0.1@-@2", "10.0.0.9@-@9"}, map[string]string{"10.0.0.1": "ENABLED", "10.0.0.2": "DISABLED"}, nil)
		got, err := lifecycle.JobServers(ctxOf(t), c, "j")
		if err != nil {
			t.Fatal(err)
		}
		eq(t, "JobServers", got, []lifecycle.JobServer{
			{ServerIP: "10.0.0.1", Status: "ENABLED", Instances: []string{"10.0.0.1@-@1", "10.0.0.1@-@2"}},
			{ServerIP: "10.0.0.2", Status: "DISABLED", Instances: []string{}},
			{ServerIP: "10.0.0.9", Instances: []string{"10.0.0.9@-@9"}},
		})
		if _, err := lifecycle.JobServers(ctxOf(t), c, "nope"); !errors.Is(err, lifecycle.ErrJobNotFound) {
			t.Errorf("JobServers of an unknown job: %v", err)
		}
	})
}
