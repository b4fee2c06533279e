package cron

import (
	"errors"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	robfig "github.com/robfig/cron/v3"
)

func TestKindOf(t *testing.T) {
	t.Parallel()
	tests := map[string]Kind{
		"":                     KindQuartz,
		"0/5 * * * * ?":        KindQuartz,
		"0 0 12 ? * MON 2030":  KindQuartz,
		"* * * * * * * *":      KindQuartz, // Quartz ignores fields after the year
		"* * * *":              KindQuartz,
		"*/5 * * * *":          KindCrontab,
		"\t0  9 * *\t1-5 ":     KindCrontab,
		"0/5 * * * ?":          KindCrontab, // rejected by ParseSchedule, but read as a crontab
		"@hourly":              KindDescriptor,
		"  @every 90s":         KindDescriptor,
		"@every 1 2 3 4":       KindDescriptor,
		"CRON_TZ=UTC @daily":   KindQuartz,
		"CRON_TZ=UTC 0 * * *":  KindCrontab,
		"0 @ * * * ?":          KindQuartz,
		"@every 1s * * * * ? ": KindDescriptor,
	}
	for expr, want := range tests {
		if got := KindOf(expr); got != want {
			t.Errorf("KindOf(%q) = %v, want %v", expr, got, want)
		}
		if got := IsQuartz(expr); got != (want == KindQuartz) {
			t.Errorf("IsQuartz(%q) = %v", expr, got)
		}
	}
}

// standardExprs are the crontab and descriptor inputs checked against
// robfig/cron's own schedules.
var standardExprs = []string{
	"* * * * *", "*/5 * * * *", "0 * * * *", "30 2 * * *", "30 1 * * *", "0 0 * * *",
	"15 10 * * 1-5", "0 9 1,15 * *", "0 12 13 * 5", "0 0 1 1 *", "0 0 29 2 *", "0 0 * * sun",
	"0 8-18/2 * jan-mar mon-fri", "59 23 31 * *", "0 2 * * 0", "*/15 1-3 * * *", "5-10 * * * *",
	"0 0 30 2 *", // never fires
	"@yearly", "@annually", "@monthly", "@weekly", "@daily", "@midnight", "@hourly",
	"@every 1s", "@every 90s", "@every 1h", "@every 25h", "@every 1h30m",
}

// TestStandardNextMatchesRobfig: the next fire times of crontabs and
// descriptors in a job's zone are robfig/cron's for the same input with the
// zone given robfig's own way (a CRON_TZ= prefix), from instants around the
// DST transitions of New York and Berlin; each is in the job's zone and
// strictly later than the one before.
func TestStandardNextMatchesRobfig(t *testing.T) {
	t.Parallel()
	froms := []string{
		"2025-01-01T00:00:00Z",
		"2024-02-28T12:34:56.789Z",
		"2025-03-09T05:40:00Z", // New York 00:40 EST, before spring forward
		"2025-11-02T04:20:00Z", // New York 00:20 EDT, before fall back
		"2025-11-02T06:10:00Z", // New York 01:10 EST, inside the repeated hour
		"2025-03-30T00:20:00Z", // Berlin 01:20 CET, before spring forward
		"2025-10-26T00:10:00Z", // Berlin 02:10 CEST, inside the repeated hour
	}
	for _, zone := range []string{"UTC", "America/New_York", "Europe/Berlin"} {
		loc, err := time.LoadLocation(zone)
		if err != nil {
			t.Fatal(err)
		}
		for _, expr := range standardExprs {
			s, err := ParseSchedule(expr, loc)
			if err != nil {
				t.Fatalf("ParseSchedule(%q): %v", expr, err)
			}
			if s.String() != expr || s.Location() != loc || s.Kind() != KindOf(expr) {
				t.Errorf("%q: String %q, Location %v, Kind %v", expr, s.String(), s.Location(), s.Kind())
			}
			oracle, err := robfig.ParseStandard("CRON_TZ=" + zone + " " + expr)
			if err != nil {
				t.Fatalf("robfig %q: %v", expr, err)
			}
			for _, f := range froms {
				from, err := time.Parse(time.RFC3339Nano, f)
				if err != nil {
					t.Fatal(err)
				}
				got, want := from, from
				for i := range 40 {
					prev := got
					got, want = s.Next(got), oracle.Next(want)
					if !got.Equal(want) {
						t.Fatalf("%q in %s from %s, fire %d: got %v, robfig %v", expr, zone, f, i, got, want)
					}
					if got.IsZero() {
						break
					}
					if got.Location() != loc || !got.After(prev) || got.Nanosecond() != 0 {
						t.Fatalf("%q in %s from %s, fire %d: %v after %v", expr, zone, f, i, got, prev)
					}
				}
			}
		}
	}
}

