package kernel_test

import (
	"bytes"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/ejob-io/ejob/core/config"
	"github.com/ejob-io/ejob/core/reg/embedded"
	"github.com/ejob-io/ejob/internal/testkit"
)

// logBuffer is an io.Writer safe for the scheduler's goroutines.
type logBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// TestStartReschedulesOnlyWhenTheRegistryCronDiffers: the registry's
// config wins at start (overwrite off), so a job whose local cron differs
// follows the registry's, and says so once; a job whose local cron is the
// registry's keeps its schedule and logs nothing about it (a host of 1,000
// jobs must not log "rescheduling" 1,000 times per start).
func TestStartReschedulesOnlyWhenTheRegistryCronDiffers(t *testing.T) {
	srv := embedded.NewServer()
	// The first instance writes the config: every second.
	first := config.New("cronWins", 1)
	first.Cron = "* * * * * ?"
	rec := &recorder{}
	a := startInstance(t, srv, "127.0.0.1@-@1", first, rec)
	a.stop(t)

	start := func(id, cron string) (*logBuffer, *recorder) {
		t.Helper()
		logs, r := &logBuffer{}, &recorder{}
		cfg := config.New("cronWins", 1)
		cfg.Cron = cron
		startInstanceLogging(t, srv, id, cfg, r.runner(id, 10*time.Millisecond),
			hclog.New(&hclog.LoggerOptions{Name: id, Level: hclog.Info, Output: logs}))
		return logs, r
	}

	// A local cron of the year 2099 never fires here: runs prove the
	// registry's every-second cron is followed.
	logs, r := start("127.0.0.1@-@2", "0 0 0 1 1 ? 2099")
	testkit.Eventually(t, 10*time.Second, "a run on the registry's every-second cron", func() bool {
		return len(r.snapshot()) > 0
	})
	if n := strings.Count(logs.String(), "rescheduling"); n != 1 {
		t.Errorf("a differing local cron: %d \"rescheduling\" lines, want 1:\n%s", n, logs.String())
	}

	logs, r = start("127.0.0.1@-@3", "* * * * * ?")
	testkit.Eventually(t, 10*time.Second, "a run on the same cron", func() bool {
		return len(r.snapshot()) > 0
	})
	if strings.Contains(logs.String(), "rescheduling") {
		t.Errorf("the registry's cron is the local one, yet the job was rescheduled:\n%s", logs.String())
	}
}
