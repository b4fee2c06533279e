package reg

import "testing"

func TestDepths(t *testing.T) {
	for p, want := range map[string]int{"/": 0, "/a": 1, "/a/b": 2, "/a/b/c/d": 4} {
		if got := PathDepth(p); got != want {
			t.Errorf("PathDepth(%q) = %d, want %d", p, got, want)
		}
	}
	var d Depths
	d.Add("/job")
	d.Add("/other")
	d.Add("/" + "a/b/c/d/e/f/g/h/i/j/k/l/m/n/o/p/q") // past maxDepth
	if !d.Has(1) || d.Has(0) || d.Has(2) || !d.Has(17) || !d.Has(maxDepth) {
		t.Errorf("after adds: %v", d.n)
	}
	d.Remove("/job")
	if !d.Has(1) {
		t.Error("depth 1 gone while /other has it")
	}
	d.Remove("/other")
	if d.Has(1) {
		t.Error("depth 1 left after both were removed")
	}
}
