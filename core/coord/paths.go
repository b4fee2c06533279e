package coord

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/ejob-io/ejob/core/reg"
)

// Node names relative to the job root (protocol spec §2).
const (
	nodeConfig          = "config"
	nodeServers         = "servers"
	nodeInstances       = "instances"
	nodeSharding        = "sharding"
	nodeTrigger         = "trigger"
	nodeLeaderInstance  = "leader/election/instance"
	nodeNecessary       = "leader/sharding/necessary"
	nodeProcessing      = "leader/sharding/processing"
	nodeFailoverItems   = "leader/failover/items"
	nodeFailoverLatch   = "leader/failover/latch"
	nodeSystemTime      = "systemTime/current"
	instanceIDSeparator = "@-@"

	serverEnabled  = "ENABLED"
	serverDisabled = "DISABLED"
)

// paths builds namespace-relative paths under one job root.
type paths struct{ root string }

// of is reg.Join(p.root, elem...), built with one allocation: paths are
// built several times per trigger.
func (p paths) of(elem ...string) string {
	if p.root == "/" || p.root == "" {
		return reg.Join(append([]string{p.root}, elem...)...)
	}
	n := len(p.root)
	for _, e := range elem {
		n += 1 + len(e)
	}
	var b strings.Builder
	b.Grow(n)
	b.WriteString(p.root)
	for _, e := range elem {
		if e = strings.Trim(e, "/"); e != "" {
			b.WriteByte('/')
			b.WriteString(e)
		}
	}
	return b.String()
}
func (p paths) server(ip string) string   { return p.of(nodeServers, ip) }
func (p paths) instance(id string) string { return p.of(nodeInstances, id) }
func (p paths) trigger(id string) string  { return p.of(nodeTrigger, id) }
func (p paths) item(i int) string         { return p.of(nodeSharding, strconv.Itoa(i)) }
func (p paths) itemNode(i int, n string) string {
	return p.of(nodeSharding, strconv.Itoa(i), n)
}
func (p paths) failoverItem(i int) string { return p.of(nodeFailoverItems, strconv.Itoa(i)) }

// itemLeaves are the nodes under sharding/{i} (spec §2): none has
// children in ElasticJob's tree.
var itemLeaves = map[string]bool{
	"instance": true, "running": true, "failover": true, "failovering": true, "misfire": true, "disabled": true,
}

// isItemLeaf reports whether path is sharding/{i}/{node} for one of
// itemLeaves: the tree cache arms no child watch on those (running nodes
// come and go at every trigger; issue 16).
func (p paths) isItemLeaf(path string) bool {
	r, ok := p.rel(path)
	if !ok {
		return false
	}
	r, ok = strings.CutPrefix(r, nodeSharding+"/")
	if !ok {
		return false
	}
	_, leaf, ok := strings.Cut(r, "/")
	return ok && !strings.Contains(leaf, "/") && itemLeaves[leaf]
}

// rel returns path relative to the job root ("" for the root itself), and
// false when path is outside the job.
func (p paths) rel(path string) (string, bool) {
	if path == p.root {
		return "", true
	}
	r, ok := strings.CutPrefix(path, p.root+"/")
	return r, ok
}

// instanceYAML is the instance node's value exactly as SnakeYAML writes
// upstream's JobInstance (keys sorted, nulls omitted; spec §4).
func instanceYAML(id, ip string) []byte {
	return []byte("jobInstanceId: " + id + "\nserverIp: " + ip + "\n")
}

// serverIPOf returns the serverIp of an instance node value, falling back to
// the id's prefix when the value has none.
func serverIPOf(id string, data []byte) string {
	for _, line := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(line, "serverIp:"); ok {
			return strings.Trim(strings.TrimSpace(v), `'"`)
		}
	}
	return ipPrefix(id)
}

// ipPrefix is the server IP part of an instance id (before the first "@-@").
func ipPrefix(id string) string {
	ip, _, _ := strings.Cut(id, instanceIDSeparator)
	return ip
}

// store wraps a reg.Client with upstream's JobNodeStorage helpers.
type store struct {
	c reg.Client
	p paths
}

// get returns the data of path and whether it exists.
func (s store) get(ctx context.Context, path string) (string, bool, error) {
	data, _, err := s.c.Get(ctx, path)
	if errors.Is(err, reg.ErrNoNode) {
		return "", false, nil
	}
	if err != nil {
		return "", false, err
	}
	return string(data), true, nil
}

func (s store) exists(ctx context.Context, path string) (bool, error) {
	_, ok, err := s.c.Exists(ctx, path)
	return ok, err
}

