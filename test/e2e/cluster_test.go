package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ejob-io/ejob/core/instance"
	"github.com/ejob-io/ejob/internal/proctree"
	"github.com/ejob-io/ejob/internal/testkit"
)

// pollInterval is how often the tests look at observable state (the
// record file, a host's log, the CLI's output) while waiting on it.
const pollInterval = 25 * time.Millisecond

// cluster is a set of `ejob run` processes sharing one config file.
type cluster struct {
	t     *testing.T
	dir   string // config, record file, host logs
	cfg   string // the shared config file
	runs  string // the record file the recorder appends to
	hosts []*host
}

// host is one `ejob run` process.
type host struct {
	name   string
	cmd    *exec.Cmd
	log    string // stdout and stderr of the process
	exited chan struct{}
	err    error // the exit status, set before exited closes
}

// newCluster prepares a directory for the config file (see writeConfig),
// the record file and the host logs. When t ends the hosts are stopped,
// recorder processes left by killed hosts are waited for (bounded), the
// host logs are printed if t failed, and the directory is removed.
func newCluster(t *testing.T) *cluster {
	t.Helper()
	dir, err := os.MkdirTemp("", "ejob-e2e-")
	if err != nil {
		t.Fatal(err)
	}
	c := &cluster{t: t, dir: dir, cfg: filepath.Join(dir, "ejob.yaml"), runs: filepath.Join(dir, "runs.txt")}
	t.Cleanup(c.cleanup)
	return c
}

// scriptLine is the script.command.line that records into c.runs.
func (c *cluster) scriptLine() string { return recorderBin + " " + c.runs }

func (c *cluster) writeConfig(text string) {
	c.t.Helper()
	if err := os.WriteFile(c.cfg, []byte(text), 0o644); err != nil {
		c.t.Fatal(err)
	}
}

// start starts a host and returns at once; see waitStarted.
func (c *cluster) start(name string) *host {
	c.t.Helper()
	return c.startProcess(name, "run", "-c", c.cfg)
}

// startProcess starts `ejob args...` in c's directory, logging to
// name.log, and returns at once; it is stopped as the hosts are.
func (c *cluster) startProcess(name string, args ...string) *host {
	c.t.Helper()
	h := &host{name: name, log: filepath.Join(c.dir, name+".log"), exited: make(chan struct{})}
	f, err := os.Create(h.log)
	if err != nil {
		c.t.Fatal(err)
	}
	defer f.Close()
	h.cmd = exec.Command(ejobBin, args...)
	h.cmd.Stdout, h.cmd.Stderr = f, f
	h.cmd.Dir = c.dir
	if err := h.cmd.Start(); err != nil {
		c.t.Fatal(err)
	}
	go func() {
		h.err = h.cmd.Wait()
		close(h.exited)
	}()
	c.hosts = append(c.hosts, h)
	return h
}

// pid is the host's process id, the suffix of its instance id.
func (h *host) pid() string { return strconv.Itoa(h.cmd.Process.Pid) }

func (h *host) alive() bool {
	select {
	case <-h.exited:
		return false
	default:
		return true
	}
}

func (h *host) logText() string {
	b, _ := os.ReadFile(h.log)
	return string(b)
}

// waitStarted waits for the host's "host started" line.
func (c *cluster) waitStarted(h *host, timeout time.Duration) {
	c.t.Helper()
	c.waitFor(timeout, h.name+" started", func() (bool, string) {
		if !h.alive() {
			c.t.Fatalf("%s exited: %v\n%s", h.name, h.err, h.logText())
		}
		return strings.Contains(h.logText(), "host started"), "no \"host started\" line yet"
	})
}

// kill sends SIGKILL to the host and waits for the process to be gone.
func (c *cluster) kill(h *host) time.Time {
	c.t.Helper()
	if err := h.cmd.Process.Kill(); err != nil {
		c.t.Fatalf("kill %s: %v", h.name, err)
	}
	at := time.Now()
	<-h.exited
	return at
}

