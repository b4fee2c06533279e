package testkit

import (
	"os"
	"path/filepath"
	"testing"
)

// TestCompleteLinesDropsALineBeingWritten pins what the e2e cluster test
// once failed on: it read the record file while a recorder's start line
// was half visible and reported the half as a bad record line.
func TestCompleteLinesDropsALineBeingWritten(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"", ""},
		{"S 1 2 {\"jobNa", ""},
		{"E 1 2\n", "E 1 2\n"},
		{"E 1 2\nS 3 4 {\"jobNa", "E 1 2\n"},
		{"E 1 2\nE 3 4\n", "E 1 2\nE 3 4\n"},
	} {
		if got := string(CompleteLines([]byte(c.in))); got != c.want {
			t.Errorf("CompleteLines(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

func TestReadLines(t *testing.T) {
	path := filepath.Join(t.TempDir(), "runs.txt")
	got, err := ReadLines(path)
	if err != nil || got != nil {
		t.Fatalf("ReadLines of a missing file = %q, %v; want no lines and no error", got, err)
	}
	if err := os.WriteFile(path, []byte("E 1 2\nS 3 4 {"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got, err := ReadLines(path); err != nil || string(got) != "E 1 2\n" {
		t.Fatalf("ReadLines = %q, %v; want the complete line only", got, err)
	}
	if _, err := ReadLines(t.TempDir()); err == nil {
		t.Fatal("ReadLines of a directory gave no error")
	}
}