// TestStandardDST pins the DST behaviour docs/cron.md describes for
// crontabs and descriptors (robfig/cron's, kept as is).
func TestStandardDST(t *testing.T) {
	t.Parallel()
	tests := map[string]struct {
		expr, zone, from string
		want             []string
	}{
		"crontab spring forward: a time in the gap is skipped that day": {
			"30 2 * * *", "America/New_York", "2025-03-08T00:00:00-05:00",
			[]string{"2025-03-08T02:30:00-05:00", "2025-03-10T02:30:00-04:00"}},
		"crontab fall back: a time in the repeated hour fires twice": {
			"30 1 * * *", "America/New_York", "2025-11-01T12:00:00-04:00",
			[]string{"2025-11-02T01:30:00-04:00", "2025-11-02T01:30:00-05:00", "2025-11-03T01:30:00-05:00"}},
		"crontab interval across spring forward": {
			"*/30 * * * *", "America/New_York", "2025-03-09T01:15:00-05:00",
			[]string{"2025-03-09T01:30:00-05:00", "2025-03-09T03:00:00-04:00"}},
		"crontab interval across fall back fires in both occurrences": {
			"*/30 * * * *", "America/New_York", "2025-11-02T00:45:00-04:00",
			[]string{"2025-11-02T01:00:00-04:00", "2025-11-02T01:30:00-04:00", "2025-11-02T01:00:00-05:00",
				"2025-11-02T01:30:00-05:00", "2025-11-02T02:00:00-05:00"}},
		"Berlin spring forward": {
			"30 2 * * *", "Europe/Berlin", "2025-03-29T00:00:00+01:00",
			[]string{"2025-03-29T02:30:00+01:00", "2025-03-31T02:30:00+02:00"}},
		"Berlin fall back, hourly": {
			"0 * * * *", "Europe/Berlin", "2025-10-26T01:30:00+02:00",
			[]string{"2025-10-26T02:00:00+02:00", "2025-10-26T02:00:00+01:00", "2025-10-26T03:00:00+01:00"}},
		"@daily keeps midnight": {
			"@daily", "America/New_York", "2025-11-01T12:00:00-04:00",
			[]string{"2025-11-02T00:00:00-04:00", "2025-11-03T00:00:00-05:00"}},
		"@daily where midnight does not exist: the day is skipped": {
			"@daily", "America/Havana", "2025-03-08T12:00:00-05:00",
			[]string{"2025-03-10T00:00:00-04:00", "2025-03-11T00:00:00-04:00"}},
		"@every is a fixed interval across fall back": {
			"@every 1h", "America/New_York", "2025-11-02T00:30:00-04:00",
			[]string{"2025-11-02T01:30:00-04:00", "2025-11-02T01:30:00-05:00", "2025-11-02T02:30:00-05:00"}},
		"@every is a fixed interval across spring forward": {
			"@every 1h", "America/New_York", "2025-03-09T01:30:00-05:00",
			[]string{"2025-03-09T03:30:00-04:00", "2025-03-09T04:30:00-04:00"}},
		"@every counts from the instant given, whole seconds": {
			"@every 90s", "UTC", "2025-01-01T00:00:00.7Z",
			[]string{"2025-01-01T00:01:30Z", "2025-01-01T00:03:00Z"}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			got, err := Preview(tc.expr, tc.zone, mustTime(t, tc.from), len(tc.want))
			if err != nil {
				t.Fatal(err)
			}
			var s []string
			for _, g := range got {
				s = append(s, g.Format(time.RFC3339))
			}
			if strings.Join(s, " ") != strings.Join(tc.want, " ") {
				t.Errorf("got  %v\nwant %v", s, tc.want)
			}
		})
	}
}

