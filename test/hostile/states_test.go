package hostile

import (
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// TestRefusedTriggerAndUnknownHistoryJob: against a real host, a trigger
// of a disabled job exits 4 with the reason and runs nothing (it once
// printed "triggered idle on 1 instance(s)" and exited 0), and `ejob
// history --job nosuch` exits 3 saying the job is unknown (it once
// printed "(no rows)" and exited 0). A one-off job never triggered is
// NEVER_RUN in `ejob jobs` (it once showed SHARDING_FLAG).
func TestRefusedTriggerAndUnknownHistoryJob(t *testing.T) {
	e := newEnv(t)
	cfg := e.write("ejob.yaml", e.config("")+"  tracing:\n    type: RDB\n    dataSource: {url: 'jdbc:sqlite:"+filepath.Join(e.dir, "trace.db")+"'}\n")
	host := e.start("host", "run", "-c", cfg)
	host.waitLog(t, 60*time.Second, regexp.MustCompile(`host started`))

	r := e.ejob(60*time.Second, "jobs", "-c", cfg)
	if r.code != 0 || !regexp.MustCompile(`(?m)^idle\s+\(one-off\)\s+1\s+1\s+NEVER_RUN$`).MatchString(r.stdout) {
		t.Errorf("ejob jobs: exit %d\n%s%s\nwant idle NEVER_RUN", r.code, r.stdout, r.stderr)
	}
	if r := e.ejob(60*time.Second, "disable", "idle", "-c", cfg); r.code != 0 {
		t.Fatalf("disable: exit %d %s", r.code, r.stderr)
	}
	r = e.ejob(60*time.Second, "trigger", "idle", "-c", cfg)
	if r.code != 4 || !strings.Contains(r.stderr, `job "idle" is disabled on every server with a live instance`) || strings.Contains(r.stdout, "triggered") {
		t.Errorf("trigger of a disabled job: exit %d\nstdout %s\nstderr %s\nwant exit 4 with the reason", r.code, r.stdout, r.stderr)
	}
	if r := e.ejob(60*time.Second, "enable", "idle", "-c", cfg); r.code != 0 {
		t.Fatalf("enable: exit %d %s", r.code, r.stderr)
	}
	r = e.ejob(60*time.Second, "trigger", "idle", "-c", cfg)
	if r.code != 0 || !strings.Contains(r.stdout, "triggered idle on 1 instance: ") {
		t.Errorf("trigger of an enabled job: exit %d\nstdout %s\nstderr %s", r.code, r.stdout, r.stderr)
	}

	r = e.ejob(60*time.Second, "history", "-c", cfg, "--job", "nosuch")
	if r.code != 3 || !strings.Contains(r.stderr, `"nosuch" is unknown`) || strings.Contains(r.stdout, "(no rows)") {
		t.Errorf("history of an unknown job: exit %d\nstdout %s\nstderr %s\nwant exit 3 saying it is unknown", r.code, r.stdout, r.stderr)
	}
	if r := e.ejob(60*time.Second, "history", "-c", cfg, "--job", "idle", "--since", "1s", "--success", "false"); r.code != 0 {
		t.Errorf("history of a known job: exit %d\nstdout %s\nstderr %s", r.code, r.stdout, r.stderr)
	}
}
