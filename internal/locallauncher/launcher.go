package locallauncher

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/ejob-io/ejob/spi"
)

// Type is the launcher's type name.
const Type = "LOCAL"

// RunItemArg is the first argument under which the plugin binary runs one
// item (the wrapper that records its exit status).
const RunItemArg = "run-item"

// SpawnArg is the first argument under which the plugin binary starts an
// item's wrapper detached from the plugin (see Spawn).
const SpawnArg = "spawn"

// localNode is the node every item of this launcher runs on: its
// ItemStatus.Node and what spi.LaunchNodePlaceholder becomes.
const localNode = "local"

// itemSpec is an item's spec file.
type itemSpec struct {
	Seq      int64             `json:"seq"`
	JobName  string            `json:"jobName"`
	FireID   string            `json:"fireId"`
	Item     int               `json:"item"`
	AppName  string            `json:"appName"`
	AppURL   string            `json:"appURL"`
	Script   string            `json:"bootstrapScript"`
	Cache    bool              `json:"appCacheEnable"`
	CPU      float64           `json:"cpu"`
	MemoryMB float64           `json:"memoryMB"`
	Env      map[string]string `json:"env"`
	CacheDir string            `json:"cacheDir"`
	Daemon   bool              `json:"daemon"`
}

// fireLog is the file of an item's directory a DAEMON item reports its
// fires in (EJOB_FIRE_LOG): a line BEGIN when a fire starts, COMPLETE
// when it ends.
const fireLog = "fires.log"

// settings are the parsed Config.
type settings struct {
	dir       string
	cpu, mem  float64
	retention time.Duration
}

func parse(cfg map[string]string) (settings, error) {
	s := settings{dir: cfg["dir"], cpu: 2, mem: 1024, retention: 10 * time.Minute}
	if s.dir == "" || !filepath.IsAbs(s.dir) {
		return s, fmt.Errorf("%w: launcher LOCAL: dir must be an absolute directory (got %q)", spi.ErrInvalidConfig, s.dir)
	}
	for key, dst := range map[string]*float64{"cpu": &s.cpu, "memory": &s.mem} {
		if v, ok := cfg[key]; ok {
			f, err := strconv.ParseFloat(v, 64)
			if err != nil || f <= 0 {
				return s, fmt.Errorf("%w: launcher LOCAL: %s must be a positive number (got %q)", spi.ErrInvalidConfig, key, v)
			}
			*dst = f
		}
	}
	if v, ok := cfg["retention"]; ok {
		d, err := time.ParseDuration(v)
		if err != nil || d < 0 {
			return s, fmt.Errorf("%w: launcher LOCAL: retention must be a duration (got %q)", spi.ErrInvalidConfig, v)
		}
		s.retention = d
	}
	return s, nil
}

// Launcher is the LOCAL launcher. Self is the executable run as each
// item's wrapper (with RunItemArg); empty means this process's own.
type Launcher struct {
	Self string
}

var _ spi.Launcher = Launcher{}

// Validate implements spi.Launcher.
func (l Launcher) Validate(_ context.Context, req spi.LaunchValidateRequest) error {
	_, err := parse(req.Config)
	return err
}

func fireDir(s settings, job, fire string) string { return filepath.Join(s.dir, "fires", job, fire) }

func validName(n string) bool {
	return n != "" && !strings.ContainsAny(n, "/\\") && n != "." && n != ".."
}

