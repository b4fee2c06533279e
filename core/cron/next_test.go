package cron

import (
	"sync"
	"testing"
	"time"
)

func mustZone(t testing.TB, tz string) *time.Location {
	t.Helper()
	loc, err := LoadZone(tz)
	if err != nil {
		t.Fatal(err)
	}
	return loc
}

// A few readable cases; the exhaustive comparison with Quartz is
// TestQuartzGolden.
func TestNext(t *testing.T) {
	t.Parallel()
	tests := map[string]struct {
		expr, tz, from string
		want           []string
	}{
		"weekdays at 10:15": {"0 15 10 ? * MON-FRI", "UTC", "2025-06-13T10:15:00Z",
			[]string{"2025-06-16T10:15:00Z", "2025-06-17T10:15:00Z"}},
		"last day of February, leap year": {"0 0 0 L 2 ?", "UTC", "2027-06-01T00:00:00Z",
			[]string{"2028-02-29T00:00:00Z", "2029-02-28T00:00:00Z"}},
		"1W on a Saturday fires Monday the 3rd": {"0 0 10 1W * ?", "UTC", "2025-01-31T00:00:00Z",
			[]string{"2025-02-03T10:00:00Z"}},
		"31W on a Sunday fires Friday the 29th": {"0 0 10 31W * ?", "UTC", "2025-08-01T00:00:00Z",
			[]string{"2025-08-29T10:00:00Z"}},
		"third Friday": {"0 0 10 ? * 6#3", "UTC", "2025-01-01T00:00:00Z",
			[]string{"2025-01-17T10:00:00Z", "2025-02-21T10:00:00Z"}},
		"fifth Monday skips months without one": {"0 0 10 ? * 2#5", "UTC", "2025-01-01T00:00:00Z",
			[]string{"2025-03-31T10:00:00Z", "2025-06-30T10:00:00Z"}},
		"wrap-around hours": {"0 0 23-1 * * ?", "UTC", "2025-01-01T12:00:00Z",
			[]string{"2025-01-01T23:00:00Z", "2025-01-02T00:00:00Z", "2025-01-02T01:00:00Z", "2025-01-02T23:00:00Z"}},
		"GMT+08:00": {"0 0 9 * * ?", "GMT+8", "2025-01-01T00:00:00Z",
			[]string{"2025-01-01T09:00:00+08:00", "2025-01-02T09:00:00+08:00"}},
		// Quartz skips the whole day when 02:30 does not exist...
		"spring forward: 02:30 is skipped for the day": {"0 30 2 * * ?", "America/New_York", "2025-03-08T12:00:00-05:00",
			[]string{"2025-03-10T02:30:00-04:00"}},
		// ...and on the fall-back day it only ever fires in the second (standard-time) 01:xx.
		"fall back: 01:30 fires once, in standard time": {"0 30 1 * * ?", "America/New_York", "2025-11-01T12:00:00-04:00",
			[]string{"2025-11-02T01:30:00-05:00", "2025-11-03T01:30:00-05:00"}},
		"fall back: the daylight-time 01:xx hour is skipped": {"0 0/30 * * * ?", "America/New_York", "2025-11-02T00:30:00-04:00",
			[]string{"2025-11-02T01:00:00-05:00", "2025-11-02T01:30:00-05:00", "2025-11-02T02:00:00-05:00"}},
		"year in the past never fires": {"0 0 0 1 1 ? 2020", "UTC", "2025-01-01T00:00:00Z", nil},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			e, err := ParseInLocation(tc.expr, mustZone(t, tc.tz))
			if err != nil {
				t.Fatal(err)
			}
			from, err := time.Parse(time.RFC3339, tc.from)
			if err != nil {
				t.Fatal(err)
			}
			next := from
			for i, w := range tc.want {
				next = e.Next(next)
				if got := next.Format(time.RFC3339); got != w {
					t.Fatalf("fire %d: got %s, want %s", i, got, w)
				}
			}
			if tc.want == nil && !e.Next(from).IsZero() {
				t.Errorf("Next = %v, want the zero time", e.Next(from))
			}
		})
	}
}

func TestNextSubSecond(t *testing.T) {
	t.Parallel()
	e, err := ParseInLocation("* * * * * ?", time.UTC)
	if err != nil {
		t.Fatal(err)
	}
	from := time.Date(2025, 1, 1, 0, 0, 0, 500_000_000, time.UTC)
	if got, want := e.Next(from), time.Date(2025, 1, 1, 0, 0, 1, 0, time.UTC); !got.Equal(want) {
		t.Errorf("Next(%v) = %v, want %v", from, got, want)
	}
}

