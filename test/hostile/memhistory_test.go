package hostile

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/ejob-io/ejob/internal/testkit"
)

// memoryConfig is a standalone file without elasticjob.tracing: one
// one-off SCRIPT job "flaky" whose one item prints on both streams and
// fails.
const memoryConfig = `elasticjob:
  jobs:
    flaky:
      elasticJobType: SCRIPT
      shardingTotalCount: 1
      props:
        script.command.line: "/bin/sh -c 'echo step 1 done; echo cannot reach db for item 0 >&2; exit 3'"
`

// TestStandaloneMemoryHistoryFromTheCLI: a standalone host without
// elasticjob.tracing keeps its recent runs in memory, and the CLI reads
// them over the host's control socket: `ejob history -c FILE --output`
// shows a failed SCRIPT item's output (both streams marked) and whole
// cause, `--id` the same run, `ejob job show` the item's last result
// FAILED with its time, `ejob history purge` empties the memory. The
// history endpoints of the socket refuse an oversized body (413) and bad
// JSON (400) while the host runs on. With no host running, history says
// how to start one. `ejob history` on such a file used to answer only
// that the console shows the in-memory history.
func TestStandaloneMemoryHistoryFromTheCLI(t *testing.T) {
	e := newEnv(t)
	const file = "memory.yaml"
	e.write(file, memoryConfig)
	if r := e.ejob(30*time.Second, "history", "-c", file, "--job", "flaky"); r.code != 1 ||
		!strings.Contains(r.stderr, "no ejob host is running on "+file) || !strings.Contains(r.stderr, "start one with `ejob run -c "+file+"`") {
		t.Errorf("history without a host: exit %d\n%s", r.code, r.stderr)
	}
	host := e.start("host", "run", "-c", file)
	host.waitLog(t, 60*time.Second, hostStarted)
	before := time.Now().Add(-time.Second)
	e.ok("trigger", "flaky", "-c", file)

	var id string
	testkit.Eventually(t, 30*time.Second, "the failed run in the in-memory history", func() bool {
		var page struct {
			Executions []struct {
				ID           string  `json:"id"`
				CompleteTime *string `json:"completeTime"`
				Success      bool    `json:"success"`
			} `json:"executions"`
		}
		out := e.ok("history", "-c", file, "--job", "flaky", "--json")
		if err := json.Unmarshal([]byte(out), &page); err != nil {
			t.Fatalf("history --json: %v\n%s", err, out)
		}
		if len(page.Executions) == 1 && page.Executions[0].CompleteTime != nil && !page.Executions[0].Success {
			id = page.Executions[0].ID
			return true
		}
		return false
	})
	for _, args := range [][]string{{"--job", "flaky", "--output"}, {"--id", id}} {
		out := e.ok(append([]string{"history", "-c", file}, args...)...)
		for _, want := range []string{"flaky item 0", "FAILED", "id " + id, "out| step 1 done", "err| cannot reach db for item 0",
			`stderr tail: "cannot reach db for item 0"`} {
			if !strings.Contains(out, want) {
				t.Errorf("history %v lacks %q:\n%s", args, want, out)
			}
		}
	}

	out := e.ok("job", "show", "flaky", "-c", file)
	row := regexp.MustCompile(`(?m)^0\s.*\sFAILED (\d{4}-\d\d-\d\d \d\d:\d\d:\d\d): job "flaky" item 0: .*stderr tail: "cannot reach db for item 0"$`).FindStringSubmatch(out)
	if row == nil || !strings.Contains(out, "LAST RESULT") {
		t.Fatalf("job show lacks item 0's last result FAILED with its time:\n%s", out)
	}
	if at, err := time.ParseInLocation(time.DateTime, row[1], time.Local); err != nil || at.Before(before.Truncate(time.Second)) || at.After(time.Now()) {
		t.Errorf("last result time %s (%v), want between %s and now", row[1], err, before.Format(time.DateTime))
	}
	var v struct {
		LastResults []struct {
			Item    int       `json:"item"`
			Success bool      `json:"success"`
			Time    time.Time `json:"time"`
			ID      string    `json:"id"`
		} `json:"lastResults"`
	}
	if out := e.ok("job", "show", "flaky", "-c", file, "--json"); json.Unmarshal([]byte(out), &v) != nil ||
		len(v.LastResults) != 1 || v.LastResults[0].Success || v.LastResults[0].ID != id || v.LastResults[0].Time.Before(before) {
		t.Errorf("job show --json last results: %+v\n%s", v.LastResults, out)
	}

	sock := socketLine.FindStringSubmatch(host.out.String())
	if sock == nil {
		t.Fatalf("the host did not log its control socket:\n%s", host.out.String())
	}
	post := func(op string, body []byte) string {
		t.Helper()
		raw := fmt.Appendf(nil, "POST /tracing/v1/%s HTTP/1.1\r\nHost: ejob\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n", op, len(body))
		return sendRaw(t, sock[1], append(raw, body...))
	}
	for name, c := range map[string]struct {
		op   string
		body []byte
		want string
	}{
		"1 MiB body":    {"executions", append([]byte(`{"JobName":"`), bytes.Repeat([]byte("x"), 1<<20)...), "413"},
		"bad JSON":      {"executions", []byte(`{"JobName":`), "400"},
		"unknown field": {"output", []byte(`{"ID":"x","Path":"/"}`), "400"},
	} {
		if got := post(c.op, c.body); !strings.Contains(got, " "+c.want+" ") {
			t.Errorf("%s: answer %q, want status %s", name, got, c.want)
		}
	}
	if !host.alive() {
		t.Fatalf("the host exited: %v", host.err)
	}

	if out := e.ok("history", "purge", "-c", file, "--older-than", "0s"); !strings.Contains(out, "deleted 1 executions (1 with output)") {
		t.Errorf("history purge:\n%s", out)
	}
	if out := e.ok("history", "-c", file, "--job", "flaky"); !strings.Contains(out, "(no rows)") {
		t.Errorf("history after the purge:\n%s", out)
	}
}

// TestServeShowsAStandaloneHostsMemoryHistory: `ejob serve -c FILE` for
// a standalone file without elasticjob.tracing serves the event trace of
// the host running on the file from that host's memory: the REST API's
// executions list the failed run.
func TestServeShowsAStandaloneHostsMemoryHistory(t *testing.T) {
	e := newEnv(t)
	cfg := e.write("memory.yaml", memoryConfig)
	host := e.start("host", "run", "-c", cfg)
	host.waitLog(t, 60*time.Second, hostStarted)
	e.ok("trigger", "flaky", "-c", cfg)
	_, base, pw := e.serve(cfg)
	c := login(t, base, "admin", pw)
	testkit.Eventually(t, 30*time.Second, "the failed run in the REST event trace", func() bool {
		status, body := c.call(http.MethodPost, "/api/event-trace/execution", `{"jobName":"flaky"}`)
		return status == http.StatusOK && strings.Contains(string(body), `"jobName":"flaky"`) &&
			strings.Contains(string(body), "cannot reach db for item 0")
	})
}
