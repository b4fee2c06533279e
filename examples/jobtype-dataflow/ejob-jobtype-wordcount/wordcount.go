package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"unicode"

	"github.com/ejob-io/ejob/sdk"
	"github.com/ejob-io/ejob/spi"
)

// The props of WORDCOUNT (besides DATAFLOW's streaming.process).
const (
	// PropDir is the absolute directory holding the input files
	// part-<item>.txt; the output and state files are written next to
	// them. Required.
	PropDir = "wordcount.dir"
	// PropBatchLines is how many lines one fetch returns; default 100.
	PropBatchLines = "wordcount.batch.lines"
)

const defaultBatchLines = 100

// Logger is the part of sdk.Logger() WORDCOUNT uses.
type Logger interface {
	Debug(msg string, args ...any)
}

// Line is one input line, with the input offset just past it.
type Line struct {
	Text string
	End  int64
}

// NewWordCount returns the WORDCOUNT job type, logging to log. It is safe
// for concurrent use: different items run in parallel, and two calls for
// the same item's files run one after the other (a call the host has
// cancelled may still be finishing its batch when the next execution of
// the item starts).
func NewWordCount(log Logger) spi.JobExecutor {
	w := &wordCount{log: log}
	return &serialized{
		held: map[string]chan struct{}{},
		next: sdk.DataflowJobType(sdk.DataflowFuncs[Line]{Fetch: w.fetch, Process: w.process, Validate: Validate}),
	}
}

// Validate requires an absolute wordcount.dir and, when set, a positive
// wordcount.batch.lines.
func Validate(_ context.Context, req spi.ValidatePropsRequest) error {
	_, _, err := settings(req.Props)
	return err
}

func settings(props map[string]string) (dir string, batch int, err error) {
	dir = props[PropDir]
	if dir == "" || !filepath.IsAbs(dir) {
		return "", 0, fmt.Errorf("property %s must be an absolute directory, got %q: %w", PropDir, dir, spi.ErrInvalidConfig)
	}
	batch = defaultBatchLines
	if v, ok := props[PropBatchLines]; ok {
		if batch, err = strconv.Atoi(v); err != nil || batch <= 0 {
			return "", 0, fmt.Errorf("property %s must be a positive integer, got %q: %w", PropBatchLines, v, spi.ErrInvalidConfig)
		}
	}
	return dir, batch, nil
}

// files are one item's files.
type files struct {
	input  string // part-N.txt: lines ending in '\n', appended by a producer
	counts string // part-N.counts: "word count" lines, appended per batch
	state  string // part-N.offset: "inputOffset countsSize", replaced atomically
}

func itemFiles(dir string, item int) files {
	base := filepath.Join(dir, "part-"+strconv.Itoa(item))
	return files{input: base + ".txt", counts: base + ".counts", state: base + ".offset"}
}

// state is what the last committed batch left: how far the input was read
// and how long the counts file was after its append.
type state struct {
	offset, countsSize int64
}

type wordCount struct {
	log Logger
}

// fetch returns up to batch lines of the item's input after the committed
// offset. Only complete lines are returned, so a producer may be appending
// to the file. A missing input file means nothing to do.
//
// It first undoes a batch that was appended to the counts file but never
// committed (the plugin died between the two writes), so each batch is
// counted exactly once.
func (w *wordCount) fetch(_ context.Context, sc spi.ShardingContext, props map[string]string) ([]Line, error) {
	dir, batch, err := settings(props)
	if err != nil {
		return nil, err
	}
	f := itemFiles(dir, sc.ShardingItem)
	st, err := readState(f.state)
	if err != nil {
		return nil, err
	}
	if err := recoverCounts(f, st); err != nil {
		return nil, err
	}
	in, err := os.Open(f.input)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer in.Close()
	if _, err := in.Seek(st.offset, io.SeekStart); err != nil {
		return nil, err
	}
	r := bufio.NewReader(in)
	var lines []Line
	end := st.offset
	for len(lines) < batch {
		text, err := r.ReadString('\n')
		if err == io.EOF {
			break // an incomplete last line waits for its '\n'
		}
		if err != nil {
			return nil, err
		}
		end += int64(len(text))
		lines = append(lines, Line{Text: strings.TrimSuffix(text, "\n"), End: end})
	}
	return lines, nil
}