func TestNextConcurrent(t *testing.T) {
	t.Parallel()
	e, err := ParseInLocation("0 */15 * ? * MON-FRI", mustZone(t, "Europe/London"))
	if err != nil {
		t.Fatal(err)
	}
	from := time.Date(2025, 3, 28, 0, 0, 0, 0, time.UTC)
	want := e.Next(from)
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 100 {
				if got := e.Next(from); !got.Equal(want) {
					t.Errorf("Next = %v, want %v", got, want)
					return
				}
			}
		}()
	}
	wg.Wait()
}

func TestNextAllocs(t *testing.T) {
	e, err := ParseInLocation("0 0/5 9-17 ? * MON-FRI", mustZone(t, "America/New_York"))
	if err != nil {
		t.Fatal(err)
	}
	from := time.Date(2025, 3, 7, 18, 0, 0, 0, time.UTC)
	if n := testing.AllocsPerRun(100, func() { e.Next(from) }); n != 0 {
		t.Errorf("Next allocates %v times per call, want 0", n)
	}
}

func TestPreview(t *testing.T) {
	t.Parallel()
	from := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	got, err := Preview("0 0 12 ? * MON", "Asia/Shanghai", from, 3)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"2025-01-06T12:00:00+08:00", "2025-01-13T12:00:00+08:00", "2025-01-20T12:00:00+08:00"}
	if len(got) != len(want) {
		t.Fatalf("got %d times, want %d", len(got), len(want))
	}
	for i := range want {
		if s := got[i].Format(time.RFC3339); s != want[i] {
			t.Errorf("fire %d: got %s, want %s", i, s, want[i])
		}
	}
	if got, err := Preview("0 0 0 1 1 ? 2026", "UTC", from, 5); err != nil || len(got) != 1 {
		t.Errorf("Preview of a single fire = %v, %v; want one time", got, err)
	}
	if _, err := Preview("0 0 25 * * ?", "UTC", from, 1); err == nil {
		t.Error("Preview accepted an invalid expression")
	}
	if _, err := Preview("0 0 12 * * ?", "Mars/Olympus", from, 1); err == nil {
		t.Error("Preview accepted an unknown zone")
	}
}

func BenchmarkNext(b *testing.B) {
	benches := map[string]struct{ expr, tz string }{
		"every5min-UTC":         {"0 0/5 * * * ?", "UTC"},
		"weekdays-NewYork":      {"0 15 10 ? * MON-FRI", "America/New_York"},
		"lastFriday-London":     {"0 0 18 ? * 6L", "Europe/London"},
		"LW-Shanghai":           {"0 30 9 LW * ?", "Asia/Shanghai"},
		"feb29-UTC":             {"0 0 0 29 2 ?", "UTC"},
		"everySecond-Lord_Howe": {"* * * * * ?", "Australia/Lord_Howe"},
	}
	for name, bc := range benches {
		b.Run(name, func(b *testing.B) {
			e, err := ParseInLocation(bc.expr, mustZone(b, bc.tz))
			if err != nil {
				b.Fatal(err)
			}
			from := time.Date(2025, 3, 1, 0, 0, 0, 0, time.UTC)
			b.ReportAllocs()
			t := from
			for b.Loop() {
				t = e.Next(t)
				if t.IsZero() || t.Year() > 2100 {
					t = from
				}
			}
		})
	}
}

func BenchmarkParse(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		if _, err := ParseInLocation("0 0/5 9-17 ? JAN-MAR,JUL MON-FRI 2025-2030", time.UTC); err != nil {
			b.Fatal(err)
		}
	}
}

func TestNextFromZeroTime(t *testing.T) {
	t.Parallel()
	e, err := ParseInLocation("0 0 12 * * ?", time.UTC)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := e.Next(time.Time{}), time.Date(1970, 1, 1, 12, 0, 0, 0, time.UTC); !got.Equal(want) {
		t.Errorf("Next(zero) = %v, want %v", got, want)
	}
	if got := e.Next(time.Date(3000, 1, 1, 0, 0, 0, 0, time.UTC)); !got.IsZero() {
		t.Errorf("Next(year 3000) = %v, want the zero time", got)
	}
}
