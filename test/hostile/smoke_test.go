package hostile

import (
	"net/http"
	"testing"
)

// TestHarnessServesAndLogsIn: the suite's harness starts `ejob serve` on a
// real ZooKeeper namespace and logs in with the generated admin password.
// Every other test of the suite stands on this.
func TestHarnessServesAndLogsIn(t *testing.T) {
	e := newEnv(t)
	cfg := e.write("ejob.yaml", e.config(""))
	_, base, pw := e.serve(cfg)
	c := login(t, base, "admin", pw)
	if status, body := c.call(http.MethodGet, "/api/jobs/getAllJobsBriefInfo", ""); status != http.StatusOK {
		t.Fatalf("jobs list: %d %s", status, body)
	}
}
