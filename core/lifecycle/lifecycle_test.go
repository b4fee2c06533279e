package lifecycle_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/ejob-io/ejob/core/config"
	"github.com/ejob-io/ejob/core/lifecycle"
	"github.com/ejob-io/ejob/core/node"
	"github.com/ejob-io/ejob/core/reg"
	"github.com/ejob-io/ejob/core/reg/embedded"
)

func put(t *testing.T, c reg.Client, path, value string) {
	t.Helper()
	if _, err := reg.Persist(context.Background(), c, path, []byte(value)); err != nil {
		t.Fatalf("persist %s: %v", path, err)
	}
}

func client(t *testing.T) reg.Client {
	t.Helper()
	c, err := embedded.NewServer().Connect("lifecycle")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// job writes a job's config and the given instances, servers and item owners.
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
	put(t, c, j.Config(), string(data))
	for _, id := range instances {
		put(t, c, j.Instance(id), "jobInstanceId: "+id+"\nserverIp: 127.0.0.1\n")
	}
	for ip, v := range servers {
		put(t, c, j.Server(ip), v)
	}
	for item, id := range owners {
		put(t, c, j.ShardingInstance(item), id)
	}
}

func TestJobsStatus(t *testing.T) {
	c := client(t)
	a, b := "10.0.0.1@-@1", "10.0.0.2@-@2"
	job(t, c, "ok", []string{a, b}, map[string]string{"10.0.0.1": "ENABLED", "10.0.0.2": ""}, map[int]string{0: a, 1: b, 2: a})
	job(t, c, "crashed", nil, map[string]string{"10.0.0.1": "ENABLED"}, map[int]string{0: a})
	job(t, c, "disabled", []string{a}, map[string]string{"10.0.0.1": "DISABLED", "10.0.0.2": "disabled"}, map[int]string{0: a})
	job(t, c, "flagNoOwner", []string{a}, map[string]string{"10.0.0.1": "ENABLED"}, nil)
	job(t, c, "flagGoneOwner", []string{a}, map[string]string{"10.0.0.1": "ENABLED"}, map[int]string{0: a, 1: "10.0.0.9@-@9"})
	put(t, c, "/notAJob", "") // top-level nodes without config are not jobs

	briefs, err := lifecycle.Jobs(context.Background(), c)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]lifecycle.JobBrief{}
	var order []string
	for _, b := range briefs {
		got[b.JobName] = b
		order = append(order, b.JobName)
	}
	if fmt.Sprint(order) != "[crashed disabled flagGoneOwner flagNoOwner ok]" {
		t.Fatalf("jobs = %v", order)
	}
	want := map[string]lifecycle.Status{
		"ok": lifecycle.StatusOK, "crashed": lifecycle.StatusCrashed, "disabled": lifecycle.StatusDisabled,
		"flagNoOwner": lifecycle.StatusShardingFlag, "flagGoneOwner": lifecycle.StatusShardingFlag,
	}
	for name, st := range want {
		if got[name].Status != st {
			t.Errorf("%s: status %s, want %s", name, got[name].Status, st)
		}
	}
	ok := got["ok"]
	if ok.Cron != "0/5 * * * * ?" || ok.ShardingTotalCount != 3 || ok.InstanceCount != 2 || ok.Description != "desc of ok" ||
		fmt.Sprint(ok.Instances) != fmt.Sprint([]string{a, b}) {
		t.Errorf("ok brief = %+v", ok)
	}
}

func TestTriggerAllCreatesOneNodePerInstance(t *testing.T) {
	c := client(t)
	a, b := "10.0.0.1@-@1", "10.0.0.2@-@2"
	job(t, c, "j", []string{a, b}, nil, nil)
	put(t, c, node.New("j").TriggerInstance("10.0.0.9@-@9"), "") // stale trigger of a gone instance
	ids, err := lifecycle.TriggerAll(context.Background(), c, "j")
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(ids) != fmt.Sprint([]string{a, b}) {
		t.Fatalf("asked %v", ids)
	}
	kids, err := c.Children(context.Background(), node.New("j").Trigger())
	if err != nil {
		t.Fatal(err)
	}
	if len(kids) != 2 {
		t.Fatalf("trigger nodes = %v, want one per live instance (stale ones cleared)", kids)
	}
	for _, id := range []string{a, b} {
		v, _, err := c.Get(context.Background(), node.New("j").TriggerInstance(id))
		if err != nil || len(v) != 0 {
			t.Errorf("trigger/%s = %q, %v; want empty value", id, v, err)
		}
	}
	if _, err := lifecycle.TriggerAll(context.Background(), c, "nope"); !errors.Is(err, lifecycle.ErrNoSuchJob) {
		t.Fatalf("unknown job: %v", err)
	}
}
