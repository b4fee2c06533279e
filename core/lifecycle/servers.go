package lifecycle

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/ejob-io/ejob/core/node"
	"github.com/ejob-io/ejob/core/reg"
)

// ServersTotalCount is upstream's getServersTotalCount: the number of
// distinct servers/{ip} names over all top-level nodes.
func ServersTotalCount(ctx context.Context, c Reader) (int, error) {
	jobs, err := serverTree(ctx, c)
	if err != nil {
		return 0, err
	}
	ips := map[string]bool{}
	for _, j := range jobs {
		for _, s := range j.servers {
			ips[s.ip] = true
		}
	}
	return len(ips), nil
}

// Servers is upstream's getAllServersBriefInfo: one brief per server IP
// found under any job's servers node, sorted by IP. As upstream, an
// instance counts for a server only when its id's IP (the part before
// "@-@") names a server node of this job or of one that comes before it
// in upstream's walk (job names descending).
func Servers(ctx context.Context, c Reader) ([]ServerBrief, error) {
	jobs, err := serverTree(ctx, c)
	if err != nil {
		return nil, err
	}
	type acc struct {
		jobs, instances map[string]bool
		disabled        int
	}
	byIP := map[string]*acc{}
	// Upstream walks the jobs in getChildrenKeys order: names descending.
	for _, j := range slices.Backward(jobs) {
		for _, s := range j.servers {
			a := byIP[s.ip]
			if a == nil {
				a = &acc{jobs: map[string]bool{}, instances: map[string]bool{}}
				byIP[s.ip] = a
			}
			if strings.EqualFold(s.value, node.ServerDisabled) {
				a.disabled++
			}
			a.jobs[j.name] = true
		}
		for _, id := range j.instances {
			if a := byIP[serverOf(id)]; a != nil {
				a.instances[id] = true
			}
		}
	}
	out := make([]ServerBrief, 0, len(byIP))
	for _, ip := range slices.Sorted(maps.Keys(byIP)) {
		a := byIP[ip]
		b := ServerBrief{ServerIP: ip, Instances: sortedKeys(a.instances), JobNames: sortedKeys(a.jobs), DisabledJobsNum: a.disabled}
		b.InstancesNum, b.JobsNum = len(b.Instances), len(b.JobNames)
		out = append(out, b)
	}
	return out, nil
}

// sortedKeys is m's keys sorted, an empty list (not nil: JSON [] as
// upstream's empty sets, never null) for an empty m. A server whose hosts
// all stopped keeps its servers/{ip} node and has no instance.
func sortedKeys(m map[string]bool) []string {
	return append([]string{}, slices.Sorted(maps.Keys(m))...)
}

type serverNode struct{ ip, value string }

type jobServers struct {
	name      string
	servers   []serverNode
	instances []string
}

// serverTree reads every top-level node's servers (with their values) and
// instances, in job-name order.
func serverTree(ctx context.Context, c Reader) ([]jobServers, error) {
	names, err := children(ctx, c, "/")
	if err != nil {
		return nil, fmt.Errorf("list jobs: %w", err)
	}
	ops := make([]reg.ReadOp, 0, 2*len(names))
	for _, name := range names {
		j := node.New(name)
		ops = append(ops, reg.ChildrenOp(j.Servers()), reg.ChildrenOp(j.Instances()))
	}
	res, err := reg.ReadMany(ctx, c, ops...)
	if err != nil {
		return nil, fmt.Errorf("read jobs: %w", err)
	}
	out := make([]jobServers, len(names))
	var vals []reg.ReadOp
	for i, name := range names {
		j := node.New(name)
		js := jobServers{name: name}
		ips, err := childList(res[2*i])
		if err != nil {
			return nil, fmt.Errorf("job %q: list servers: %w", name, err)
		}
		for _, ip := range ips {
			js.servers = append(js.servers, serverNode{ip: ip})
			vals = append(vals, reg.GetOp(j.Server(ip)))
		}
		if js.instances, err = childList(res[2*i+1]); err != nil {
			return nil, fmt.Errorf("job %q: list instances: %w", name, err)
		}
		out[i] = js
	}
	if res, err = reg.ReadMany(ctx, c, vals...); err != nil {
		return nil, fmt.Errorf("read jobs: %w", err)
	}
	for i := range out {
		for k := range out[i].servers {
			s := &out[i].servers[k]
			v, err := value(res[0])
			if err != nil {
				return nil, fmt.Errorf("job %q: read server %s: %w", out[i].name, s.ip, err)
			}
			s.value, res = string(v), res[1:]
		}
	}
	return out, nil
}

// JobServer is one server of a job: its servers/{ip} node and the job's
// live instances on that IP.
type JobServer struct {
	ServerIP string `json:"serverIp"`
	// Status is the server node's value, ENABLED or DISABLED; "" when the
	// IP has live instances but no server node (not written yet).
	Status string `json:"status"`
	// Instances are the job's instance ids on this IP, sorted.
	Instances []string `json:"instances"`
}

// JobServers lists a job's servers, sorted by IP: every servers/{ip} node,
// plus the IP of every live instance. ErrJobNotFound without a config node.
func JobServers(ctx context.Context, c Reader, jobName string) ([]JobServer, error) {
	j := node.New(jobName)
	if err := mustExist(ctx, c, j); err != nil {
		return nil, err
	}
	byIP := map[string]*JobServer{}
	at := func(ip string) *JobServer {
		if byIP[ip] == nil {
			byIP[ip] = &JobServer{ServerIP: ip, Instances: []string{}}
		}
		return byIP[ip]
	}
	ips, err := children(ctx, c, j.Servers())
	if err != nil {
		return nil, fmt.Errorf("job %q: list servers: %w", jobName, err)
	}
	for _, ip := range ips {
		v, _, err := get(ctx, c, j.Server(ip))
		if err != nil {
			return nil, fmt.Errorf("job %q: read server %s: %w", jobName, ip, err)
		}
		at(ip).Status = string(v)
	}
	ids, err := children(ctx, c, j.Instances())
	if err != nil {
		return nil, fmt.Errorf("job %q: list instances: %w", jobName, err)
	}
	for _, id := range ids {
		s := at(serverOf(id))
		s.Instances = append(s.Instances, id)
	}
	out := make([]JobServer, 0, len(byIP))
	for _, ip := range slices.Sorted(maps.Keys(byIP)) {
		out = append(out, *byIP[ip])
	}
	return out, nil
}
