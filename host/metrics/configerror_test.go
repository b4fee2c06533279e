package metrics_test

import (
	"errors"
	"maps"
	"strings"
	"sync"
	"testing"

	"github.com/ejob-io/ejob/host/metrics"
)

// ejob_job_config_error and the /readyz detail follow the jobs'
// configuration errors at each read: 1 and a line naming the job and why
// while its configuration is refused, 0 and no line once it is valid.
func TestJobConfigErrors(t *testing.T) {
	mx := metrics.New()
	if d := mx.ReadyDetail(); d != nil {
		t.Fatalf("ReadyDetail before JobConfigErrors = %q", d)
	}
	var mu sync.Mutex
	errs := map[string]error{"good": nil, "bad": errors.New("shardingTotalCount: 1000000000 is above the limit of 1000")}
	mx.JobConfigErrors(func() map[string]error {
		mu.Lock()
		defer mu.Unlock()
		return maps.Clone(errs)
	})
	out := scrape(t, mx)
	for _, want := range []string{`ejob_job_config_error{job="bad"} 1`, `ejob_job_config_error{job="good"} 0`} {
		if !strings.Contains(out, want) {
			t.Errorf("scrape lacks %s", want)
		}
	}
	d := mx.ReadyDetail()
	if len(d) != 1 || !strings.Contains(d[0], `job "bad"`) || !strings.Contains(d[0], "limit of 1000") {
		t.Errorf("ReadyDetail = %q", d)
	}
	mu.Lock()
	errs["bad"] = nil
	mu.Unlock()
	if out := scrape(t, mx); !strings.Contains(out, `ejob_job_config_error{job="bad"} 0`) {
		t.Errorf("after the fix the scrape lacks bad 0")
	}
	if d := mx.ReadyDetail(); len(d) != 0 {
		t.Errorf("ReadyDetail after the fix = %q", d)
	}
}
