package kernel_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/ejob-io/ejob/core/config"
	"github.com/ejob-io/ejob/core/reg/embedded"
	"github.com/ejob-io/ejob/internal/testkit"
)

// fireSeconds returns, per fire second, the items that ran in it.
func fireSeconds(runs []execution) map[time.Time]map[int]bool {
	per := map[time.Time]map[int]bool{}
	for _, r := range runs {
		if per[r.second] == nil {
			per[r.second] = map[int]bool{}
		}
		per[r.second][r.item] = true
	}
	return per
}

// fullSeconds counts the fire seconds in which all n items ran.
func fullSeconds(runs []execution, n int) int {
	full := 0
	for _, items := range fireSeconds(runs) {
		if len(items) == n {
			full++
		}
	}
	return full
}

// A job whose cron is a descriptor runs on the embedded registry like a
// Quartz job: every item in every fire. Its config is stored in the
// registry as written.
func TestEverySecondDescriptorJob(t *testing.T) {
	srv := embedded.NewServer()
	cfg := config.New("everyDescriptor", 2)
	cfg.Cron = "@every 1s"
	cfg.TimeZone = "Europe/Berlin"
	rec := &recorder{}
	startInstance(t, srv, "127.0.0.1@-@1", cfg, rec)
	testkit.Eventually(t, 20*time.Second, "three fires running both items", func() bool { return fullSeconds(rec.snapshot(), 2) >= 3 })
	admin, err := srv.Connect("sched-test")
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	data, _, err := admin.Get(context.Background(), "/everyDescriptor/config")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(data), "cron: '@every 1s'\n") {
		t.Errorf("stored config does not keep the cron as written:\n%s", data)
	}
}

// A job with a crontab that does not fire within the test runs when
// triggered, as a Quartz or one-off job does. (Live changes between kinds:
// core/coord's TestLiveCronChangeAcrossKinds.)
func TestCrontabJobRunsWhenTriggered(t *testing.T) {
	srv := embedded.NewServer()
	cfg := config.New("crontabTriggered", 2)
	cfg.Cron = "0 0 1 1 *" // midnight on New Year's Day
	rec := &recorder{}
	in := startInstance(t, srv, "127.0.0.1@-@1", cfg, rec)
	if err := in.sched.Trigger("crontabTriggered"); err != nil {
		t.Fatal(err)
	}
	testkit.Eventually(t, 10*time.Second, "the triggered run of both items", func() bool { return len(rec.snapshot()) == 2 })
	if runs := rec.snapshot(); runs[0].item == runs[1].item {
		t.Errorf("item %d ran twice, the other not at all", runs[0].item)
	}
}
