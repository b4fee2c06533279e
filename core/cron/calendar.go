package cron

import "time"

// Calendar fields used by the port (a subset of java.util.Calendar's).
const (
	cYear  = iota
	cMonth // 0-based, as java.util.Calendar.MONTH
	cDay
	cHour
	cMinute
	cSecond
	cDayOfWeek // 1 = Sunday ... 7 = Saturday
)

const (
	sunday   = 1
	saturday = 7
)

// jcal mimics the lenient java.util.GregorianCalendar as Quartz uses it:
// set() only records a field (any value, e.g. minute 60 or day 32) and marks
// the instant stale; the next get() normalises the fields into an instant,
// resolving wall-clock times in DST gaps and overlaps the way Java does
// (wallOffset), and recomputes every field from that instant.
type jcal struct {
	loc   *time.Location
	f     [7]int // indexed by the c* constants
	unix  int64  // valid when !stale
	stale bool
}

func (c *jcal) setTime(unix int64) {
	c.unix = unix
	c.stale = false
	c.computeFields()
}

// setFields sets year, month (0-based), day and time of day at once.
func (c *jcal) setFields(year, month0, day, hour, min, sec int) {
	c.f[cYear], c.f[cMonth], c.f[cDay] = year, month0, day
	c.f[cHour], c.f[cMinute], c.f[cSecond] = hour, min, sec
	c.stale = true
}

func (c *jcal) set(field, v int) {
	c.f[field] = v
	c.stale = true
}

func (c *jcal) get(field int) int {
	c.complete()
	return c.f[field]
}

func (c *jcal) unixTime() int64 {
	c.complete()
	return c.unix
}

// setHour is Quartz's setCalendarHour: if the hour does not exist (a DST
// gap), Quartz sets the next one.
func (c *jcal) setHour(hour int) {
	c.set(cHour, hour)
	if c.get(cHour) != hour && hour != 24 {
		c.set(cHour, hour+1)
	}
}

// addYear is GregorianCalendar.add(YEAR, n): normalise, move the year, and
// pin the day to the length of the month (Feb 29 -> Feb 28).
func (c *jcal) addYear(n int) {
	c.complete()
	c.f[cYear] += n
	if ml := lastDayOfMonth(c.f[cMonth]+1, c.f[cYear]); c.f[cDay] > ml {
		c.f[cDay] = ml
	}
	c.stale = true
}

func (c *jcal) complete() {
	if !c.stale {
		return
	}
	y, m := c.f[cYear], c.f[cMonth]
	y += floorDiv(m, 12)
	m = floorMod(m, 12)
	days := daysFromCivil(int64(y), m+1, 1) + int64(c.f[cDay]-1)
	wall := days*86400 + int64(c.f[cHour])*3600 + int64(c.f[cMinute])*60 + int64(c.f[cSecond])
	c.unix = wall - int64(wallOffset(c.loc, wall))
	c.stale = false
	c.computeFields()
}

func (c *jcal) computeFields() {
	_, off := time.Unix(c.unix, 0).In(c.loc).Zone()
	local := c.unix + int64(off)
	days := floorDiv64(local, 86400)
	secs := local - days*86400
	y, m, d := civilFromDays(days)
	c.f[cYear], c.f[cMonth], c.f[cDay] = int(y), m-1, d
	c.f[cHour], c.f[cMinute], c.f[cSecond] = int(secs/3600), int(secs/60%60), int(secs%60)
	c.f[cDayOfWeek] = int(floorMod64(days+4, 7)) + 1 // 1970-01-01 was a Thursday (5)
}

// lastDayOfMonth is Quartz's getLastDayOfMonth for month 1..12.
func lastDayOfMonth(month, year int) int {
	switch month {
	case 2:
		if (year%4 == 0 && year%100 != 0) || year%400 == 0 {
			return 29
		}
		return 28
	case 4, 6, 9, 11:
		return 30
	}
	return 31
}

// daysFromCivil returns the days since 1970-01-01 of a proleptic Gregorian
// date (Howard Hinnant's algorithm).
func daysFromCivil(y int64, m, d int) int64 {
	if m <= 2 {
		y--
	}
	era := floorDiv64(y, 400)
	yoe := y - era*400
	mp := int64((m + 9) % 12)
	doy := (153*mp+2)/5 + int64(d) - 1
	doe := yoe*365 + yoe/4 - yoe/100 + doy
	return era*146097 + doe - 719468
}

// civilFromDays is the inverse of daysFromCivil.
func civilFromDays(z int64) (int64, int, int) {
	z += 719468
	era := floorDiv64(z, 146097)
	doe := z - era*146097
	yoe := (doe - doe/1460 + doe/36524 - doe/146096) / 365
	y := yoe + era*400
	doy := doe - (365*yoe + yoe/4 - yoe/100)
	mp := (5*doy + 2) / 153
	d := int(doy - (153*mp+2)/5 + 1)
	m := int(mp + 3)
	if m > 12 {
		m -= 12
	}
	if m <= 2 {
		y++
	}
	return y, m, d
}

func floorDiv(a, b int) int {
	q := a / b
	if (a%b != 0) && ((a < 0) != (b < 0)) {
		q--
	}
	return q
}

func floorMod(a, b int) int { return a - floorDiv(a, b)*b }

func floorDiv64(a, b int64) int64 {
	q := a / b
	if (a%b != 0) && ((a < 0) != (b < 0)) {
		q--
	}
	return q
}

func floorMod64(a, b int64) int64 { return a - floorDiv64(a, b)*b }
