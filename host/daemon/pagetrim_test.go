package daemon_test

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"
)

var releasedLine = regexp.MustCompile(`released the binary.s start-up pages: .*rss_before_kib=(\d+) rss_after_kib=(\d+)`)

// TestHostReleasesStartupPages: once its start-up's tail has run, a real
// host drops its mappings of the binary's start-up pages and says what
// its resident size was before and after.
func TestHostReleasesStartupPages(t *testing.T) {
	if _, err := os.Stat("/proc/self/maps"); err != nil {
		t.Skip("needs /proc (Linux)")
	}
	t.Parallel()
	cfg := filepath.Join(t.TempDir(), "ejob.yaml")
	if err := os.WriteFile(cfg, []byte(`elasticjob:
  jobs:
    idle:
      elasticJobType: SCRIPT
      cron: "0 0 0 1 1 ? 2099"
      shardingTotalCount: 1
      props:
        script.command.line: /bin/true
`), 0o644); err != nil {
		t.Fatal(err)
	}
	h := runHost(t, os.Environ(), "run", "-c", cfg)
	h.waitLog("host started")
	h.waitLog("released the binary's start-up pages")
	m := releasedLine.FindStringSubmatch(h.logs.String())
	if m == nil {
		t.Fatalf("no sizes in the line:\n%s", h.logs.String())
	}
	before, _ := strconv.ParseInt(m[1], 10, 64)
	after, _ := strconv.ParseInt(m[2], 10, 64)
	t.Logf("host RSS %d KiB before the release, %d KiB after", before, after)
	if after >= before {
		t.Errorf("host RSS %d KiB after the release, %d KiB before", after, before)
	}
}
