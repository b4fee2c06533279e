package kernel

import (
	"testing"

	"github.com/ejob-io/ejob/core/cron"
)

// Jobs with the same cron and time zone share one parsed schedule; another
// zone or cron gets its own, and a bad cron is an error every time.
func TestScheduleShared(t *testing.T) {
	var s scheduleCache
	a, err := s.get("0 0 0 1 1 ? 2099", "")
	if err != nil {
		t.Fatal(err)
	}
	b, err := s.get("0 0 0 1 1 ? 2099", "")
	if err != nil {
		t.Fatal(err)
	}
	if a != b {
		t.Fatal("the same cron and zone were parsed twice")
	}
	c, err := s.get("0 0 0 1 1 ? 2099", "Asia/Tokyo")
	if err != nil {
		t.Fatal(err)
	}
	if c == a || c.(cron.Schedule).Location().String() != "Asia/Tokyo" {
		t.Fatalf("another zone got %v", c.(cron.Schedule).Location())
	}
	for range 2 {
		if _, err := s.get("61 * * * * ?", ""); err == nil {
			t.Fatal("a bad cron parsed")
		}
	}
	if len(s.scheds) != 2 {
		t.Fatalf("%d schedules kept, want 2", len(s.scheds))
	}
}
