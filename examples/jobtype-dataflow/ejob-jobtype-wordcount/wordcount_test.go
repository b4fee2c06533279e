package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ejob-io/ejob/sdk"
	"github.com/ejob-io/ejob/sdk/sdktest"
	"github.com/ejob-io/ejob/spi"
	"github.com/ejob-io/ejob/spi/spitest"
)

type nopLogger struct{}

func (nopLogger) Debug(string, ...any) {}

// request runs item of a 3-item job over dir with extra props.
func request(dir string, item int, props ...string) spi.ExecuteRequest {
	p := map[string]string{PropDir: dir}
	for i := 0; i+1 < len(props); i += 2 {
		p[props[i]] = props[i+1]
	}
	return spi.ExecuteRequest{
		Context: spi.ShardingContext{JobName: "wc", TaskID: "t", ShardingTotalCount: 3, ShardingItem: item},
		Props:   p,
	}
}

// totals sums a counts file's "word count" lines.
func totals(t *testing.T, name string) map[string]int {
	t.Helper()
	f, err := os.Open(name)
	if errors.Is(err, os.ErrNotExist) {
		return map[string]int{}
	}
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	got := map[string]int{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		word, n, ok := strings.Cut(sc.Text(), " ")
		c, err := strconv.Atoi(n)
		if !ok || err != nil {
			t.Fatalf("%s: bad line %q", name, sc.Text())
		}
		got[word] += c
	}
	return got
}

func wantTotals(t *testing.T, name string, want map[string]int) {
	t.Helper()
	if got := totals(t, name); !maps.Equal(got, want) {
		t.Errorf("%s totals = %v, want %v", filepath.Base(name), got, want)
	}
}

func execute(t *testing.T, e spi.JobExecutor, req spi.ExecuteRequest) {
	t.Helper()
	if _, err := e.Execute(t.Context(), req); err != nil {
		t.Fatalf("Execute item %d: %v", req.Context.ShardingItem, err)
	}
}

func TestOneBatchPerExecutionWithoutStreaming(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "part-0.txt"), "the cat\nthe dog\nThe End.\n")
	wc := NewWordCount(nopLogger{})
	req := request(dir, 0, PropBatchLines, "2")

	execute(t, wc, req)
	wantTotals(t, filepath.Join(dir, "part-0.counts"), map[string]int{"the": 2, "cat": 1, "dog": 1})

	// A new instance (a relaunched plugin) carries on from the offset.
	wc = NewWordCount(nopLogger{})
	execute(t, wc, req)
	want := map[string]int{"the": 3, "cat": 1, "dog": 1, "end": 1}
	wantTotals(t, filepath.Join(dir, "part-0.counts"), want)

	execute(t, wc, req) // nothing left
	wantTotals(t, filepath.Join(dir, "part-0.counts"), want)
}

func TestStreamingReadsToTheEndAndWaitsForCompleteLines(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	in := filepath.Join(dir, "part-1.txt")
	writeFile(t, in, "a b\nb c\nc d\ne f\nhalf a li")
	wc := NewWordCount(nopLogger{})
	req := request(dir, 1, PropBatchLines, "1", sdk.PropStreamingProcess, "true")
	counts := filepath.Join(dir, "part-1.counts")

	execute(t, wc, req)
	wantTotals(t, counts, map[string]int{"a": 1, "b": 2, "c": 2, "d": 1, "e": 1, "f": 1})

	appendFile(t, in, "ne\n")
	execute(t, wc, req)
	wantTotals(t, counts, map[string]int{"a": 2, "b": 2, "c": 2, "d": 1, "e": 1, "f": 1, "half": 1, "line": 1})
	// One batch per input line, one "word count" line per word of a batch.
	if got := lineCount(t, counts); got != 11 {
		t.Errorf("counts file has %d lines, want 11", got)
	}
}

func lineCount(t *testing.T, name string) int {
	t.Helper()
	b, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	return strings.Count(string(b), "\n")
}

func TestMissingInputIsNothingToDo(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	execute(t, NewWordCount(nopLogger{}), request(dir, 2, sdk.PropStreamingProcess, "true"))
	if _, err := os.Stat(filepath.Join(dir, "part-2.counts")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("counts file written without input: %v", err)
	}
}

// A plugin that dies after appending a batch's counts but before
// committing the offset leaves extra bytes; the next execution drops them
// and counts the batch again, once.
func TestUncommittedBatchIsCountedOnce(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "part-0.txt"), "x y\ny z\n")
	wc := NewWordCount(nopLogger{})
	req := request(dir, 0, PropBatchLines, "1", sdk.PropStreamingProcess, "false")
	execute(t, wc, req)
	counts := filepath.Join(dir, "part-0.counts")
	appendFile(t, counts, "y 1\nz 1\n") // the second batch, appended but never committed

	execute(t, wc, req)
	wantTotals(t, counts, map[string]int{"x": 1, "y": 2, "z": 1})
}

