package lifecycle_test

import (
	"context"
	"errors"
	"testing"

	"github.com/ejob-io/ejob/core/lifecycle"
	"github.com/ejob-io/ejob/core/node"
	"github.com/ejob-io/ejob/core/reg"
)

// Beside Java's section A tree (server 192.0.2.2 in both jobs), a second
// server 10.0.0.2 runs javaSimpleJob only, and a third, 10.0.0.3, has a
// server node in javaSimpleJob but no live instance. Instance 10.0.0.7@-@7
// says in its YAML that it is on 10.0.0.2: upstream's shutdown goes by the
// YAML.
func operateTree(t *testing.T, c reg.Client) {
	t.Helper()
	load(t, c, javaTree(t, "A"))
	j := node.New(javaSimple)
	put(t, c, j.Server("10.0.0.2"), "ENABLED")
	put(t, c, j.Server("10.0.0.3"), "DISABLED")
	for id, ip := range map[string]string{"10.0.0.2@-@2": "10.0.0.2", "10.0.0.7@-@7": "10.0.0.2"} {
		v, _ := node.EncodeInstance(node.JobInstance{JobInstanceID: id, ServerIP: ip})
		if _, err := c.Create(ctxOf(t), j.Instance(id), v, reg.Ephemeral); err != nil {
			t.Fatal(err)
		}
	}
}

var (
	simpleServer = func(ip string) string { return node.New(javaSimple).Server(ip) }
	scriptServer = func(ip string) string { return node.New(javaScript).Server(ip) }
	simpleInst   = func(id string) string { return node.New(javaSimple).Instance(id) }
	scriptInst   = func(id string) string { return node.New(javaScript).Instance(id) }
)

func TestDisableEnable(t *testing.T) {
	tests := map[string]struct {
		job, ip string
		op      func(context.Context, reg.Client, string, string) ([]lifecycle.Target, error)
		set     map[string]string
		targets []lifecycle.Target
	}{
		"disable job on server": {job: javaSimple, ip: "10.0.0.2", op: lifecycle.Disable,
			set:     map[string]string{simpleServer("10.0.0.2"): "DISABLED"},
			targets: []lifecycle.Target{{JobName: javaSimple, ServerIP: "10.0.0.2"}}},
		"disable job everywhere": {job: javaSimple, op: lifecycle.Disable,
			set: map[string]string{simpleServer(javaIP): "DISABLED", simpleServer("10.0.0.2"): "DISABLED", simpleServer("10.0.0.3"): "DISABLED"},
			targets: []lifecycle.Target{{JobName: javaSimple, ServerIP: "10.0.0.2"}, {JobName: javaSimple, ServerIP: "10.0.0.3"},
				{JobName: javaSimple, ServerIP: javaIP}}},
		"disable server in every job": {ip: javaIP, op: lifecycle.Disable,
			set:     map[string]string{simpleServer(javaIP): "DISABLED", scriptServer(javaIP): "DISABLED"},
			targets: []lifecycle.Target{{JobName: javaScript, ServerIP: javaIP}, {JobName: javaSimple, ServerIP: javaIP}}},
		"enable job on server": {job: javaSimple, ip: "10.0.0.3", op: lifecycle.Enable,
			set:     map[string]string{simpleServer("10.0.0.3"): "ENABLED"},
			targets: []lifecycle.Target{{JobName: javaSimple, ServerIP: "10.0.0.3"}}},
		"enable job everywhere": {job: javaSimple, op: lifecycle.Enable,
			set: map[string]string{simpleServer("10.0.0.3"): "ENABLED"},
			targets: []lifecycle.Target{{JobName: javaSimple, ServerIP: "10.0.0.2"}, {JobName: javaSimple, ServerIP: "10.0.0.3"},
				{JobName: javaSimple, ServerIP: javaIP}}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			registries(t, func(t *testing.T, c reg.Client) {
				operateTree(t, c)
				before := snapshot(t, c)
				got, err := tc.op(ctxOf(t), c, tc.job, tc.ip)
				if err != nil {
					t.Fatal(err)
				}
				eq(t, "targets", got, tc.targets)
				assertDelta(t, before, snapshot(t, c), tc.set)
			})
		})
	}
}