// getEach reads every path's data in few round trips (reg.ReadMany: one
// multiRead per few hundred paths on ZooKeeper).
func (s store) getEach(ctx context.Context, paths []string) ([]reg.ReadResult, error) {
	if len(paths) == 0 {
		return nil, nil
	}
	ops := make([]reg.ReadOp, len(paths))
	for i, p := range paths {
		ops[i] = reg.GetOp(p)
	}
	return reg.ReadMany(ctx, s.c, ops...)
}

// getMany is get for many paths in few round trips (getEach). Each op sees the registry
// as a plain read at about the same time would; an absent node is a ""
// value and false, any other error of an op fails the call.
func (s store) getMany(ctx context.Context, paths []string) ([]string, []bool, error) {
	res, err := s.getEach(ctx, paths)
	if err != nil {
		return nil, nil, err
	}
	vals, oks := make([]string, len(paths)), make([]bool, len(paths))
	for i, r := range res {
		switch {
		case r.Err == nil:
			vals[i], oks[i] = string(r.Data), true
		case !errors.Is(r.Err, reg.ErrNoNode):
			return nil, nil, r.Err
		}
	}
	return vals, oks, nil
}

// existsMany is exists for many paths in few round trips (getEach). A
// node whose ACL refuses the read exists, as Exists would say.
func (s store) existsMany(ctx context.Context, paths []string) ([]bool, error) {
	res, err := s.getEach(ctx, paths)
	if err != nil {
		return nil, err
	}
	out := make([]bool, len(paths))
	for i, r := range res {
		switch {
		case r.Err == nil, errors.Is(r.Err, reg.ErrNoAuth):
			out[i] = true
		case !errors.Is(r.Err, reg.ErrNoNode):
			return nil, r.Err
		}
	}
	return out, nil
}

// children returns the child names in upstream's order (descending string
// order); a missing node has none.
func (s store) children(ctx context.Context, path string) ([]string, error) {
	names, err := s.c.Children(ctx, path)
	if errors.Is(err, reg.ErrNoNode) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	slices.SortFunc(names, func(a, b string) int { return strings.Compare(b, a) })
	return names, nil
}

// createIfNeeded is createJobNodeIfNeeded: persist "" at path only when the
// job root exists and path does not.
func (s store) createIfNeeded(ctx context.Context, path string) error {
	ok, err := s.exists(ctx, s.p.root)
	if err != nil || !ok {
		return err
	}
	ok, err = s.exists(ctx, path)
	if err != nil || ok {
		return err
	}
	_, err = s.c.Create(ctx, path, nil, reg.Persistent, reg.WithParents())
	if errors.Is(err, reg.ErrNodeExists) {
		return nil
	}
	return err
}

// persistEphemeral makes path an ephemeral node of this session holding
// data, with persistent parents: a node this session already owns is
// updated in place; any other (a previous session's) is deleted first.
func (s store) persistEphemeral(ctx context.Context, path string, data []byte) error {
	// A node this very session already owns is kept (its data updated):
	// deleting and re-creating it would look, to every other instance,
	// like this instance crashed and came back, and they would fail over
	// items it is still running.
	if cur, st, err := s.c.Get(ctx, path); err == nil && st.EphemeralOwner != 0 && st.EphemeralOwner == s.c.Session().ID() {
		if string(cur) == string(data) {
			return nil
		}
		_, err := s.c.Set(ctx, path, data, st.Version)
		return err
	} else if err != nil && !errors.Is(err, reg.ErrNoNode) {
		return err
	}
	if err := reg.DeleteRecursive(ctx, s.c, path); err != nil {
		return err
	}
	_, err := s.c.Create(ctx, path, data, reg.Ephemeral, reg.WithParents())
	return err
}

// deleteIfValue deletes path when its value is want (versioned, so a node
// re-written meanwhile by someone else survives). It reports whether it
// deleted.
func (s store) deleteIfValue(ctx context.Context, path, want string) (bool, error) {
	data, st, err := s.c.Get(ctx, path)
	if errors.Is(err, reg.ErrNoNode) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	if string(data) != want {
		return false, nil
	}
	err = s.c.Delete(ctx, path, st.Version)
	if errors.Is(err, reg.ErrNoNode) || errors.Is(err, reg.ErrBadVersion) {
		return false, nil
	}
	return err == nil, err
}

// itemNumbers parses the children of sharding/ (or failover items) as item
// numbers, keeping the given order and skipping non-numbers.
func itemNumbers(names []string) []int {
	out := make([]int, 0, len(names))
	for _, n := range names {
		if i, err := strconv.Atoi(n); err == nil && i >= 0 {
			out = append(out, i)
		}
	}
	return out
}

func wrap(what string, err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("%s: %w", what, err)
}