func TestDamagedFilesFailTheItem(t *testing.T) {
	t.Parallel()
	tests := map[string]struct {
		state, counts string
		want          string
	}{
		"corrupt state":                 {state: "garbage", want: "part-0.offset is corrupt"},
		"counts shorter than committed": {state: "4 100\n", counts: "a 1\n", want: "part-0.counts has 4 bytes but"},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			writeFile(t, filepath.Join(dir, "part-0.txt"), "a\nb\n")
			writeFile(t, filepath.Join(dir, "part-0.offset"), tt.state)
			if tt.counts != "" {
				writeFile(t, filepath.Join(dir, "part-0.counts"), tt.counts)
			}
			_, err := NewWordCount(nopLogger{}).Execute(t.Context(), request(dir, 0))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Execute = %v, want an error containing %q", err, tt.want)
			}
		})
	}
}

// conformance gives spitest three 3-line inputs to succeed on, a missing
// directory to fail on, and an input far too long to finish (one line per
// batch, streaming) to cancel.
func conformance(t *testing.T) (*spitest.JobExecutorOptions, func(t *testing.T)) {
	dir := t.TempDir()
	for item := range 3 {
		writeFile(t, filepath.Join(dir, fmt.Sprintf("part-%d.txt", item)), "one two\ntwo three\nthree three\n")
	}
	long := t.TempDir()
	writeFile(t, filepath.Join(long, "part-0.txt"), strings.Repeat("all work and no play\n", 200_000))
	blocking := request(long, 0, PropBatchLines, "1", sdk.PropStreamingProcess, "true")
	// A file where the directory should be: every fetch fails.
	notDir := filepath.Join(t.TempDir(), "file")
	writeFile(t, notDir, "")
	fail := request(notDir, 0)
	succeed := request(dir, 0, PropBatchLines, "2", sdk.PropStreamingProcess, "true")
	opts := &spitest.JobExecutorOptions{
		ValidProps: []map[string]string{
			{PropDir: dir},
			{PropDir: dir, PropBatchLines: "10", sdk.PropStreamingProcess: "TRUE"},
		},
		InvalidProps: map[string]map[string]string{
			"missing_dir":   {},
			"relative_dir":  {PropDir: "data/in"},
			"zero_batch":    {PropDir: dir, PropBatchLines: "0"},
			"non_int_batch": {PropDir: dir, PropBatchLines: "many"},
		},
		Succeed:  &succeed,
		Fail:     &fail,
		Blocking: &blocking,
		Grace:    5 * time.Second,
	}
	// The concurrency check runs the Succeed request 32 times over the 3
	// items at once; each item's words are still counted exactly once.
	check := func(t *testing.T) {
		for item := range 3 {
			wantTotals(t, filepath.Join(dir, fmt.Sprintf("part-%d.counts", item)), map[string]int{"one": 1, "two": 2, "three": 3})
		}
	}
	return opts, check
}

func TestConformanceInProcess(t *testing.T) {
	opts, check := conformance(t)
	spitest.TestJobExecutor(t, NewWordCount(nopLogger{}), opts)
	check(t)
}

func TestConformanceOverGRPC(t *testing.T) {
	opts, check := conformance(t)
	p := sdktest.Connect(t, sdk.Plugins{Version: "test", JobTypes: map[string]spi.JobExecutor{"WORDCOUNT": NewWordCount(nopLogger{})}})
	spitest.TestJobExecutor(t, p.JobExecutor("wordcount"), opts)
	check(t)
}

func TestCallsForOneItemRunOneAtATime(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "part-0.txt"), strings.Repeat("w\n", 200_000))
	wc := NewWordCount(nopLogger{})
	req := request(dir, 0, PropBatchLines, "1", sdk.PropStreamingProcess, "true")
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	first := make(chan error, 1)
	go func() { _, err := wc.Execute(ctx, req); first <- err }()
	// Wait until the first call has committed a batch, so it holds the item.
	deadline := time.Now().Add(10 * time.Second)
	for {
		if _, err := os.Stat(filepath.Join(dir, "part-0.offset")); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("first call committed no batch")
		}
		time.Sleep(5 * time.Millisecond) // bounded polling of the state file
	}
	wctx, wcancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
	defer wcancel()
	if _, err := wc.Execute(wctx, req); !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "waiting for its previous call") {
		t.Errorf("second call = %v, want it to wait for the first until its deadline", err)
	}
	// Another item is not held up.
	execute(t, wc, request(dir, 1))
	cancel()
	if err := <-first; !errors.Is(err, context.Canceled) {
		t.Errorf("first call = %v, want cancelled", err)
	}
}