func TestShutdownRemove(t *testing.T) {
	tests := map[string]struct {
		job, ip string
		remove  bool
		gone    []string
		targets []lifecycle.Target
	}{
		"shutdown job on server (by the instance YAML)": {job: javaSimple, ip: "10.0.0.2",
			gone: []string{simpleInst("10.0.0.2@-@2"), simpleInst("10.0.0.7@-@7")},
			targets: []lifecycle.Target{{JobName: javaSimple, ServerIP: "10.0.0.2", InstanceID: "10.0.0.2@-@2"},
				{JobName: javaSimple, ServerIP: "10.0.0.2", InstanceID: "10.0.0.7@-@7"}}},
		"shutdown job everywhere": {job: javaSimple,
			gone: []string{simpleInst("10.0.0.2@-@2"), simpleInst("10.0.0.7@-@7"), simpleInst(jid(12474))},
			targets: []lifecycle.Target{{JobName: javaSimple, ServerIP: "10.0.0.2", InstanceID: "10.0.0.2@-@2"},
				{JobName: javaSimple, ServerIP: "10.0.0.7", InstanceID: "10.0.0.7@-@7"},
				{JobName: javaSimple, ServerIP: javaIP, InstanceID: jid(12474)}}},
		"shutdown server in every job": {ip: javaIP,
			gone: []string{simpleInst(jid(12474)), scriptInst(jid(12474))},
			targets: []lifecycle.Target{{JobName: javaScript, ServerIP: javaIP, InstanceID: jid(12474)},
				{JobName: javaSimple, ServerIP: javaIP, InstanceID: jid(12474)}}},
		"shutdown a server without instances": {job: javaSimple, ip: "10.0.0.3"},
		"remove job on server": {job: javaSimple, ip: "10.0.0.2", remove: true,
			gone: []string{simpleInst("10.0.0.2@-@2"), simpleInst("10.0.0.7@-@7"), simpleServer("10.0.0.2")},
			targets: []lifecycle.Target{{JobName: javaSimple, ServerIP: "10.0.0.2", InstanceID: "10.0.0.2@-@2"},
				{JobName: javaSimple, ServerIP: "10.0.0.2", InstanceID: "10.0.0.7@-@7"}, {JobName: javaSimple, ServerIP: "10.0.0.2"}}},
		"remove job everywhere": {job: javaSimple, remove: true,
			gone: []string{simpleInst("10.0.0.2@-@2"), simpleInst("10.0.0.7@-@7"), simpleInst(jid(12474)),
				simpleServer("10.0.0.2"), simpleServer("10.0.0.3"), simpleServer(javaIP)},
			targets: []lifecycle.Target{{JobName: javaSimple, ServerIP: "10.0.0.2", InstanceID: "10.0.0.2@-@2"},
				{JobName: javaSimple, ServerIP: "10.0.0.7", InstanceID: "10.0.0.7@-@7"},
				{JobName: javaSimple, ServerIP: javaIP, InstanceID: jid(12474)},
				{JobName: javaSimple, ServerIP: "10.0.0.2"}, {JobName: javaSimple, ServerIP: "10.0.0.3"}, {JobName: javaSimple, ServerIP: javaIP}}},
		"remove server in every job": {ip: javaIP, remove: true,
			gone: []string{simpleInst(jid(12474)), scriptInst(jid(12474)), simpleServer(javaIP), scriptServer(javaIP)},
			targets: []lifecycle.Target{{JobName: javaScript, ServerIP: javaIP, InstanceID: jid(12474)},
				{JobName: javaSimple, ServerIP: javaIP, InstanceID: jid(12474)},
				{JobName: javaScript, ServerIP: javaIP}, {JobName: javaSimple, ServerIP: javaIP}}},
		"remove a server without instances": {job: javaSimple, ip: "10.0.0.3", remove: true,
			gone: []string{simpleServer("10.0.0.3")}, targets: []lifecycle.Target{{JobName: javaSimple, ServerIP: "10.0.0.3"}}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			registries(t, func(t *testing.T, c reg.Client) {
				operateTree(t, c)
				before := snapshot(t, c)
				op := lifecycle.Shutdown
				if tc.remove {
					op = lifecycle.Remove
				}
				got, err := op(ctxOf(t), c, tc.job, tc.ip)
				if err != nil {
					t.Fatal(err)
				}
				eq(t, "targets", got, tc.targets)
				assertDelta(t, before, snapshot(t, c), nil, tc.gone...)
			})
		})
	}
}