// killTree kills h with SIGKILL, as kill does, and then waits until the
// plugin processes h ran have exited too (a plugin stops what its calls
// started before it exits: a SCRIPT's process group). It returns when the
// kill was sent and the first time nothing of h was seen running (at most
// one pollInterval late). A run of h that left no end record ended by then.
func (c *cluster) killTree(h *host) (killedAt, goneAt time.Time) {
	c.t.Helper()
	plugins := proctree.Children(h.cmd.Process.Pid)
	killedAt = c.kill(h)
	c.waitFor(30*time.Second, h.name+"'s plugin processes to exit", func() (bool, string) {
		for _, p := range plugins {
			if !proctree.Gone(p.PID) {
				return false, fmt.Sprintf("plugin process %d still runs", p.PID)
			}
		}
		return true, ""
	})
	return killedAt, time.Now()
}

// stop sends SIGTERM and waits for a clean exit.
func (c *cluster) stop(h *host, timeout time.Duration) error {
	if !h.alive() {
		return nil
	}
	_ = h.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-h.exited:
		return h.err
	case <-time.After(timeout):
		_ = h.cmd.Process.Kill()
		<-h.exited
		return fmt.Errorf("%s did not exit within %v of SIGTERM", h.name, timeout)
	}
}

// cleanup stops every host, waits (bounded) for recorder processes left
// running by killed hosts to finish writing, prints the host logs if the
// test failed, and removes the directory.
func (c *cluster) cleanup() {
	for _, h := range c.hosts {
		if err := c.stop(h, 20*time.Second); err != nil {
			c.t.Errorf("stop %s: %v", h.name, err)
		}
	}
	deadline := time.Now().Add(15 * time.Second)
	for time.Now().Before(deadline) && c.runningScripts() > 0 {
		time.Sleep(pollInterval) // bounded wait for orphaned recorders
	}
	if c.t.Failed() {
		for _, h := range c.hosts {
			c.t.Logf("---- %s (pid %s) log ----\n%s", h.name, h.pid(), tail(h.logText(), 200))
		}
	}
	_ = os.RemoveAll(c.dir)
}

func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// waitFor polls cond until it holds, failing the test after timeout with
// cond's last explanation.
func (c *cluster) waitFor(timeout time.Duration, what string, cond func() (bool, string)) {
	c.t.Helper()
	deadline := time.Now().Add(timeout)
	tick := time.NewTicker(pollInterval)
	defer tick.Stop()
	for {
		ok, why := cond()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			c.t.Fatalf("timed out after %v waiting for %s: %s", timeout, what, why)
		}
		<-tick.C
	}
}

// ejob runs an `ejob` subcommand against the cluster's config file.
func (c *cluster) ejob(args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, ejobBin, append(args, "-c", c.cfg)...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	if err != nil {
		return out.String(), fmt.Errorf("ejob %s: %w\n%s", strings.Join(args, " "), err, errb.String())
	}
	return out.String(), nil
}

// jobRow is one line of `ejob jobs`.
type jobRow struct {
	cron             string
	items, instances int
	state            string
}

// jobs runs `ejob jobs` and parses its table (STATE is the last column). The cron column may hold
// spaces, so the other columns are taken from both ends.
func (c *cluster) jobs() (map[string]jobRow, string, error) {
	out, err := c.ejob("jobs")
	if err != nil {
		return nil, out, err
	}
	rows := map[string]jobRow{}
	for i, line := range strings.Split(strings.TrimSpace(out), "\n") {
		f := strings.Fields(line)
		if i == 0 || len(f) < 5 {
			continue
		}
		n := len(f)
		items, err1 := strconv.Atoi(f[n-3])
		inst, err2 := strconv.Atoi(f[n-2])
		if err1 != nil || err2 != nil {
			return nil, out, fmt.Errorf("unparsable line %q", line)
		}
		rows[f[0]] = jobRow{cron: strings.Join(f[1:n-3], " "), items: items, instances: inst, state: f[n-1]}
	}
	return rows, out, nil
}