func mustTime(t *testing.T, s string) time.Time {
	t.Helper()
	v, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// TestQuartzGoldenThroughParseSchedule: every recorded Quartz case that
// ParseSchedule reads as Quartz gets exactly ParseInLocation's answer, and
// every case it reads as another kind is one Quartz rejects, so no
// expression Quartz accepts changes meaning.
func TestQuartzGoldenThroughParseSchedule(t *testing.T) {
	t.Parallel()
	data, err := os.ReadFile(goldenPath)
	if err != nil {
		t.Fatal(err)
	}
	_, cases, err := parseOracleOutput(string(data))
	if err != nil {
		t.Fatal(err)
	}
	other := 0
	for _, c := range cases {
		loc, err := LoadZone(c.zone)
		if err != nil {
			continue
		}
		if KindOf(c.expr) != KindQuartz {
			other++
			if !strings.HasPrefix(c.result, "parse-error") {
				t.Errorf("L%d %q is read as %v, but Quartz accepts it: %s", c.line, c.expr, KindOf(c.expr), c.result)
			}
			continue
		}
		q, qerr := ParseInLocation(c.expr, loc)
		s, serr := ParseSchedule(c.expr, loc)
		if (qerr == nil) != (serr == nil) {
			t.Errorf("L%d %q: ParseInLocation error %v, ParseSchedule error %v", c.line, c.expr, qerr, serr)
			continue
		}
		if qerr != nil {
			continue
		}
		from := mustTime(t, c.from)
		a, b := from, from
		for range c.n {
			a, b = q.Next(a), s.Next(b)
			if !a.Equal(b) || a.IsZero() {
				break
			}
		}
		if !a.Equal(b) {
			t.Errorf("L%d %q: ParseSchedule fires at %v, ParseInLocation at %v", c.line, c.expr, b, a)
		}
	}
	if other == 0 {
		t.Error("no golden case is read as another kind; the check above checked nothing")
	}
}

func TestParseScheduleErrors(t *testing.T) {
	t.Parallel()
	tests := map[string]struct {
		expr  string
		kind  Kind
		msg   string // the whole message
		field string
	}{
		"six stars is Quartz": {"* * * * * *", KindQuartz,
			`cron "* * * * * *": read as Quartz (6 fields): specifying both a day-of-month and a day-of-week is not supported; use '?' in one of them`, ""},
		"Quartz field error": {"0 0 25 * * ?", KindQuartz,
			`cron "0 0 25 * * ?": read as Quartz (6 fields): hour field: value 25 out of range 0-23`, "hour"},
		"too few fields": {"* * * *", KindQuartz,
			`cron "* * * *": 4 fields fit no syntax: want 5 (crontab: minute hour day-of-month month day-of-week), ` +
				`6 or 7 (Quartz: second minute hour day-of-month month day-of-week [year]), or a descriptor (@hourly, @daily, @every 90s, ...)`, ""},
		"one field": {"nonsense", KindQuartz, "", ""},
		"every zero": {"@every 0s", KindDescriptor,
			`cron "@every 0s": read as a descriptor (starts with @): @every needs a positive whole number of seconds (fire times are whole seconds), got 0s`, ""},
		"every negative":    {"@every -1m", KindDescriptor, "", ""},
		"every sub-second":  {"@every 1500ms", KindDescriptor, "", ""},
		"every bad unit":    {"@every 1x", KindDescriptor, `cron "@every 1x": read as a descriptor (starts with @): @every takes a Go duration such as 90s or 1h30m: time: unknown unit "x" in duration "1x"`, ""},
		"every no duration": {"@every", KindDescriptor, "", ""},
		"every two args":    {"@every 1h 30m", KindDescriptor, "", ""},
		"unknown descriptor": {"@foo", KindDescriptor,
			`cron "@foo": read as a descriptor (starts with @): unknown descriptor "@foo"; want one of @yearly, @annually, @monthly, @weekly, @daily, @midnight, @hourly or @every <duration>`, ""},
		"upper-case descriptor": {"@Daily", KindDescriptor, "", ""},
		"descriptor argument":   {"@daily 5", KindDescriptor, "", ""},
		"question mark in crontab": {"0/5 * * * ?", KindCrontab,
			`cron "0/5 * * * ?": read as a standard crontab (5 fields): day-of-week field: '?' is Quartz syntax; in a 5-field crontab write '*' (a Quartz expression has 6 or 7 fields, seconds first)`, "day-of-week"},
		"crontab sunday 7": {"0 0 * * 7", KindCrontab,
			`cron "0 0 * * 7": read as a standard crontab (5 fields): day-of-week field: end of range (7) above maximum (6): 7`, "day-of-week"},
		"crontab minute 60":   {"60 * * * *", KindCrontab, "", "minute"},
		"crontab hour range":  {"0 9-25 * * *", KindCrontab, "", "hour"},
		"crontab month name":  {"0 0 1 foo *", KindCrontab, "", "month"},
		"crontab Quartz nth":  {"0 0 * * 6#3", KindCrontab, "", "day-of-week"},
		"crontab Quartz last": {"0 0 L * *", KindCrontab, "", "day-of-month"},
		"crontab control":     {"0 0 * *\x01 *", KindCrontab, "", ""},
		"CRON_TZ prefix": {"CRON_TZ=UTC * * * * *", KindQuartz,
			`cron "CRON_TZ=UTC * * * * *": a CRON_TZ= prefix is not supported: set the job's timeZone instead`, ""},
		"TZ prefix": {"TZ=UTC @daily", KindQuartz, "", ""},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			s, err := ParseSchedule(tc.expr, time.UTC)
			if err == nil {
				t.Fatalf("ParseSchedule(%q) = %v, want an error", tc.expr, s)
			}
			if !errors.Is(err, ErrInvalidExpression) {
				t.Errorf("error %v does not wrap ErrInvalidExpression", err)
			}
			var pe *ParseError
			if !errors.As(err, &pe) {
				t.Fatalf("error %T is not a *ParseError", err)
			}
			if pe.Kind != tc.kind || pe.Field != tc.field {
				t.Errorf("Kind %v Field %q, want %v %q: %v", pe.Kind, pe.Field, tc.kind, tc.field, err)
			}
			if tc.msg != "" && err.Error() != tc.msg {
				t.Errorf("message\n got: %s\nwant: %s", err, tc.msg)
			}
			if !strings.HasPrefix(err.Error(), "cron "+strconv.Quote(tc.expr)+": ") {
				t.Errorf("message does not start with the expression: %s", err)
			}
			t.Log(err)
		})
	}
}
