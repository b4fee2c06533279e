package lifecycle

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/ejob-io/ejob/core/node"
	"github.com/ejob-io/ejob/core/reg"
)

// TriggerAll is upstream's JobOperateAPI.trigger: it asks every live
// instance of the job to run it once now, as the console's trigger button
// and OneOffJobBootstrap.execute() do through upstream's
// InstanceService.triggerAllInstances. The trigger node is cleared, then
// trigger/{instanceId} (value "") is created for each child of instances.
// It returns the instances asked; ErrJobNotFound when the job has no
// config node.
//
// Unlike upstream, which writes the nodes whatever they reach, it refuses
// (ErrNotRunnable, nothing written) a job no instance would run: one
// without a live instance, or whose every live instance is on a server
// where the job is disabled (servers/{ip} is DISABLED). The error says
// which.
func TriggerAll(ctx context.Context, c reg.Client, jobName string) ([]string, error) {
	j := node.New(jobName)
	if err := mustExist(ctx, c, j); err != nil {
		return nil, fmt.Errorf("trigger: %w", err)
	}
	ids, err := children(ctx, c, j.Instances())
	if err != nil {
		return nil, fmt.Errorf("trigger %q: list instances: %w", jobName, err)
	}
	if err := runnable(ctx, c, j, ids); err != nil {
		return nil, fmt.Errorf("trigger: %w", err)
	}
	if err := reg.DeleteRecursive(ctx, c, j.Trigger()); err != nil {
		return nil, fmt.Errorf("trigger %q: clear trigger nodes: %w", jobName, err)
	}
	for _, id := range ids {
		if _, err := c.Create(ctx, j.TriggerInstance(id), nil, reg.Persistent, reg.WithParents()); err != nil && !errors.Is(err, reg.ErrNodeExists) {
			return nil, fmt.Errorf("trigger %q on %s: %w", jobName, id, err)
		}
	}
	return ids, nil
}

// runnable returns ErrNotRunnable, saying why, unless one of the job's
// live instances ids is on a server where the job is not disabled.
func runnable(ctx context.Context, c Reader, j node.Job, ids []string) error {
	disabled := map[string]bool{}
	for _, id := range ids {
		ip := serverOf(id)
		if v, ok, err := get(ctx, c, j.Instance(id)); err != nil {
			return fmt.Errorf("job %q: read instance %s: %w", j.Name(), id, err)
		} else if !ok {
			continue // gone since listed
		} else if in, err := node.DecodeInstance(v); err == nil && in.ServerIP != "" {
			ip = in.ServerIP
		}
		off, seen := disabled[ip]
		if !seen {
			v, _, err := get(ctx, c, j.Server(ip))
			if err != nil {
				return fmt.Errorf("job %q: read server %s: %w", j.Name(), ip, err)
			}
			off = string(v) == node.ServerDisabled
			disabled[ip] = off
		}
		if !off {
			return nil
		}
	}
	if len(disabled) == 0 {
		return fmt.Errorf("%w: job %q has no live instance (start a host that runs it)", ErrNotRunnable, j.Name())
	}
	return fmt.Errorf("%w: job %q is disabled on every server with a live instance (%s); enable it first", ErrNotRunnable, j.Name(),
		strings.Join(slices.Sorted(maps.Keys(disabled)), ", "))
}

// Disable is upstream's JobOperateAPI.disable: it writes DISABLED to
// servers/{ip}, so that the instances on that server take no items (their
// items move to the other servers at the next resharding) and, when every
// server is disabled, the job stops firing. With both arguments it writes
// that one node; with only jobName, every server node of the job; with only
// serverIP, that server's node in every job that has one.
//
// Unlike upstream, which persists the node whatever exists, it refuses a
// job without a config node (ErrJobNotFound) and a server without a node
// (ErrServerNotFound), so a typo writes nothing. Neither argument:
// ErrInvalid. It returns the (job, server) pairs written.
func Disable(ctx context.Context, c reg.Client, jobName, serverIP string) ([]Target, error) {
	return setServers(ctx, c, jobName, serverIP, node.ServerDisabled)
}

// Enable is upstream's JobOperateAPI.enable: as Disable, writing ENABLED.
func Enable(ctx context.Context, c reg.Client, jobName, serverIP string) ([]Target, error) {
	return setServers(ctx, c, jobName, serverIP, node.ServerEnabled)
}

func setServers(ctx context.Context, c reg.Client, jobName, serverIP, value string) ([]Target, error) {
	op := "disable"
	if value == node.ServerEnabled {
		op = "enable"
	}
	targets, err := servers(ctx, c, jobName, serverIP)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", op, err)
	}
	for _, t := range targets {
		if _, err := reg.Persist(ctx, c, node.New(t.JobName).Server(t.ServerIP), []byte(value)); err != nil {
			return nil, fmt.Errorf("%s job %q on server %s: %w", op, t.JobName, t.ServerIP, err)
		}
	}
	return targets, nil
}

