package chaos

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/ejob-io/ejob/core/reg"
	"github.com/ejob-io/ejob/core/reg/zookeeper"
)

// observe runs fn with a fresh ZooKeeper connection to the suite's
// namespace (not through any proxy), closed afterwards. A fresh
// connection per look keeps the observer out of the faults it watches.
func (s *suite) observe(timeout time.Duration, fn func(ctx context.Context, c reg.Client) error) error {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	c, err := s.probeConnect(ctx)
	if err != nil {
		return err
	}
	defer c.Close()
	return fn(ctx, c)
}

// probeConnect opens a ZooKeeper connection to the suite's namespace
// that goes through no proxy (the observer's, the registry probe's).
func (s *suite) probeConnect(ctx context.Context) (reg.Client, error) {
	cfg := zookeeper.DefaultConfig(s.zk.Addr(), s.ns)
	cfg.SessionTimeoutMilliseconds = 4000
	cfg.ConnectionTimeoutMilliseconds = 2000
	cfg.BaseSleepTimeMilliseconds = 100
	cfg.MaxSleepTimeMilliseconds = 300
	c, err := zookeeper.Connect(ctx, cfg)
	if err != nil {
		return nil, err
	}
	return c, nil
}

// leader returns the instance id in {job}/leader/election/instance ("" if none).
func (s *suite) leader(job string) (string, error) {
	var id string
	err := s.observe(3*time.Second, func(ctx context.Context, c reg.Client) error {
		b, _, err := c.Get(ctx, "/"+job+"/leader/election/instance")
		if errors.Is(err, reg.ErrNoNode) {
			return nil
		}
		id = string(b)
		return err
	})
	return id, err
}

// exists reports whether a node exists.
func (s *suite) exists(path string) (bool, error) {
	var ok bool
	err := s.observe(3*time.Second, func(ctx context.Context, c reg.Client) error {
		var err error
		_, ok, err = c.Exists(ctx, path)
		return err
	})
	return ok, err
}

// pidOf is the pid suffix of an instance id (-1 when there is none).
func pidOf(id string) int {
	i := strings.LastIndex(id, "@-@")
	if i < 0 {
		return -1
	}
	p, err := strconv.Atoi(id[i+3:])
	if err != nil {
		return -1
	}
	return p
}

// staleNodes lists the nodes of every job that name an instance whose
// process is not one of the live hosts, plus failover work still queued:
//
//	{job}/instances/{id}                        id not live
//	{job}/leader/election/instance              value not live (or missing)
//	{job}/sharding/{i}/instance                 value not live (a dead owner after resharding)
//	{job}/sharding/{i}/running|failover|failovering   value not live
//	{job}/leader/failover/items/{i}             any (a crashed item nobody took over)
func (s *suite) staleNodes(live map[int]bool) ([]string, error) {
	var out []string
	err := s.observe(5*time.Second, func(ctx context.Context, c reg.Client) error {
		get := func(p string) (string, bool, error) {
			b, _, err := c.Get(ctx, p)
			if errors.Is(err, reg.ErrNoNode) {
				return "", false, nil
			}
			return string(b), err == nil, err
		}
		children := func(p string) ([]string, error) {
			ns, err := c.Children(ctx, p)
			if errors.Is(err, reg.ErrNoNode) {
				return nil, nil
			}
			slices.Sort(ns)
			return ns, err
		}
		for _, job := range []string{jobFO, jobNoFO} {
			ids, err := children("/" + job + "/instances")
			if err != nil {
				return err
			}
			for _, id := range ids {
				if !live[pidOf(id)] {
					out = append(out, fmt.Sprintf("/%s/instances/%s", job, id))
				}
			}
			v, ok, err := get("/" + job + "/leader/election/instance")
			if err != nil {
				return err
			}
			if !ok || !live[pidOf(v)] {
				out = append(out, fmt.Sprintf("/%s/leader/election/instance = %q", job, v))
			}
			items, err := children("/" + job + "/sharding")
			if err != nil {
				return err
			}
			for _, it := range items {
				for _, n := range []string{"instance", "running", "failover", "failovering"} {
					p := "/" + job + "/sharding/" + it + "/" + n
					v, ok, err := get(p)
					if err != nil {
						return err
					}
					if ok && !live[pidOf(v)] {
						out = append(out, fmt.Sprintf("%s = %q", p, v))
					}
				}
			}
			q, err := children("/" + job + "/leader/failover/items")
			if err != nil {
				return err
			}
			for _, it := range q {
				out = append(out, fmt.Sprintf("/%s/leader/failover/items/%s (queued, not taken over)", job, it))
			}
		}
		return nil
	})
	return out, err
}

// killMember kills one ensemble node with SIGKILL (zktest can only stop or
// kill the whole ensemble); zktest's StartAgain starts it again, as zk.sh
// starts only the nodes that do not run.
func killMember(dir string, n int) error {
	pf := filepath.Join(dir, fmt.Sprintf("node%d", n), "pid")
	b, err := os.ReadFile(pf)
	if err != nil {
		return err
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		return err
	}
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		return err
	}
	if ok, _ := waitFor(10*time.Second, func() (bool, string) { return !processAlive(pid), "alive" }); !ok {
		return fmt.Errorf("ensemble node %d (pid %d) still alive after SIGKILL", n, pid)
	}
	return nil
}

// zkPIDs are the server processes of a zktest directory (standalone: DIR/pid;
// ensemble: DIR/node{1,2,3}/pid).
func zkPIDs(dir string) ([]int, error) {
	var out []int
	for _, pf := range []string{"pid", "node1/pid", "node2/pid", "node3/pid"} {
		b, err := os.ReadFile(filepath.Join(dir, pf))
		if os.IsNotExist(err) {
			continue
		}
		if err != nil {
			return nil, err
		}
		pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
		if err != nil {
			return nil, err
		}
		out = append(out, pid)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no ZooKeeper pid file under %s", dir)
	}
	return out, nil
}
