// Package testkit is what the tests of every package share: waiting on
// observable state with a deadline (Eventually) and a TestMain that fails
// the test binary when goroutines outlive its tests (Main, Run). Tests of
// examples/ keep their own copies: they may import public packages only.
package testkit

import (
	"fmt"
	"net"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"
)

// Eventually polls cond until it holds and fails the test (t.Fatalf, naming
// what) if it does not within the given time. It polls every millisecond at
// first and backs off to every 50 ms, so fast conditions cost little and
// slow ones do not spin. It is for waiting on observable state, never a
// sleep in disguise: cond must read the state the test waits for.
func Eventually(t testing.TB, within time.Duration, what string, cond func() bool) {
	t.Helper()
	if !Poll(within, cond) {
		t.Fatalf("timed out after %v waiting for %s", within, what)
	}
}

// Poll is Eventually for code that cannot fail a test itself (TestMain,
// benchmarks' setup, a test's helper goroutine): it reports whether cond
// held within the given time.
func Poll(within time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(within)
	wait := time.Millisecond
	for !cond() {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(wait) // bounded polling of the condition's state
		wait = min(2*wait, 50*time.Millisecond)
	}
	return true
}

// LeakWait is how long Run waits for goroutines to end after the tests.
const LeakWait = 10 * time.Second

// Main runs m's tests and exits; the binary fails when a goroutine started
// during the tests is still running LeakWait after they ended. Use it as
//
//	func TestMain(m *testing.M) { testkit.Main(m) }
func Main(m *testing.M, opts ...goleak.Option) {
	os.Exit(Run(m, opts...))
}

// Run runs m's tests and returns the exit code for os.Exit: non-zero when
// they failed, or when goroutines that were not running before Run outlive
// them by LeakWait (their stacks are printed). For a TestMain that sets up
// and tears down shared resources around the tests:
//
//	srv := start()
//	code := testkit.Run(m)
//	srv.Close()
//	os.Exit(code)
//
// opts are goleak's, for goroutines a package legitimately leaves (rare;
// say why where you pass one).
func Run(m *testing.M, opts ...goleak.Option) int {
	opts = append([]goleak.Option{goleak.IgnoreCurrent()}, opts...)
	code := m.Run()
	if code != 0 {
		return code // the failure says more than a leak would
	}
	var err error
	if Poll(LeakWait, func() bool { err = goleak.Find(opts...); return err == nil }) {
		return 0
	}
	fmt.Fprintf(os.Stderr, "goroutines outlived the tests by %v:\n%v\n", LeakWait, err)
	return 1
}

// FreePort returns a TCP port of 127.0.0.1 that was free at the time of
// the call (for a process the test starts, which opens it itself).
func FreePort(t testing.TB) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// Goroutines returns the stacks (as runtime.Stack prints them) of the
// goroutines of this process whose stack holds every one of frames (each
// a substring such as "ejob/core/coord.") and none of except: tests that
// check which goroutines a component keeps count them.
func Goroutines(frames, except []string) []string {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			buf = buf[:n]
			break
		}
		buf = make([]byte, 2*len(buf))
	}
	var out []string
next:
	for _, g := range strings.Split(string(buf), "\n\n") {
		for _, f := range frames {
			if !strings.Contains(g, f) {
				continue next
			}
		}
		for _, e := range except {
			if strings.Contains(g, e) {
				continue next
			}
		}
		out = append(out, g)
	}
	return out
}