// process appends the batch's word counts to the counts file, syncs it,
// then commits the new offset and counts size.
func (w *wordCount) process(_ context.Context, sc spi.ShardingContext, props map[string]string, lines []Line) error {
	dir, _, err := settings(props)
	if err != nil {
		return err
	}
	f := itemFiles(dir, sc.ShardingItem)
	counts := map[string]int{}
	for _, l := range lines {
		for _, word := range words(l.Text) {
			counts[word]++
		}
	}
	var b strings.Builder
	for _, word := range slices.Sorted(maps.Keys(counts)) {
		fmt.Fprintf(&b, "%s %d\n", word, counts[word])
	}
	out, err := os.OpenFile(f.counts, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return err
	}
	_, err = out.WriteString(b.String())
	if err == nil {
		err = out.Sync()
	}
	var size int64
	if err == nil {
		size, err = out.Seek(0, io.SeekCurrent)
	}
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	end := lines[len(lines)-1].End
	if err := writeState(f.state, state{offset: end, countsSize: size}); err != nil {
		return err
	}
	w.log.Debug("batch counted", "job", sc.JobName, "item", sc.ShardingItem, "lines", len(lines), "offset", end, "words", len(counts))
	return nil
}

// words splits text into lower-case words of letters and digits.
func words(text string) []string {
	return strings.FieldsFunc(strings.ToLower(text), func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsNumber(r)
	})
}

func readState(name string) (state, error) {
	b, err := os.ReadFile(name)
	if errors.Is(err, fs.ErrNotExist) {
		return state{}, nil
	}
	if err != nil {
		return state{}, err
	}
	var st state
	if _, err := fmt.Sscanf(string(b), "%d %d\n", &st.offset, &st.countsSize); err != nil || st.offset < 0 || st.countsSize < 0 {
		return state{}, fmt.Errorf("%s is corrupt (%q); delete it and the counts file to count from the start", name, b)
	}
	return st, nil
}

// writeState replaces the state file atomically: a crash leaves the old or
// the new state, never a torn one.
func writeState(name string, st state) error {
	tmp, err := os.CreateTemp(filepath.Dir(name), filepath.Base(name)+".tmp*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name()) // fails harmlessly after the rename
	_, err = fmt.Fprintf(tmp, "%d %d\n", st.offset, st.countsSize)
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	return os.Rename(tmp.Name(), name)
}

// recoverCounts truncates the counts file to the committed size, dropping
// a batch appended after the last commit.
func recoverCounts(f files, st state) error {
	fi, err := os.Stat(f.counts)
	size := int64(0)
	switch {
	case err == nil:
		size = fi.Size()
	case !errors.Is(err, fs.ErrNotExist):
		return err
	}
	switch {
	case size == st.countsSize:
		return nil
	case size < st.countsSize:
		return fmt.Errorf("%s has %d bytes but %s records %d; delete both to count from the start", f.counts, size, f.state, st.countsSize)
	}
	return os.Truncate(f.counts, st.countsSize)
}

// serialized runs the calls for one item's files one at a time.
type serialized struct {
	next spi.JobExecutor
	mu   sync.Mutex
	held map[string]chan struct{} // closed when the holder is done
}

func (s *serialized) Execute(ctx context.Context, req spi.ExecuteRequest) (spi.ExecuteResponse, error) {
	key := itemFiles(req.Props[PropDir], req.Context.ShardingItem).state
	mine := make(chan struct{})
	for {
		s.mu.Lock()
		prev, busy := s.held[key]
		if !busy {
			s.held[key] = mine
		}
		s.mu.Unlock()
		if !busy {
			break
		}
		select {
		case <-prev:
		case <-ctx.Done():
			return spi.ExecuteResponse{}, fmt.Errorf("item %d: waiting for its previous call: %w", req.Context.ShardingItem, ctx.Err())
		}
	}
	defer func() {
		s.mu.Lock()
		delete(s.held, key)
		s.mu.Unlock()
		close(mine)
	}()
	return s.next.Execute(ctx, req)
}

func (s *serialized) Validate(ctx context.Context, req spi.ValidatePropsRequest) error {
	return s.next.Validate(ctx, req)
}
