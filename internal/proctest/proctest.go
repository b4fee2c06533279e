// Package proctest holds what tests that drive real processes share: a
// goroutine-safe buffer for a process's (or logger's) output, and building
// the binaries they run. Examples keep
// their own copies, since they may import public packages only.
package proctest

import (
	"bytes"
	"fmt"
	"os/exec"
	"path/filepath"
	"sync"
)

// Buffer is an io.Writer safe for concurrent use, for collecting output
// that other goroutines write while a test reads it.
type Buffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

// Write appends p.
func (b *Buffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

// String returns everything written so far.
func (b *Buffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// GoBuild builds the Go package pkg into the executable out (with -race
// when race is set); the error carries the compiler's output.
func GoBuild(out, pkg string, race bool) error {
	args := []string{"build", "-o", out}
	if race {
		args = append(args, "-race")
	}
	if msg, err := exec.Command("go", append(args, pkg)...).CombinedOutput(); err != nil {
		return fmt.Errorf("go build %s: %w\n%s", pkg, err, msg)
	}
	return nil
}

// BuildHost builds the ejob binary (with -race when race is set) and
// test/recorder, the SCRIPT program of the end-to-end suites, into dir.
func BuildHost(dir string, race bool) (ejob, recorder string, err error) {
	ejob, recorder = filepath.Join(dir, "ejob"), filepath.Join(dir, "recorder")
	if err := GoBuild(ejob, "github.com/ejob-io/ejob/cmd/ejob", race); err != nil {
		return "", "", err
	}
	if err := GoBuild(recorder, "github.com/ejob-io/ejob/test/recorder", false); err != nil {
		return "", "", err
	}
	return ejob, recorder, nil
}
