package daemon_test

import (
	"github.com/ejob-io/ejob/internal/proctest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestConfigWithJobListeners: a file naming LOG and LOG_ONCE in
// jobListenerTypes is accepted by ejob run, and both listeners run (LOG on
// each trigger, LOG_ONCE once per trigger on the only instance); an
// unknown listener is rejected with the available listener types.
func TestConfigWithJobListeners(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "good.yaml")
	os.WriteFile(good, []byte(`elasticjob:
  jobs:
    listened:
      elasticJobType: SCRIPT
      cron: "0/1 * * * * ?"
      shardingTotalCount: 2
      jobListenerTypes: [LOG, log_once]
      props:
        script.command.line: "true"
        listener.log-once.started-timeout-milliseconds: "5000"
`), 0o644)
	var out proctest.Buffer
	cmd := exec.Command(ejobBin, "run", "-c", good)
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	deadline := time.Now().Add(30 * time.Second)
	for {
		s := out.String()
		if strings.Count(s, "Job 'listened' end.") >= 2 && strings.Contains(s, "distribute_once") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("listeners did not log begin/end:\n%s", s)
		}
		time.Sleep(50 * time.Millisecond) // bounded polling of observable output
	}
	_ = cmd.Process.Signal(syscall.SIGTERM)

	bad := filepath.Join(dir, "bad.yaml")
	os.WriteFile(bad, []byte(`elasticjob:
  jobs:
    j:
      elasticJobType: SCRIPT
      cron: "0 0 1 * * ?"
      shardingTotalCount: 2
      jobListenerTypes: [LOG, AUDIT]
      props:
        script.command.line: "true"
`), 0o644)
	b, err := exec.Command(ejobBin, "run", "-c", bad).CombinedOutput()
	if err == nil {
		t.Fatalf("ejob run accepted an unknown listener:\n%s", b)
	}
	for _, want := range []string{bad + ":7:", `unknown job listener type "AUDIT"`, "available: LOG, LOG_ONCE"} {
		if !strings.Contains(string(b), want) {
			t.Errorf("output lacks %q:\n%s", want, b)
		}
	}
}
