package cloud

import (
	"strconv"
	"testing"
	"time"

	"github.com/ejob-io/ejob/spi"
)

// A DAEMON item's fires count once each in the statistics, whatever the
// launcher's count does: a count that goes down for the same process (a
// fires report read again from the start) and comes back counts nothing
// twice; a stale report of an earlier process counts nothing; a new
// process (a recreated pod, its fire log empty) counts its fires from zero.
func TestDaemonFiresCountOnceWhenTheLaunchersCountGoesDown(t *testing.T) {
	s := New(Options{})
	l := &leaderState{fires: map[fireItem]fireCount{}, busy: map[fireItem]bool{}, ev: events{originals: map[fireItem]string{}}}
	fi := fireItem{"d", "f1", 0}
	tid := TaskID{Job: "d", Item: 0, Type: "READY", Slave: "n1", Fire: "f1"}
	first := time.Now()
	later := first.Add(time.Minute)
	steps := []struct {
		fires   int
		started time.Time
		want    int // successes counted so far
	}{
		{2, first, 0}, // first seen: the fires before are not this leader's to count
		{3, first, 1},
		{5, first, 3},
		{0, first, 3}, // the same process reports 0: nothing counted
		{5, first, 3}, // and back: the same five fires
		{6, first, 4},
		{0, later, 4}, // a new process counts from zero
		{6, first, 4}, // a stale report of the old process
		{2, later, 6}, // the new process's two fires
		{2, later, 6},
	}
	for i, st := range steps {
		fires, busy := map[fireItem]fireCount{}, map[fireItem]bool{}
		s.followFires(l, fi, tid, spi.ItemStatus{JobName: "d", FireID: "f1", State: spi.ItemRunning, Idle: true,
			Fires: st.fires, Started: st.started}, fires, busy)
		l.fires, l.busy = fires, busy
		if got := s.stats.since.success; got != st.want {
			t.Fatalf("step %d (fires %d): %d successes counted, want %d", i, st.fires, got, st.want)
		}
	}
}

// A job whose items fail waits before its next launch: the pause doubles
// with each fire that has a failed item up to the limit, the fire's other
// failed items changing nothing, and holds the job until its end.
func TestFailurePauseDoublesUpToTheLimit(t *testing.T) {
	s := New(Options{FailureBackoff: time.Minute})
	l := &leaderState{held: map[string]failurePause{}}
	now := time.Now()
	for i, want := range []time.Duration{time.Minute, 2 * time.Minute, 4 * time.Minute, MaxFailureBackoff, MaxFailureBackoff} {
		fire := "f" + strconv.Itoa(i)
		s.failed(l, "j", fire, now)
		// The fire's second failed item, a little later.
		s.failed(l, "j", fire, now.Add(time.Second))
		if got := l.held["j"].until.Sub(now); got != want {
			t.Fatalf("fire %d with 2 failed items: pause %s, want %s", i+1, got, want)
		}
		if !s.holding(l, "j", now.Add(want-time.Millisecond)) || s.holding(l, "j", now.Add(want)) {
			t.Fatalf("failure %d: held wrongly around the end of its pause %s", i+1, want)
		}
	}
	if s.holding(l, "other", now) {
		t.Fatal("a job that never failed is held")
	}
}
