package testkit

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"
)

// stallPeriod is how often a stall probe asks to run.
const stallPeriod = time.Millisecond

// StallProbe measures how long the machine starves this process: a
// goroutine ticks every millisecond until ctx ends, and the func it
// returns waits for that and reports the longest gap between two ticks
// beyond the period. A test that judges timing on a loaded machine reads
// it as evidence that a late event was the scheduler's doing.
func StallProbe(ctx context.Context) (longest func() time.Duration) {
	done := make(chan time.Duration, 1)
	go func() {
		var worst time.Duration
		last := tickGaps(ctx, func(due, ran time.Time) { worst = max(worst, ran.Sub(due)) })
		done <- max(worst, time.Since(last)-stallPeriod)
	}()
	return func() time.Duration { return <-done }
}

// Stall is one gap a stall probe measured: it was due to run at From and
// ran at To.
type Stall struct{ From, To time.Time }

// Lost is the time the stall took from the probe.
func (s Stall) Lost() time.Duration { return s.To.Sub(s.From) }

// RecordStalls ticks every millisecond until ctx ends and calls record
// (on the calling goroutine) with each stall longer than threshold: a
// timeline of how the machine starved this process, for a test that
// judges the timing of events on it.
func RecordStalls(ctx context.Context, threshold time.Duration, record func(Stall)) {
	tickGaps(ctx, func(due, ran time.Time) {
		if ran.Sub(due) > threshold {
			record(Stall{From: due, To: ran})
		}
	})
}

// WriteStalls is RecordStalls for a probe in a process of its own: it
// writes each stall to w as one line, "FROM TO" in Unix nanoseconds, in
// one write (an O_APPEND file keeps every line written when the probe is
// killed). It returns when ctx ends, or at the first write error.
func WriteStalls(ctx context.Context, w io.Writer, threshold time.Duration) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var werr error
	RecordStalls(ctx, threshold, func(s Stall) {
		if _, err := fmt.Fprintf(w, "%d %d\n", s.From.UnixNano(), s.To.UnixNano()); err != nil && werr == nil {
			werr = fmt.Errorf("write stall: %w", err)
			cancel()
		}
	})
	return werr
}

// ReadStalls reads the stalls WriteStalls wrote, in order.
func ReadStalls(r io.Reader) ([]Stall, error) {
	var out []Stall
	sc := bufio.NewScanner(r)
	for n := 1; sc.Scan(); n++ {
		from, to, ok := strings.Cut(sc.Text(), " ")
		f, err1 := strconv.ParseInt(from, 10, 64)
		t, err2 := strconv.ParseInt(to, 10, 64)
		if !ok || err1 != nil || err2 != nil {
			return out, fmt.Errorf("stall line %d %q: want \"FROM TO\" in Unix nanoseconds", n, sc.Text())
		}
		out = append(out, Stall{From: time.Unix(0, f), To: time.Unix(0, t)})
	}
	if err := sc.Err(); err != nil {
		return out, fmt.Errorf("read stalls: %w", err)
	}
	return out, nil
}

// tickGaps ticks every stallPeriod until ctx ends, calling gap with when
// each tick was due (a period after the one before) and when it ran; it
// returns the time of the last tick.
func tickGaps(ctx context.Context, gap func(due, ran time.Time)) time.Time {
	t := time.NewTicker(stallPeriod)
	defer t.Stop()
	last := time.Now()
	for {
		select {
		case <-ctx.Done():
			return last
		case <-t.C:
			now := time.Now()
			gap(last.Add(stallPeriod), now)
			last = now
		}
	}
}
