package spi

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"unicode/utf8"
)

// MaxOutputBytes is the cap on what one item of one execution keeps of its
// output: the last MaxOutputBytes bytes; what came before is cut and
// counted in Output.Cut.
const MaxOutputBytes = 64 << 10

// Output is what one item of one execution printed or returned: a
// SCRIPT's stdout and stderr interleaved line by line, each line prefixed
// by its stream (StdoutPrefix, StderrPrefix); an HTTP job's status line
// and the start of its response body; what a Go job type returns.
type Output struct {
	// Text is the output's tail, at most MaxOutputBytes bytes of valid
	// UTF-8.
	Text string
	// Cut counts the bytes dropped from the output's start to keep the
	// cap (0: Text is the whole output).
	Cut int64
}

// The line prefixes of a SCRIPT's output.
const (
	StdoutPrefix = "out| "
	StderrPrefix = "err| "
)

// IsZero reports whether there is no output.
func (o Output) IsZero() bool { return o.Text == "" && o.Cut == 0 }

// String is Text after a marker line saying how many bytes were cut, when
// some were: "[… 1234 bytes cut …]".
func (o Output) String() string {
	if o.Cut == 0 {
		return o.Text
	}
	return fmt.Sprintf("[… %d bytes cut …]\n%s", o.Cut, o.Text)
}

// TailOutput returns the last limit bytes of s (MaxOutputBytes when limit
// <= 0), cut at a character boundary, as an Output counting what it cut.
func TailOutput(s string, limit int) Output {
	if limit <= 0 {
		limit = MaxOutputBytes
	}
	if len(s) <= limit {
		return Output{Text: strings.ToValidUTF8(s, "\uFFFD")}
	}
	cut := len(s) - limit
	for cut < len(s) && !utf8.RuneStart(s[cut]) {
		cut++
	}
	return Output{Text: strings.ToValidUTF8(s[cut:], "\uFFFD"), Cut: int64(cut)}
}

// OutputBuffer is an io.Writer that keeps the last Limit bytes written to
// it (MaxOutputBytes when Limit <= 0) and counts the rest, in memory
// bounded by twice the limit. The zero value is ready to use; it is safe
// for concurrent use, so a SCRIPT's two streams can write into one.
type OutputBuffer struct {
	Limit int

	mu  sync.Mutex
	buf []byte
	cut int64
}

// Write keeps p's bytes; it never fails.
func (b *OutputBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.append(p)
	return len(p), nil
}

// WriteString is Write of a string.
func (b *OutputBuffer) WriteString(s string) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.append([]byte(s))
	return len(s), nil
}

// WriteLine writes prefix, line and a newline as one write, so that lines
// of concurrent writers do not mix.
func (b *OutputBuffer) WriteLine(prefix, line string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.append([]byte(prefix))
	b.append([]byte(line))
	b.append([]byte{'\n'})
}

func (b *OutputBuffer) limit() int {
	if b.Limit <= 0 {
		return MaxOutputBytes
	}
	return b.Limit
}

func (b *OutputBuffer) append(p []byte) {
	n := b.limit()
	if len(p) >= n {
		b.cut += int64(len(b.buf) + len(p) - n)
		b.buf = append(b.buf[:0], p[len(p)-n:]...)
		return
	}
	b.buf = append(b.buf, p...)
	if len(b.buf) > 2*n {
		drop := len(b.buf) - n
		b.cut += int64(drop)
		b.buf = append(b.buf[:0], b.buf[drop:]...)
	}
}

// Output returns what the buffer kept: its last Limit bytes, cut at a
// character boundary.
func (b *OutputBuffer) Output() Output {
	b.mu.Lock()
	defer b.mu.Unlock()
	o := TailOutput(string(b.buf), b.limit())
	o.Cut += b.cut
	return o
}

// LiveOutput is a running item's output as far as it has come, for a
// host to show while the item runs. The kernel attaches one to each item's
// ctx (WithLiveOutput): a job type in the same process writes its output
// into it as it is produced (it is an OutputBuffer); a transport that runs
// the item in another process sets Fetch to read that process's. Safe for
// concurrent use.
type LiveOutput struct {
	OutputBuffer

	mu    sync.Mutex
	fetch func(ctx context.Context) (Output, error)
}

// SetFetch makes Snapshot read the output with f (a transport: from the
// process that runs the item) instead of the buffer.
func (l *LiveOutput) SetFetch(f func(ctx context.Context) (Output, error)) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.fetch = f
}

// Snapshot returns the output so far: Fetch's, when set, else what was
// written into the buffer.
func (l *LiveOutput) Snapshot(ctx context.Context) (Output, error) {
	l.mu.Lock()
	f := l.fetch
	l.mu.Unlock()
	if f != nil {
		return f(ctx)
	}
	return l.Output(), nil
}

type liveOutputKey struct{}

// WithLiveOutput returns a copy of ctx carrying l.
func WithLiveOutput(ctx context.Context, l *LiveOutput) context.Context {
	return context.WithValue(ctx, liveOutputKey{}, l)
}

// LiveOutputFrom returns the LiveOutput ctx carries, or nil.
func LiveOutputFrom(ctx context.Context) *LiveOutput {
	l, _ := ctx.Value(liveOutputKey{}).(*LiveOutput)
	return l
}
