package testkit

import (
	"os"
	"os/exec"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

func TestMain(m *testing.M) { Main(m) }

func TestPollSeesALateCondition(t *testing.T) {
	var n atomic.Int32
	if !Poll(5*time.Second, func() bool { return n.Add(1) >= 5 }) {
		t.Fatal("Poll gave up on a condition that became true")
	}
	if got := n.Load(); got != 5 {
		t.Fatalf("cond called %d times, want 5 (Poll must stop once it holds)", got)
	}
}

func TestPollGivesUp(t *testing.T) {
	start := time.Now()
	if Poll(30*time.Millisecond, func() bool { return false }) {
		t.Fatal("Poll reported a condition that never held")
	}
	if time.Since(start) < 30*time.Millisecond {
		t.Fatal("Poll gave up before its time")
	}
}

// failRecorder records Fatalf instead of stopping the test.
type failRecorder struct {
	testing.TB
	msg string
}

func (f *failRecorder) Helper() {}
func (f *failRecorder) Fatalf(format string, args ...any) {
	f.msg = format
}

func TestEventuallyFailsNamingWhat(t *testing.T) {
	r := &failRecorder{TB: t}
	Eventually(r, 10*time.Millisecond, "the moon", func() bool { return false })
	if r.msg == "" {
		t.Fatal("Eventually did not fail on a condition that never held")
	}
}

// TestRunReportsLeaks runs a test binary whose test leaks a goroutine, and
// one whose test does not.
func TestRunReportsLeaks(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs another test binary")
	}
	for leak, wantFail := range map[string]bool{"1": true, "0": false} {
		cmd := exec.Command("go", "test", "-count=1", "./testdata/leaky")
		cmd.Env = append(os.Environ(), "EJOB_TESTKIT_LEAK="+leak)
		out, err := cmd.CombinedOutput()
		if failed := err != nil; failed != wantFail {
			t.Errorf("EJOB_TESTKIT_LEAK=%s: failed=%v, want %v:\n%s", leak, failed, wantFail, out)
		}
		if wantFail && !strings.Contains(string(out), "goroutines outlived the tests") {
			t.Errorf("the leak report lacks its heading:\n%s", out)
		}
	}
}

func TestAPIStatusReadsTheEnvelopesErrorCode(t *testing.T) {
	for name, tc := range map[string]struct {
		status int
		body   string
		want   int
	}{
		"error in a 200":     {200, `{"success":false,"errorCode":403,"errorMsg":"Unauthorized.","model":null}`, 403},
		"success":            {200, `{"success":true,"errorCode":0,"errorMsg":null,"model":[]}`, 200},
		"bare count":         {200, `3`, 200},
		"real status":        {404, `{"success":false,"errorCode":404,"errorMsg":"no job"}`, 404},
		"not JSON":           {200, `ok`, 200},
		"JSON, not envelope": {200, `{"errorCode":400}`, 200},
	} {
		t.Run(name, func(t *testing.T) {
			if got := APIStatus(tc.status, []byte(tc.body)); got != tc.want {
				t.Errorf("APIStatus(%d, %s) = %d, want %d", tc.status, tc.body, got, tc.want)
			}
		})
	}
}
