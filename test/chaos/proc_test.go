package chaos

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ejob-io/ejob/internal/proctree"
)

// pollInterval is how often the suite looks at observable state (logs, the
// record file, ZooKeeper) while waiting on it.
const pollInterval = 25 * time.Millisecond

// host is one named `ejob run` host: a process, replaced by a new one (a
// new pid, so a new instance id) after each kill.
type host struct {
	name  string
	cfg   string // its config file: serverLists point at its proxy
	proxy *proxy
	dir   string
	// bin is the ejob binary its next start runs (empty: the one built
	// from this tree).
	bin string

	gen    int       // incarnations so far
	cmd    *exec.Cmd // the current process (nil before the first start)
	log    string
	exited chan struct{}
	pids   []int // every pid this host has had, in order
	// stopped holds the pids frozen by SIGSTOP (host first), nil when running.
	stopped []int
}

func (h *host) pid() int { return h.cmd.Process.Pid }

func (h *host) alive() bool {
	if h.cmd == nil {
		return false
	}
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

// start launches a new incarnation of h and returns at once.
func (h *host) start() error {
	h.gen++
	h.log = filepath.Join(h.dir, fmt.Sprintf("%s.%d.log", h.name, h.gen))
	f, err := os.Create(h.log)
	if err != nil {
		return err
	}
	defer f.Close()
	bin := ejobBin
	if h.bin != "" {
		bin = h.bin
	}
	cmd := exec.Command(bin, "run", "-c", h.cfg)
	cmd.Stdout, cmd.Stderr = f, f
	cmd.Dir = h.dir
	if err := cmd.Start(); err != nil {
		return err
	}
	exited := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		close(exited)
	}()
	h.cmd, h.exited = cmd, exited
	h.pids = append(h.pids, cmd.Process.Pid)
	return nil
}

// kill9 sends SIGKILL to the host process (not its children: they must
// die with it, as after a real crash) and waits until it is gone.
func (h *host) kill9() {
	if !h.alive() {
		return
	}
	_ = h.cmd.Process.Kill()
	<-h.exited
}

// stop ends the host gracefully (SIGTERM: it stops firing, drains its
// items for drainTimeout and leaves the registry) and waits until it has
// exited, at most timeout.
func (h *host) stop(timeout time.Duration) error {
	if !h.alive() {
		return nil
	}
	_ = h.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-h.exited:
		return nil
	case <-time.After(timeout):
		return fmt.Errorf("%s (pid %d) still running %v after SIGTERM", h.name, h.pid(), timeout)
	}
}

// freeze stops the host and all its descendants (plugin process, running
// scripts) with SIGSTOP, as a paused VM or container would be: the host
// first, so it starts nothing new, then its descendants until no new one
// appears.
func (h *host) freeze() {
	if !h.alive() || h.stopped != nil {
		return
	}
	root := h.pid()
	_ = syscall.Kill(root, syscall.SIGSTOP)
	done := map[int]bool{root: true}
	h.stopped = []int{root}
	for round := 0; round < 5; round++ {
		added := false
		for _, p := range descendants(root) {
			if !done[p] {
				done[p] = true
				_ = syscall.Kill(p, syscall.SIGSTOP)
				h.stopped = append(h.stopped, p)
				added = true
			}
		}
		if !added {
			break
		}
	}
}

// thaw sends SIGCONT to everything freeze stopped, descendants first.
func (h *host) thaw() {
	for i := len(h.stopped) - 1; i >= 0; i-- {
		_ = syscall.Kill(h.stopped[i], syscall.SIGCONT)
	}
	h.stopped = nil
}

// destroy ends the host and everything under it, for cleanup.
func (h *host) destroy() {
	if h.stopped != nil {
		h.thaw()
	}
	if !h.alive() {
		return
	}
	kids := descendants(h.pid())
	_ = h.cmd.Process.Kill()
	for _, p := range kids {
		_ = syscall.Kill(p, syscall.SIGKILL)
	}
	<-h.exited
}

// descendants lists the pids below pid, from /proc.
func descendants(pid int) []int {
	var out []int
	for _, p := range proctree.Descendants(pid) {
		out = append(out, p.PID)
	}
	return out
}

// processAlive reports whether pid exists and is not a zombie.
func processAlive(pid int) bool { return !proctree.Gone(pid) }

// waitFor polls cond until it holds or timeout passes; it returns cond's
// last explanation and whether it held.
func waitFor(timeout time.Duration, cond func() (bool, string)) (bool, string) {
	deadline := time.Now().Add(timeout)
	for {
		ok, why := cond()
		if ok {
			return true, ""
		}
		if time.Now().After(deadline) {
			return false, why
		}
		time.Sleep(pollInterval) // bounded polling of observable state
	}
}

// waitStarted waits for the host's "host started" line.
func (h *host) waitStarted(t testing.TB, timeout time.Duration) bool {
	ok, why := waitFor(timeout, func() (bool, string) {
		if !h.alive() {
			return false, "exited"
		}
		return strings.Contains(h.logText(), "host started"), "no \"host started\" line"
	})
	if !ok {
		t.Errorf("%s (pid %d) did not start within %v: %s", h.name, h.pid(), timeout, why)
	}
	return ok
}