// servers resolves (jobName, serverIP) to the existing server nodes it
// names, as upstream's disable, enable and remove iterate them.
func servers(ctx context.Context, c reg.Client, jobName, serverIP string) ([]Target, error) {
	switch {
	case jobName == "" && serverIP == "":
		return nil, invalidf("give a job name, a server IP or both (upstream: At least indicate jobName or serverIp.)")
	case jobName != "":
		j := node.New(jobName)
		if err := mustExist(ctx, c, j); err != nil {
			return nil, err
		}
		if serverIP != "" {
			ok, err := exists(ctx, c, j.Server(serverIP))
			if err != nil {
				return nil, err
			}
			if !ok {
				return nil, fmt.Errorf("%w: job %q has no server %q", ErrServerNotFound, jobName, serverIP)
			}
			return []Target{{JobName: jobName, ServerIP: serverIP}}, nil
		}
		ips, err := children(ctx, c, j.Servers())
		if err != nil {
			return nil, err
		}
		out := make([]Target, len(ips))
		for i, ip := range ips {
			out[i] = Target{JobName: jobName, ServerIP: ip}
		}
		return out, nil
	}
	names, err := children(ctx, c, "/")
	if err != nil {
		return nil, err
	}
	found := make([]bool, len(names))
	err = eachJob(ctx, names, func(ctx context.Context, i int, name string) error {
		ok, err := exists(ctx, c, node.New(name).Server(serverIP))
		found[i] = ok
		return err
	})
	if err != nil {
		return nil, err
	}
	var out []Target
	for i, name := range names {
		if found[i] {
			out = append(out, Target{JobName: name, ServerIP: serverIP})
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%w: no job has server %q in namespace %q", ErrServerNotFound, serverIP, c.Namespace())
	}
	return out, nil
}

// Shutdown is upstream's JobOperateAPI.shutdown: it deletes instance nodes,
// and each owning process, seeing its own node gone, shuts the job's
// scheduler down (it keeps running, and its other jobs too). With both
// arguments it deletes the job's instances whose serverIp (from the
// instance node's YAML) is serverIP; with only jobName, every instance of
// the job; with only serverIP, the instances on that server in every job.
//
// It refuses a job without a config node (ErrJobNotFound), and a server
// with neither a live instance nor a server node where it looked
// (ErrServerNotFound); neither argument: ErrInvalid. It returns the
// instances deleted.
func Shutdown(ctx context.Context, c reg.Client, jobName, serverIP string) ([]Target, error) {
	var names []string
	switch {
	case jobName == "" && serverIP == "":
		return nil, fmt.Errorf("shutdown: %w", invalidf("give a job name, a server IP or both (upstream: At least indicate jobName or serverIp.)"))
	case jobName != "":
		if err := mustExist(ctx, c, node.New(jobName)); err != nil {
			return nil, fmt.Errorf("shutdown: %w", err)
		}
		names = []string{jobName}
	default:
		var err error
		if names, err = children(ctx, c, "/"); err != nil {
			return nil, fmt.Errorf("shutdown: %w", err)
		}
	}
	found := make([][]Target, len(names))
	err := eachJob(ctx, names, func(ctx context.Context, i int, name string) error {
		t, err := shutdownJob(ctx, c, node.New(name), serverIP)
		found[i] = t
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("shutdown: %w", err)
	}
	out := slices.Concat(found...)
	if len(out) == 0 && serverIP != "" {
		// A server whose instances are all gone is not an error while its
		// server node is there (the job simply has nothing to stop).
		if _, err := servers(ctx, c, jobName, serverIP); err != nil {
			return nil, fmt.Errorf("shutdown: %w", err)
		}
	}
	return out, nil
}

// shutdownJob deletes the job's instance nodes on serverIP ("": all).
func shutdownJob(ctx context.Context, c reg.Client, j node.Job, serverIP string) ([]Target, error) {
	ids, err := children(ctx, c, j.Instances())
	if err != nil {
		return nil, err
	}
	var out []Target
	for _, id := range ids {
		ip := serverOf(id)
		if serverIP != "" {
			v, ok, err := get(ctx, c, j.Instance(id))
			if err != nil {
				return nil, err
			}
			if !ok {
				continue // gone meanwhile
			}
			if in, err := node.DecodeInstance(v); err == nil && in.ServerIP != "" {
				ip = in.ServerIP
			}
			if ip != serverIP {
				continue
			}
		}
		if err := c.Delete(ctx, j.Instance(id), reg.AnyVersion); err != nil && !errors.Is(err, reg.ErrNoNode) {
			return nil, fmt.Errorf("job %q: delete instance %s: %w", j.Name(), id, err)
		}
		out = append(out, Target{JobName: j.Name(), ServerIP: ip, InstanceID: id})
	}
	return out, nil
}

// Remove is upstream's JobOperateAPI.remove: Shutdown, then it deletes the
// server nodes the arguments name (servers/{serverIP} of the job, every
// server node of the job, or servers/{serverIP} in every job). The job's
// configuration and sharding stay (see RemoveConfig). Errors as Shutdown;
// it returns the instances and the servers deleted.
func Remove(ctx context.Context, c reg.Client, jobName, serverIP string) ([]Target, error) {
	down, err := Shutdown(ctx, c, jobName, serverIP)
	if err != nil {
		return nil, fmt.Errorf("remove: %w", err)
	}
	srv, err := servers(ctx, c, jobName, serverIP)
	if errors.Is(err, ErrServerNotFound) {
		srv, err = nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("remove: %w", err)
	}
	for _, t := range srv {
		if err := reg.DeleteRecursive(ctx, c, node.New(t.JobName).Server(t.ServerIP)); err != nil {
			return nil, fmt.Errorf("remove job %q server %s: %w", t.JobName, t.ServerIP, err)
		}
	}
	return append(down, srv...), nil
}

// mustExist returns ErrJobNotFound when the job has no config node.
func mustExist(ctx context.Context, c Reader, j node.Job) error {
	ok, err := exists(ctx, c, j.Config())
	if err != nil {
		return fmt.Errorf("job %q: %w", j.Name(), err)
	}
	if !ok {
		return fmt.Errorf("%w: %q in namespace %q", ErrJobNotFound, j.Name(), c.Namespace())
	}
	return nil
}