// waitJobRow waits until `ejob jobs` shows job with the given instance
// count and one of states.
func (c *cluster) waitJobRow(job string, instances int, timeout time.Duration, states ...string) jobRow {
	c.t.Helper()
	var row jobRow
	c.waitFor(timeout, fmt.Sprintf("`ejob jobs` to show %s with %d instances, %s", job, instances, strings.Join(states, " or ")), func() (bool, string) {
		rows, out, err := c.jobs()
		if err != nil {
			return false, err.Error()
		}
		row = rows[job]
		return row.instances == instances && slices.Contains(states, row.state), "last output:\n" + out
	})
	return row
}

// itemRun is one run of one item, from the record file.
type itemRun struct {
	job      string
	item     int
	instance string // ip@-@pid, from the task id
	host     string // the test's name for the instance
	recPID   int    // the recorder's process id: pairs start and end
	start    time.Time
	end      time.Time // zero while the item runs
}

// fire is the second the run was fired at: its start truncated to the
// second. Items of a one-second cron start well within their second.
func (r itemRun) fire() int64 { return r.start.Unix() }

func (r itemRun) String() string {
	end := "running"
	if !r.end.IsZero() {
		end = r.end.Format("15:04:05.000")
	}
	return fmt.Sprintf("%s item %d on %s [%s, %s]", r.job, r.item, r.host, r.start.Format("15:04:05.000"), end)
}

// records reads the record file: every run, in start order.
func (c *cluster) records() []itemRun {
	c.t.Helper()
	data, err := testkit.ReadLines(c.runs)
	if err != nil {
		c.t.Fatal(err)
	}
	hostOf := map[string]string{}
	for _, h := range c.hosts {
		hostOf[h.pid()] = h.name
	}
	byPID := map[int]*itemRun{}
	var order []int
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	for sc.Scan() {
		// test/recorder's lines: "S ns pid json", "H ns pid" (heartbeat),
		// "E ns pid" (normal end), "C ns pid signal" (cancelled).
		f := strings.SplitN(sc.Text(), " ", 4)
		if len(f) < 3 {
			c.t.Fatalf("bad record line %q", sc.Text())
		}
		ns, err1 := strconv.ParseInt(f[1], 10, 64)
		pid, err2 := strconv.Atoi(f[2])
		if err1 != nil || err2 != nil {
			c.t.Fatalf("bad record line %q", sc.Text())
		}
		at := time.Unix(0, ns)
		switch f[0] {
		case "S":
			var ctx struct {
				JobName      string `json:"jobName"`
				TaskID       string `json:"taskId"`
				ShardingItem int    `json:"shardingItem"`
			}
			if len(f) != 4 || json.Unmarshal([]byte(f[3]), &ctx) != nil {
				c.t.Fatalf("bad record line %q", sc.Text())
			}
			// taskId = job@-@items@-@READY@-@ip@-@pid
			parts := strings.Split(ctx.TaskID, instance.Separator)
			if len(parts) != 5 {
				c.t.Fatalf("task id %q does not have 5 parts", ctx.TaskID)
			}
			r := &itemRun{job: ctx.JobName, item: ctx.ShardingItem, recPID: pid, start: at,
				instance: parts[3] + instance.Separator + parts[4]}
			r.host = hostOf[parts[4]]
			if r.host == "" {
				r.host = "unknown(" + r.instance + ")"
			}
			byPID[pid] = r
			order = append(order, pid)
		case "E":
			if r := byPID[pid]; r != nil {
				r.end = at
			}
		case "H", "C":
			// Heartbeats and cancellations: a cancelled item has not ended.
		default:
			c.t.Fatalf("bad record line %q", sc.Text())
		}
	}
	out := make([]itemRun, 0, len(order))
	for _, pid := range order {
		out = append(out, *byPID[pid])
	}
	slices.SortStableFunc(out, func(a, b itemRun) int { return a.start.Compare(b.start) })
	return out
}