// Bad arguments are refused, and nothing is written.
func TestOperateRefusals(t *testing.T) {
	type call func(c reg.Client, t *testing.T) error
	ops := map[string]func(job, ip string) call{
		"disable":  func(job, ip string) call { return opCall(lifecycle.Disable, job, ip) },
		"enable":   func(job, ip string) call { return opCall(lifecycle.Enable, job, ip) },
		"shutdown": func(job, ip string) call { return opCall(lifecycle.Shutdown, job, ip) },
		"remove":   func(job, ip string) call { return opCall(lifecycle.Remove, job, ip) },
	}
	cases := map[string]struct {
		job, ip string
		want    error
	}{
		"neither":        {want: lifecycle.ErrInvalid},
		"unknown job":    {job: "nope", want: lifecycle.ErrJobNotFound},
		"unknown job+ip": {job: "nope", ip: javaIP, want: lifecycle.ErrJobNotFound},
		"unknown server": {job: javaSimple, ip: "10.9.9.9", want: lifecycle.ErrServerNotFound},
		"server nowhere": {ip: "10.9.9.9", want: lifecycle.ErrServerNotFound},
	}
	registries(t, func(t *testing.T, c reg.Client) {
		operateTree(t, c)
		before := snapshot(t, c)
		for op, mk := range ops {
			for name, tc := range cases {
				if err := mk(tc.job, tc.ip)(c, t); !errors.Is(err, tc.want) {
					t.Errorf("%s %s: %v, want %v", op, name, err, tc.want)
				}
			}
		}
		for name, f := range map[string]func() error{
			"trigger unknown":      func() error { _, err := lifecycle.TriggerAll(ctxOf(t), c, "nope"); return err },
			"disable item unknown": func() error { return lifecycle.DisableItem(ctxOf(t), c, "nope", 0) },
			"disable item -1":      func() error { return lifecycle.DisableItem(ctxOf(t), c, javaSimple, -1) },
			"disable item 3 of 3":  func() error { return lifecycle.DisableItem(ctxOf(t), c, javaSimple, 3) },
			"enable item 3 of 3":   func() error { return lifecycle.EnableItem(ctxOf(t), c, javaSimple, 3) },
			"remove config":        func() error { return lifecycle.RemoveConfig(ctxOf(t), c, "nope") },
		} {
			err := f()
			if !errors.Is(err, lifecycle.ErrNotFound) && !errors.Is(err, lifecycle.ErrInvalid) {
				t.Errorf("%s: %v, want a not-found or invalid error", name, err)
			}
		}
		assertDelta(t, before, snapshot(t, c), nil)
	})
}

func opCall(f func(ctx context.Context, c reg.Client, job, ip string) ([]lifecycle.Target, error), job, ip string) func(reg.Client, *testing.T) error {
	return func(c reg.Client, t *testing.T) error {
		_, err := f(ctxOf(t), c, job, ip)
		return err
	}
}

func TestTriggerAll(t *testing.T) {
	registries(t, func(t *testing.T, c reg.Client) {
		operateTree(t, c)
		j := node.New(javaSimple)
		put(t, c, j.TriggerInstance("10.0.0.9@-@9"), "") // stale trigger of a gone instance
		before := snapshot(t, c)
		ids, err := lifecycle.TriggerAll(ctxOf(t), c, javaSimple)
		if err != nil {
			t.Fatal(err)
		}
		eq(t, "asked", ids, []string{"10.0.0.2@-@2", "10.0.0.7@-@7", jid(12474)})
		assertDelta(t, before, snapshot(t, c), map[string]string{
			j.TriggerInstance("10.0.0.2@-@2"): "", j.TriggerInstance("10.0.0.7@-@7"): "", j.TriggerInstance(jid(12474)): "",
		}, j.TriggerInstance("10.0.0.9@-@9"))
	})
}

func TestDisableEnableItem(t *testing.T) {
	registries(t, func(t *testing.T, c reg.Client) {
		load(t, c, javaTree(t, "A"))
		j := node.New(javaSimple)
		before := snapshot(t, c)
		if err := lifecycle.DisableItem(ctxOf(t), c, javaSimple, 1); err != nil {
			t.Fatal(err)
		}
		disabled := snapshot(t, c)
		assertDelta(t, before, disabled, map[string]string{j.Disabled(1): ""})
		if err := lifecycle.DisableItem(ctxOf(t), c, javaSimple, 1); err != nil {
			t.Fatalf("disabling twice: %v", err)
		}
		if err := lifecycle.EnableItem(ctxOf(t), c, javaSimple, 1); err != nil {
			t.Fatal(err)
		}
		assertDelta(t, disabled, snapshot(t, c), nil, j.Disabled(1))
		if err := lifecycle.EnableItem(ctxOf(t), c, javaSimple, 1); err != nil {
			t.Fatalf("enabling twice: %v", err)
		}
	})
}
