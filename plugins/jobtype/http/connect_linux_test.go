package httpjob_test

import (
	"context"
	"errors"
	"net"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	httpjob "github.com/ejob-io/ejob/plugins/jobtype/http"
)

// fullListener returns the address of a loopback listener whose accept
// queue is full (backlog 0, never accepted, filled by dials), so that a
// further connect gets no answer and must time out. Linux drops a SYN
// when the accept queue is full.
func fullListener(t *testing.T) string {
	t.Helper()
	fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = syscall.Close(fd) })
	if err := syscall.Bind(fd, &syscall.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Listen(fd, 0); err != nil {
		t.Fatal(err)
	}
	sa, err := syscall.Getsockname(fd)
	if err != nil {
		t.Fatal(err)
	}
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(sa.(*syscall.SockaddrInet4).Port))
	for range 8 {
		c, err := net.DialTimeout("tcp", addr, 200*time.Millisecond)
		if err != nil {
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				return addr // the queue is full: connects now hang
			}
			t.Fatalf("filling the accept queue: %v", err)
		}
		t.Cleanup(func() { _ = c.Close() })
	}
	t.Skip("could not fill the accept queue of a loopback listener; no connect timeout to test")
	return ""
}

// TestConnectTimeout: a connect that gets no answer fails after
// http.connect.timeout.milliseconds, reported as a connect timeout (not a
// read timeout, not the job's context).
func TestConnectTimeout(t *testing.T) {
	t.Parallel()
	addr := fullListener(t)
	start := time.Now()
	err := execute(t.Context(), httpjob.New(&recLogger{}), testContext, map[string]string{
		httpjob.PropURI: "http://" + addr + "/job", httpjob.PropMethod: "GET",
		httpjob.PropConnectTimeout: "300", httpjob.PropReadTimeout: "60000",
	})
	took := time.Since(start)
	if err == nil || !strings.Contains(err.Error(), "connect timed out after 300ms (http.connect.timeout.milliseconds)") {
		t.Fatalf("Execute = %v, want a connect timeout", err)
	}
	if errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("a connect timeout is not the job's deadline: %v", err)
	}
	if took < 250*time.Millisecond || took > 5*time.Second {
		t.Errorf("took %v, want about 300ms", took)
	}
	t.Log(err)
}