// Launch implements spi.Launcher.
func (l Launcher) Launch(ctx context.Context, req spi.LaunchRequest) (spi.LaunchResponse, error) {
	s, err := parse(req.Config)
	if err != nil {
		return spi.LaunchResponse{}, err
	}
	switch {
	case !validName(req.Job.Name) || !validName(req.FireID):
		return spi.LaunchResponse{}, fmt.Errorf("%w: launcher LOCAL: bad job name %q or fire id %q", spi.ErrInvalidConfig, req.Job.Name, req.FireID)
	case req.App.AppURL == "" && req.App.Image != "":
		return spi.LaunchResponse{}, fmt.Errorf("%w: launcher LOCAL runs appURL apps only, not images (app %q)", spi.ErrUnsupported, req.App.Name)
	case req.App.BootstrapScript == "":
		return spi.LaunchResponse{}, fmt.Errorf("%w: launcher LOCAL: app %q has no bootstrapScript", spi.ErrInvalidConfig, req.App.Name)
	}
	err = withLock(ctx, s, func() error {
		dir := fireDir(s, req.Job.Name, req.FireID)
		if _, err := os.Stat(dir); err == nil {
			return nil // launched before
		}
		tmp := dir + ".new"
		_ = os.RemoveAll(tmp)
		for _, it := range req.Items {
			spec := itemSpec{Seq: time.Now().UnixNano(), JobName: req.Job.Name, FireID: req.FireID, Item: it.Item,
				AppName: req.App.Name, AppURL: req.App.AppURL, Script: req.App.BootstrapScript, Cache: req.App.AppCacheEnable,
				CPU: req.Job.CPUCount + req.App.CPUCount, MemoryMB: req.Job.MemoryMB + req.App.MemoryMB, Env: it.Env,
				CacheDir: filepath.Join(s.dir, "apps", req.App.Name), Daemon: req.Job.ExecutionType == "DAEMON"}
			idir := filepath.Join(tmp, strconv.Itoa(it.Item))
			if err := os.MkdirAll(idir, 0o755); err != nil {
				return err
			}
			b, _ := json.Marshal(spec)
			if err := os.WriteFile(filepath.Join(idir, "spec.json"), b, 0o644); err != nil {
				return err
			}
		}
		if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
			return err
		}
		if err := os.Rename(tmp, dir); err != nil {
			return err
		}
		return l.pass(s)
	})
	if err != nil {
		return spi.LaunchResponse{}, fmt.Errorf("launcher LOCAL: launch %s fire %s: %w", req.Job.Name, req.FireID, err)
	}
	return spi.LaunchResponse{}, nil
}

// item is one item directory as read from disk.
type item struct {
	dir  string
	spec itemSpec
	pid  int
	// started is the wrapper's start time; exit its recorded status.
	started, finished time.Time
	exit              *int
	reason            string
	// idle and fires are what a DAEMON item reported in its fire log.
	idle  bool
	fires int
}

func (it item) alive() bool {
	return it.pid > 0 && syscall.Kill(it.pid, 0) == nil
}

func (it item) state() spi.ItemState {
	switch {
	case it.exit != nil && *it.exit == 0:
		return spi.ItemSucceeded
	case it.exit != nil:
		return spi.ItemFailed
	case it.pid == 0:
		return spi.ItemReady
	case it.alive():
		return spi.ItemRunning
	}
	return spi.ItemLost
}

func readItems(s settings, job string) ([]item, error) {
	pattern := filepath.Join(s.dir, "fires", "*", "*", "*", "spec.json")
	if job != "" {
		pattern = filepath.Join(s.dir, "fires", job, "*", "*", "spec.json")
	}
	paths, err := filepath.Glob(pattern)
	if err != nil {
		return nil, err
	}
	var out []item
	for _, p := range paths {
		if strings.HasSuffix(filepath.Dir(filepath.Dir(p)), ".new") {
			continue
		}
		it := item{dir: filepath.Dir(p)}
		b, err := os.ReadFile(p)
		if err != nil || json.Unmarshal(b, &it.spec) != nil {
			continue
		}
		if b, err := os.ReadFile(filepath.Join(it.dir, "pid")); err == nil {
			it.pid, _ = strconv.Atoi(strings.TrimSpace(string(b)))
			if fi, err := os.Stat(filepath.Join(it.dir, "pid")); err == nil {
				it.started = fi.ModTime()
			}
		}
		if b, err := os.ReadFile(filepath.Join(it.dir, "exit")); err == nil {
			code, reason, _ := strings.Cut(strings.TrimSpace(string(b)), " ")
			if c, err := strconv.Atoi(code); err == nil {
				it.exit, it.reason = &c, reason
			}
			if fi, err := os.Stat(filepath.Join(it.dir, "exit")); err == nil {
				it.finished = fi.ModTime()
			}
		}
		if it.spec.Daemon {
			it.idle = true
			if b, err := os.ReadFile(filepath.Join(it.dir, fireLog)); err == nil {
				lines := strings.Fields(string(b))
				for _, l := range lines {
					if l == "COMPLETE" {
						it.fires++
					}
				}
				it.idle = len(lines) == 0 || lines[len(lines)-1] != "BEGIN"
			}
		}
		out = append(out, it)
	}
	sort.Slice(out, func(a, b int) bool {
		if out[a].spec.Seq != out[b].spec.Seq {
			return out[a].spec.Seq < out[b].spec.Seq
		}
		return out[a].dir < out[b].dir
	})
	return out, nil
}