// runningScripts counts runs that have not ended and whose recorder
// process is still alive.
func (c *cluster) runningScripts() int {
	n := 0
	for _, r := range c.records() {
		if r.end.IsZero() && scriptAlive(r.recPID) {
			n++
		}
	}
	return n
}

func ofJob(runs []itemRun, job string) []itemRun {
	var out []itemRun
	for _, r := range runs {
		if r.job == job {
			out = append(out, r)
		}
	}
	return out
}

// second is what ran in one fire second of a job.
type second struct {
	at    int64
	items map[int][]itemRun // item -> its runs
	hosts map[string][]int  // host -> its items
}

// bySecond groups a job's runs by fire second, ascending.
func bySecond(runs []itemRun) []second {
	idx := map[int64]*second{}
	var keys []int64
	for _, r := range runs {
		s := idx[r.fire()]
		if s == nil {
			s = &second{at: r.fire(), items: map[int][]itemRun{}, hosts: map[string][]int{}}
			idx[r.fire()] = s
			keys = append(keys, r.fire())
		}
		s.items[r.item] = append(s.items[r.item], r)
		s.hosts[r.host] = append(s.hosts[r.host], r.item)
	}
	slices.Sort(keys)
	out := make([]second, 0, len(keys))
	for _, k := range keys {
		s := idx[k]
		for h := range s.hosts {
			slices.Sort(s.hosts[h])
		}
		out = append(out, *s)
	}
	return out
}

// exactlyOnce says why s is not "each of total items ran exactly once, on
// hosts in allowed only", or "" when it is.
func (s second) exactlyOnce(total int, allowed []string) string {
	var why []string
	for i := 0; i < total; i++ {
		switch n := len(s.items[i]); {
		case n == 0:
			why = append(why, fmt.Sprintf("item %d did not run", i))
		case n > 1:
			why = append(why, fmt.Sprintf("item %d ran %d times: %v", i, n, s.items[i]))
		}
	}
	for i := range s.items {
		if i < 0 || i >= total {
			why = append(why, fmt.Sprintf("unknown item %d ran", i))
		}
	}
	for h := range s.hosts {
		if !slices.Contains(allowed, h) {
			why = append(why, fmt.Sprintf("%s ran items %v", h, s.hosts[h]))
		}
	}
	slices.Sort(why)
	return strings.Join(why, "; ")
}

func (s second) String() string {
	names := make([]string, 0, len(s.hosts))
	for h := range s.hosts {
		names = append(names, h)
	}
	slices.Sort(names)
	var b strings.Builder
	b.WriteString(time.Unix(s.at, 0).Format("15:04:05"))
	for _, h := range names {
		fmt.Fprintf(&b, " %s:%v", h, s.hosts[h])
	}
	return b.String()
}

// overlaps lists pairs of runs of the same job and item whose intervals
// intersect: an item running twice at once. A run that has not ended
// counts as running until now.
func overlaps(runs []itemRun) []string {
	type key struct {
		job  string
		item int
	}
	groups := map[key][]itemRun{}
	for _, r := range runs {
		k := key{r.job, r.item}
		groups[k] = append(groups[k], r)
	}
	now := time.Now()
	var out []string
	for _, g := range groups {
		for i := range g {
			for j := i + 1; j < len(g); j++ {
				a, b := g[i], g[j]
				ae, be := a.end, b.end
				if ae.IsZero() {
					ae = now
				}
				if be.IsZero() {
					be = now
				}
				if a.start.Before(be) && b.start.Before(ae) {
					out = append(out, fmt.Sprintf("%v overlaps %v", a, b))
				}
			}
		}
	}
	slices.Sort(out)
	return out
}
