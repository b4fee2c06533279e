package daemon_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

var ejobBin string // built once in TestMain

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "ejob-daemon-test")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	ejobBin = filepath.Join(dir, "ejob")
	if out, err := exec.Command("go", "build", "-race", "-o", ejobBin, "github.com/ejob-io/ejob/cmd/ejob").CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "build ejob: %v\n%s", err, out)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// recordScript writes a script that appends its last argument (the
// sharding context JSON) to out, one line per item run.
func recordScript(t *testing.T, dir, out string) string {
	t.Helper()
	p := filepath.Join(dir, "record.sh")
	body := "#!/bin/sh\nprintf '%s\\n' \"$1\" >> " + out + "\n"
	if err := os.WriteFile(p, []byte(body), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

type shardingContext struct {
	JobName           string `json:"jobName"`
	TaskID            string `json:"taskId"`
	ShardingItem      int    `json:"shardingItem"`
	ShardingParameter string `json:"shardingParameter"`
}

func readRecords(t *testing.T, path string) []shardingContext {
	t.Helper()
	data, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	var out []shardingContext
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		var c shardingContext
		if err := json.Unmarshal(sc.Bytes(), &c); err != nil {
			continue // a line being written
		}
		out = append(out, c)
	}
	return out
}

func TestStandaloneHostRunsScriptJobAndDrainsOnSIGTERM(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "runs.txt")
	script := recordScript(t, dir, out)
	cfg := filepath.Join(dir, "ejob.yaml")
	os.WriteFile(cfg, []byte(fmt.Sprintf(`elasticjob:
  jobs:
    standalone-script:
      elasticJobType: SCRIPT
      cron: "* * * * * ?"
      sharding-total-count: 3
      shardingItemParameters: 0=Beijing,1=Shanghai,2=Guangzhou
      props:
        script.command.line: "%s"
ejob:
  drainTimeout: 10s
`, script)), 0o644)

	h := runHost(t, nil, "run", "-c", cfg)
	deadline := time.Now().Add(30 * time.Second)
	for {
		recs := readRecords(t, out)
		perTask := map[string]map[int]string{}
		for _, r := range recs {
			if perTask[r.TaskID] == nil {
				perTask[r.TaskID] = map[int]string{}
			}
			perTask[r.TaskID][r.ShardingItem] = r.ShardingParameter
		}
		if len(recs) >= 6 {
			for _, items := range perTask {
				if fmt.Sprint(items) != "map[0:Beijing 1:Shanghai 2:Guangzhou]" {
					t.Fatalf("items and parameters = %v", items)
				}
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("only %d item runs recorded; host output:\n%s", len(recs), h.logs)
		}
		time.Sleep(50 * time.Millisecond) // bounded polling of the record file
	}
	h.signal(syscall.SIGTERM)
	logs := h.waitExit(30 * time.Second)
	for _, want := range []string{"running standalone on the embedded registry", "shutting down", "shut down"} {
		if !strings.Contains(logs, want) {
			t.Errorf("host output lacks %q", want)
		}
	}
}

func TestBadConfigFailsBeforeAnythingStarts(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "bad.yaml")
	os.WriteFile(cfg, []byte(`elasticjob:
  jobs:
    j:
      elasticJobType: SCRIPTS
      cron: "0 0 25 * * ?"
      shardingTotalCount: 2
`), 0o644)
	out, err := exec.Command(ejobBin, "run", "-c", cfg).CombinedOutput()
	if err == nil {
		t.Fatalf("ejob run accepted a bad file:\n%s", out)
	}
	for _, want := range []string{cfg + ":4:", `unknown job type "SCRIPTS"`, "SCRIPT", cfg + ":5:", "hour field"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(string(out), "host started") {
		t.Errorf("the host started:\n%s", out)
	}
}