// pass starts the ready items that fit, oldest first, and drops fires
// finished longer than the retention ago. The caller holds the lock.
func (l Launcher) pass(s settings) error {
	items, err := readItems(s, "")
	if err != nil {
		return err
	}
	var cpu, mem float64
	for _, it := range items {
		if it.state() == spi.ItemRunning {
			cpu, mem = cpu+it.spec.CPU, mem+it.spec.MemoryMB
		}
	}
	fires := map[string]time.Time{}
	for _, it := range items {
		fd := filepath.Dir(it.dir)
		last, seen := fires[fd]
		switch st := it.state(); {
		case !st.Final():
			fires[fd] = time.Now()
		case !seen || it.finished.After(last):
			fires[fd] = it.finished
		}
		if it.state() != spi.ItemReady || cpu+it.spec.CPU > s.cpu+1e-9 || mem+it.spec.MemoryMB > s.mem+1e-9 {
			continue
		}
		if err := l.start(it); err != nil {
			return fmt.Errorf("start %s item %d: %w", it.spec.JobName, it.spec.Item, err)
		}
		cpu, mem = cpu+it.spec.CPU, mem+it.spec.MemoryMB
		fires[fd] = time.Now()
	}
	for fd, last := range fires {
		if time.Since(last) > s.retention {
			_ = os.RemoveAll(fd)
		}
	}
	return nil
}

func (l Launcher) start(it item) error {
	self := l.Self
	if self == "" {
		var err error
		if self, err = os.Executable(); err != nil {
			return err
		}
	}
	// The spawner starts the wrapper in a session of its own and exits,
	// so the wrapper is re-parented away from this plugin: the plugin's
	// exit (its scheduler died) does not end the item, as a scheduler's
	// death does not end a pod.
	cmd := exec.Command(self, SpawnArg, it.dir)
	cmd.Dir = it.dir
	cmd.Env = pluginFree(os.Environ())
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("spawn: %w: %s", err, out)
	}
	return nil
}

// Spawn starts the wrapper of the item in dir (self RunItemArg dir) in a
// new session, records its pid and returns: the plugin binary run with
// SpawnArg.
func Spawn(dir string) error {
	self, err := os.Executable()
	if err != nil {
		return err
	}
	cmd := exec.Command(self, RunItemArg, dir)
	cmd.Dir = dir
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return err
	}
	tmp := filepath.Join(dir, "pid.tmp")
	if err := os.WriteFile(tmp, []byte(strconv.Itoa(cmd.Process.Pid)), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, filepath.Join(dir, "pid"))
}

// pluginFree drops the go-plugin handshake variables of the launcher's own
// process: they are not the item's.
func pluginFree(env []string) []string {
	out := make([]string, 0, len(env))
	for _, kv := range env {
		name, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(name, "PLUGIN_") || name == "EJOB_PLUGIN_MAGIC_COOKIE" {
			continue
		}
		out = append(out, kv)
	}
	return out
}

