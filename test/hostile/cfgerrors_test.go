package hostile

import (
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/ejob-io/ejob/internal/testkit"
)

// TestHostileConfigEveryProblem: `ejob run -c bad.yaml` with six problems
// in three sections (the ejob: host settings, elasticjob.dump and a job),
// one of them a plugins directory that does not exist, must print all six,
// each as FILE:LINE: key: message sorted by line, exit non-zero and run
// nothing; a missing pluginsDir must not hide the others.
func TestHostileConfigEveryProblem(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.write("bad.yaml", `ejob:
  drainTimeout: 10
  pluginsDir: ./nope
  logLevel: loud
elasticjob:
  regCenter:
    serverLists: `+zk.Addr()+`
    namespace: `+e.ns+`
  dump:
    address: example.com
  jobs:
    a:
      elasticJobType: SCRIPT
      cron: "bad cron"
      shardingTotalCount: x
`)
	r := e.ejob(30*time.Second, "run", "-c", "bad.yaml")
	if r.code == 0 {
		t.Fatalf("exit code 0 for a bad file\nstderr:\n%s", r.stderr)
	}
	want := []string{
		`bad\.yaml:2: ejob\.drainTimeout: `,
		`bad\.yaml:3: ejob\.pluginsDir: .*nope`,
		`bad\.yaml:4: ejob\.logLevel: `,
		`bad\.yaml:10: elasticjob\.dump\.address: `,
		`bad\.yaml:14: elasticjob\.jobs\.a\.cron: `,
		`bad\.yaml:15: elasticjob\.jobs\.a\.shardingTotalCount: `,
	}
	out := r.stdout + r.stderr
	last := -1
	for _, w := range want {
		loc := regexp.MustCompile(`(?m)` + w).FindStringIndex(out)
		if loc == nil {
			t.Errorf("no line matching %q", w)
			continue
		}
		if loc[0] < last {
			t.Errorf("%q is out of line order", w)
		}
		last = loc[0]
	}
	if t.Failed() {
		t.Logf("output:\n%s", out)
	}
	if strings.Contains(out, "started") {
		t.Errorf("a bad file started something:\n%s", out)
	}
}

// TestHostileConfigMissingPluginsDir: a pluginsDir that does not exist in
// an otherwise sound ejob: section must be reported at its key's line with
// its key, together with the problems of the jobs, and exit non-zero.
func TestHostileConfigMissingPluginsDir(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.write("bad.yaml", `ejob:
  pluginsDir: ./nope
elasticjob:
  jobs:
    a:
      elasticJobType: SCRIPT
      cron: "bad cron"
      shardingTotalCount: 1
`)
	r := e.ejob(30*time.Second, "run", "-c", "bad.yaml")
	out := r.stdout + r.stderr
	if r.code == 0 {
		t.Fatalf("exit code 0 for a bad file\noutput:\n%s", out)
	}
	for _, w := range []string{`bad\.yaml:2: ejob\.pluginsDir: .*nope`, `bad\.yaml:7: elasticjob\.jobs\.a\.cron: `} {
		if !regexp.MustCompile(`(?m)` + w).MatchString(out) {
			t.Errorf("no line matching %q\noutput:\n%s", w, out)
		}
	}
}

// TestHostileFailureLogPlainText: a SCRIPT job that fails, with the LOG
// error handler (in the builtin plugin process, its line re-logged by the
// host), must log its cause chain as plain text without Go type names
// (no "caused by *fmt.wrapError", no "*transport.remoteError"), and its
// fields in one fixed order on every line.
func TestHostileFailureLogPlainText(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	cfg := e.write("fail.yaml", e.config(`    failing:
      elasticJobType: SCRIPT
      cron: "* * * * * ?"
      shardingTotalCount: 2
      jobErrorHandlerType: LOG
      props:
        script.command.line: "false"
`))
	p := e.start("run", "run", "-c", cfg)
	defer p.stop(10 * time.Second)
	// One log entry runs from its timestamp to the next (a multi-line
	// value, the detail, spans lines).
	entries := func() []string {
		var out []string
		for _, en := range regexp.MustCompile(`(?m)^\d{4}-\d\d-\d\dT`).Split(p.out.String(), -1) {
			if strings.Contains(en, "Job 'failing' exception occur in job processing") {
				out = append(out, en)
			}
		}
		return out
	}
	testkit.Eventually(t, 60*time.Second, "four failure entries", func() bool { return len(entries()) >= 4 })
	var shapes []string
	for _, en := range entries() {
		if m := regexp.MustCompile(`\*[a-z]+\.[A-Za-z]+`).FindString(en); m != "" {
			t.Errorf("a Go type name %q in: %s", m, en)
		}
		if !strings.Contains(en, "caused by: ") {
			t.Errorf("no cause chain in: %s", en)
		}
		var keys []string
		for _, m := range regexp.MustCompile(`(?:^|\s)([@a-z_]+)=`).FindAllStringSubmatch(en, -1) {
			keys = append(keys, m[1])
		}
		shapes = append(shapes, strings.Join(keys, ","))
	}
	for _, s := range shapes[1:] {
		if s != shapes[0] {
			t.Errorf("fields in different orders: %q and %q", shapes[0], s)
		}
	}
	if t.Failed() {
		t.Logf("output:\n%s", p.out.String())
	}
}
