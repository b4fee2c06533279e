package reg

import (
	"fmt"
	"testing"
)

// BenchmarkNotifyUntracked is what the recursive watch's callback costs for
// a change nobody tracks (another host's job) while 10,000 job roots are
// tracked: it must be dropped without a queue entry or an allocation.
func BenchmarkNotifyUntracked(b *testing.B) {
	s := NewSharedCache(nil)
	for j := range 10000 {
		root := fmt.Sprintf("/job%05d", j)
		s.roots[root] = []*CacheView{{s: s, root: root}}
	}
	ev := WatchEvent{Type: EventNodeCreated, Path: "/other-hosts-job/sharding/0/running"}
	b.ReportAllocs()
	for b.Loop() {
		s.notify(ev)
	}
	if len(s.inbox) != 0 {
		b.Fatalf("%d untracked notifications queued", len(s.inbox))
	}
}
