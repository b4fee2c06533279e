package coord

import "testing"

// eventMarks compare event numbers as serial numbers: a check recorded
// covers the events posted before it began, across the counter's wrap,
// and an older check recorded after a newer one changes nothing.
func TestEventMarksWrap(t *testing.T) {
	var m eventMarks
	const top = ^uint32(0)
	m.checked.Store(top - 10) // the counts have run a long way
	m.checkedFrom(top - 1)
	for seq, want := range map[uint32]bool{top - 2: true, top - 1: true, top: false, 1: false} {
		if got := m.covered(seq); got != want {
			t.Errorf("checked %d: covered(%d) = %v, want %v", top-1, seq, got, want)
		}
	}
	m.checkedFrom(2)
	m.checkedFrom(top) // began before the one recorded: no change
	for seq, want := range map[uint32]bool{top: true, 1: true, 2: true, 3: false} {
		if got := m.covered(seq); got != want {
			t.Errorf("checked 2: covered(%d) = %v, want %v", seq, got, want)
		}
	}
}
