package chaos

import (
	"fmt"
	"testing"
	"time"
)

// The checker's own rules on made-up records: these run in `go test ./...`
// (no cluster needed).

func TestCheckOnceCountsNormalEndsPerFire(t *testing.T) {
	from := time.Unix(1000, 0)
	to := from.Add(10 * time.Second)
	runsOf := func(extra int, kind byte) []*run {
		var runs []*run
		// One run per second of chaosNoFailover item 0 in [from+1s, to).
		for k := 1; k < 10; k++ {
			start := from.Add(time.Duration(k)*time.Second + 10*time.Millisecond)
			runs = append(runs, &run{job: jobNoFO, item: 0, start: start, end: start.Add(300 * time.Millisecond), kind: 'E'})
		}
		for k := 0; k < extra; k++ {
			start := from.Add(5*time.Second + 500*time.Millisecond)
			runs = append(runs, &run{job: jobNoFO, item: 0, start: start, end: start.Add(300 * time.Millisecond), kind: kind})
		}
		return runs
	}
	s := &suite{}
	for name, c := range map[string]struct {
		runs []*run
		want int
	}{
		"one run a fire":                {runsOf(0, 'E'), 0},
		"a catch-up of the fire before": {runsOf(1, 'E'), 0},
		"a fire run twice more":         {runsOf(2, 'E'), 1},
		"cut-off runs do not count":     {runsOf(3, 'C'), 0},
	} {
		t.Run(name, func(t *testing.T) {
			v := &violations{}
			s.checkOnce(v, c.runs, from, to)
			if got := len(v.by["once"]); got != c.want {
				t.Fatalf("%d once violations, want %d: %v", got, c.want, v.by["once"])
			}
		})
	}
}

func TestProxyReconnected(t *testing.T) {
	t0 := time.Unix(1000, 0)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	for name, c := range map[string]struct {
		answered, ended []time.Time
		want            string
	}{
		"connection kept":             {[]time.Time{at(-5000)}, nil, "kept"},
		"connection closed before":    {[]time.Time{at(-5000)}, []time.Time{at(-100)}, "kept"},
		"dropped, answered after":     {[]time.Time{at(-5000), at(2500)}, []time.Time{at(100)}, "2.5s"},
		"dropped, no answer yet":      {[]time.Time{at(-5000)}, []time.Time{at(100)}, "none"},
		"answered on another member":  {[]time.Time{at(-5000), at(800)}, []time.Time{at(100)}, "800ms"},
		"answered, then closed again": {[]time.Time{at(800), at(2500)}, []time.Time{at(100), at(900)}, "2.5s"},
	} {
		t.Run(name, func(t *testing.T) {
			p := &proxy{answered: c.answered, ended: c.ended}
			a, dropped, ok := p.reconnected(t0, at(2000))
			got := "none"
			switch {
			case !dropped:
				got = "kept"
			case ok:
				got = fmt.Sprint(a.Sub(t0))
			}
			if got != c.want {
				t.Fatalf("reconnected: %s, want %s", got, c.want)
			}
		})
	}
}
