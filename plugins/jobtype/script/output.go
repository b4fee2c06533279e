package script

import (
	"bytes"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/ejob-io/ejob/spi"
)

// Output limits.
const (
	// maxLineBytes is the longest line logged as one entry; a longer one
	// is logged in pieces.
	maxLineBytes = 16 << 10
	// tailLines and tailBytes bound the stderr tail an ExitError carries.
	tailLines = 20
	tailBytes = 4 << 10
)

// lineLogger is the io.Writer a script's stdout or stderr is copied to: it
// logs every complete line through log, with the fields job, item and
// stream, copies it into the item's output behind its stream's prefix,
// and for stderr keeps the last lines for ExitError. exec.Cmd
// writes from one goroutine; the mutex makes flush and tail safe to call
// after Wait even if a copy was abandoned at WaitDelay.
type lineLogger struct {
	log      func(msg string, args ...any)
	fields   []any
	keepTail bool
	// out is the item's output, shared by both streams; prefix marks this
	// stream's lines in it.
	out    *spi.OutputBuffer
	prefix string

	mu    sync.Mutex
	buf   []byte
	lines []string // the last tailLines lines, when keepTail
}

func newLineLogger(log func(string, ...any), job string, item int, stream string, keepTail bool, out *spi.OutputBuffer, prefix string) *lineLogger {
	return &lineLogger{log: log, fields: []any{"job", job, "item", item, "stream", stream}, keepTail: keepTail, out: out, prefix: prefix}
}

// Write logs the complete lines in p and keeps the rest for the next
// Write or flush. It never fails.
func (w *lineLogger) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf = append(w.buf, p...)
	rest := w.buf
	for {
		i := bytes.IndexByte(rest, '\n')
		if i < 0 {
			break
		}
		w.emit(rest[:i])
		rest = rest[i+1:]
	}
	for len(rest) >= maxLineBytes {
		cut := maxLineBytes
		for cut > 0 && !utf8.RuneStart(rest[cut]) {
			cut-- // do not split a character
		}
		if cut == 0 {
			cut = maxLineBytes
		}
		w.emit(rest[:cut])
		rest = rest[cut:]
	}
	w.buf = append(w.buf[:0], rest...)
	return len(p), nil
}

// flush logs a last line that had no newline.
func (w *lineLogger) flush() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.buf) > 0 {
		w.emit(w.buf)
		w.buf = w.buf[:0]
	}
}

// emit logs one line (without its newline; a trailing CR is dropped too).
func (w *lineLogger) emit(line []byte) {
	s := string(bytes.TrimSuffix(line, []byte{'\r'}))
	w.log(s, w.fields...)
	w.out.WriteLine(w.prefix, s)
	if w.keepTail {
		if len(w.lines) == tailLines {
			w.lines = append(w.lines[:0], w.lines[1:]...)
		}
		w.lines = append(w.lines, s)
	}
}

// tail returns the last lines (at most tailLines, and the last tailBytes
// of them), joined by newlines.
func (w *lineLogger) tail() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	s := strings.Join(w.lines, "\n")
	if len(s) > tailBytes {
		cut := len(s) - tailBytes
		for cut < len(s) && !utf8.RuneStart(s[cut]) {
			cut++
		}
		s = "…" + s[cut:]
	}
	return s
}
