package cron

import "time"

// Expression is a parsed Quartz cron expression bound to a time zone. It is
// immutable and safe for concurrent use.
type Expression struct {
	expr    string
	loc     *time.Location
	maxYear int // Quartz's CronExpression.MAX_YEAR: the search horizon

	sec, min, hour, dom, month, dow, year intSet

	lastDayOfWeek  bool // day-of-week "nL": the last n-day of the month
	nthDayOfWeek   int  // day-of-week "n#k": k, else 0
	lastDayOfMonth bool // day-of-month "L", "L-n", "LW"
	nearestWeekday bool // day-of-month "nW", "LW"
	lastDayOffset  int  // day-of-month "L-n": n
}

// String returns the expression as it was given.
func (e *Expression) String() string { return e.expr }

// Location returns the time zone fire times are computed in.
func (e *Expression) Location() *time.Location { return e.loc }

// Next returns the first fire time strictly after the given instant, in the
// expression's location, exactly as Quartz's CronExpression.getTimeAfter does
// (fire times are whole seconds; the sub-second part of after is ignored
// except that the result is always later than after). It returns the zero
// Time when the expression never fires again, e.g. when its years are past.
//
// Next has the signature of robfig/cron's Schedule interface.
func (e *Expression) Next(after time.Time) time.Time {
	start := after.Unix() + 1
	if start < minStart {
		// Quartz keeps its '*' marker (99) in the set of years, so from the
		// zero Time it would answer year 99. Nothing fires before 1970
		// unless the year field names such a year, so start at year 100.
		start = minStart
	}
	u, ok := e.timeAfter(start)
	if !ok {
		return time.Time{}
	}
	return time.Unix(u, 0).In(e.loc)
}

// minStart is 0100-01-01T00:00:00Z.
const minStart = -59011459200

// Preview parses expr, of any kind (see ParseSchedule), in the zone tz (see
// LoadZone) and returns its next n fire times after from, fewer if the
// expression stops firing. It is what `ejob cron EXPR --tz ZONE --from TIME
// -n N` prints.
func Preview(expr, tz string, from time.Time, n int) ([]time.Time, error) {
	loc, err := LoadZone(tz)
	if err != nil {
		return nil, err
	}
	e, err := ParseSchedule(expr, loc)
	if err != nil {
		return nil, err
	}
	var out []time.Time
	t := from
	for i := 0; i < n; i++ {
		t = e.Next(t)
		if t.IsZero() {
			break
		}
		out = append(out, t)
	}
	return out, nil
}