// List implements spi.Launcher.
func (l Launcher) List(ctx context.Context, req spi.LaunchListRequest) (spi.LaunchList, error) {
	s, err := parse(req.Config)
	if err != nil {
		return spi.LaunchList{}, err
	}
	var items []item
	err = withLock(ctx, s, func() error {
		if err := l.pass(s); err != nil {
			return err
		}
		items, err = readItems(s, req.JobName)
		return err
	})
	if err != nil {
		return spi.LaunchList{}, fmt.Errorf("launcher LOCAL: list: %w", err)
	}
	var used float64
	for _, it := range items {
		if it.state() == spi.ItemRunning {
			used += it.spec.CPU
		}
	}
	out := spi.LaunchList{}
	for _, it := range items {
		st := spi.ItemStatus{JobName: it.spec.JobName, FireID: it.spec.FireID, Item: it.spec.Item, State: it.state(),
			Node: localNode, Name: it.spec.FireID + "-" + strconv.Itoa(it.spec.Item), ExitCode: -1,
			Started: it.started, Finished: it.finished, Fires: it.fires}
		if st.State == spi.ItemRunning {
			st.Idle = it.idle
		}
		switch st.State {
		case spi.ItemReady:
			st.Node = ""
			st.Reason = fmt.Sprintf("Insufficient resources: needs cpu %g, memory %g MB (capacity cpu %g, memory %g MB)", it.spec.CPU, it.spec.MemoryMB, s.cpu, s.mem)
		case spi.ItemLost:
			st.Reason = "the item's process died without an exit status"
		case spi.ItemSucceeded, spi.ItemFailed:
			st.ExitCode, st.Reason = *it.exit, it.reason
		}
		out.Items = append(out.Items, st)
	}
	return out, nil
}

// Stop implements spi.Launcher.
func (l Launcher) Stop(ctx context.Context, req spi.LaunchStopRequest) (spi.LaunchStopResponse, error) {
	s, err := parse(req.Config)
	if err != nil {
		return spi.LaunchStopResponse{}, err
	}
	if !validName(req.JobName) || req.FireID != "" && !validName(req.FireID) {
		return spi.LaunchStopResponse{}, fmt.Errorf("%w: launcher LOCAL: bad job name %q or fire id %q", spi.ErrInvalidConfig, req.JobName, req.FireID)
	}
	stopped := 0
	err = withLock(ctx, s, func() error {
		items, err := readItems(s, req.JobName)
		if err != nil {
			return err
		}
		var dirs []string
		for _, it := range items {
			if req.FireID != "" && it.spec.FireID != req.FireID {
				continue
			}
			dirs = append(dirs, filepath.Dir(it.dir))
			if it.state().Final() {
				continue
			}
			stopped++
			if it.alive() {
				_ = syscall.Kill(-it.pid, syscall.SIGKILL)
				for it.alive() && ctx.Err() == nil {
					time.Sleep(10 * time.Millisecond) // a killed process is gone within milliseconds
				}
			}
		}
		for _, d := range dirs {
			if err := os.RemoveAll(d); err != nil {
				return err
			}
		}
		return ctx.Err()
	})
	if err != nil {
		return spi.LaunchStopResponse{}, fmt.Errorf("launcher LOCAL: stop %s: %w", req.JobName, err)
	}
	return spi.LaunchStopResponse{Stopped: stopped}, nil
}

// withLock runs fn holding dir/lock (flock), shared by every LOCAL
// launcher process using dir.
func withLock(ctx context.Context, s settings, fn func() error) error {
	if err := os.MkdirAll(s.dir, 0o755); err != nil {
		return err
	}
	f, err := os.OpenFile(filepath.Join(s.dir, "lock"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return err
	}
	defer f.Close()
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			break
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(5 * time.Millisecond):
		}
	}
	defer syscall.Flock(int(f.Fd()), syscall.LOCK_UN) //nolint:errcheck // closing releases it too
	return fn()
}
