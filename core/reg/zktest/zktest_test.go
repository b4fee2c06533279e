package zktest_test

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ejob-io/ejob/core/reg/zktest"
)

// ownerEnv makes the test binary, run again as a child, start a server
// and print its directory, then wait to be killed.
const ownerEnv = "EJOB_ZKTEST_OWNER_CHILD"

func TestMain(m *testing.M) {
	if os.Getenv(ownerEnv) != "" {
		s, err := zktest.Launch(zktest.Options{})
		if err != nil {
			os.Stderr.WriteString(err.Error() + "\n")
			os.Exit(2)
		}
		os.Stdout.WriteString(s.Dir() + "\n")
		select {} // until killed
	}
	os.Exit(m.Run())
}

// A server outlives a test binary killed before its cleanups (go test's
// timeout, SIGKILL) unless its watchdog stops it: six orphaned ZooKeepers
// were once found on the test machine.
func TestServerStopsWhenItsTestProcessIsKilled(t *testing.T) {
	child := exec.Command(os.Args[0], "-test.run=^$")
	child.Env = append(os.Environ(), ownerEnv+"=1")
	out, err := child.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	child.Stderr = os.Stderr
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		_ = child.Process.Kill()
		t.Fatalf("child printed no server directory: %v", err)
	}
	dir := strings.TrimSpace(line)
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	raw, err := os.ReadFile(filepath.Join(dir, "pid"))
	if err != nil {
		_ = child.Process.Kill()
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(raw)))
	if err != nil {
		_ = child.Process.Kill()
		t.Fatal(err)
	}
	if err := syscall.Kill(pid, 0); err != nil {
		_ = child.Process.Kill()
		t.Fatalf("server pid %d not running: %v", pid, err)
	}
	if err := child.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = child.Wait()
	deadline := time.Now().Add(30 * time.Second)
	for syscall.Kill(pid, 0) == nil {
		if time.Now().After(deadline) {
			_ = syscall.Kill(pid, syscall.SIGKILL)
			t.Fatalf("ZooKeeper (pid %d) still runs 30 s after its test process was killed", pid)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
