package cron

// This file ports CronExpression.getTimeAfter. Quartz walks a lenient
// java.util.GregorianCalendar field by field; jcal below reproduces the parts
// of that calendar's behaviour Quartz relies on, notably that setting a field
// only marks the time stale and the next get() recomputes the instant from
// all fields (which is where Quartz's DST behaviour comes from: see
// wallOffset).

// maxIterations bounds the search loop. Quartz has none: it gives up at year
// 2999 (the slowest such search, a day-of-week that never matches, takes about
// 25,000 iterations) but loops forever on a few odd day-of-month expressions
// (0W, L-30W), where Next instead reports no fire time. Real expressions need
// a few dozen iterations.
const maxIterations = 200_000

func (e *Expression) timeAfter(start int64) (int64, bool) {
	cl := jcal{loc: e.loc}
	cl.setTime(start)
	domSpec := !e.dom.has(noSpec)
	dowSpec := !e.dow.has(noSpec)

	for iter := 0; iter < maxIterations; iter++ {
		if cl.get(cYear) > 2999 {
			return 0, false
		}

		// second
		sec := cl.get(cSecond)
		min := cl.get(cMinute)
		if v, ok := e.sec.ceil(sec); ok {
			sec = v
		} else {
			sec, _ = e.sec.first()
			min++
			cl.set(cMinute, min)
		}
		cl.set(cSecond, sec)

		// minute
		min = cl.get(cMinute)
		hr := cl.get(cHour)
		t := -1
		if v, ok := e.min.ceil(min); ok {
			t = min
			min = v
		} else {
			min, _ = e.min.first()
			hr++
		}
		if min != t {
			cl.set(cSecond, 0)
			cl.set(cMinute, min)
			cl.setHour(hr)
			continue
		}
		cl.set(cMinute, min)

		// hour
		hr = cl.get(cHour)
		day := cl.get(cDay)
		t = -1
		if v, ok := e.hour.ceil(hr); ok {
			t = hr
			hr = v
		} else {
			hr, _ = e.hour.first()
			day++
		}
		if hr != t {
			cl.set(cSecond, 0)
			cl.set(cMinute, 0)
			cl.set(cDay, day)
			cl.setHour(hr)
			continue
		}
		cl.set(cHour, hr)

		// day
		day = cl.get(cDay)
		mon := cl.get(cMonth) + 1
		t = -1
		tmon := mon
		switch {
		case domSpec && !dowSpec:
			st, stOK := e.dom.ceil(day)
			switch {
			case e.lastDayOfMonth && !e.nearestWeekday:
				t = day
				day = lastDayOfMonth(mon, cl.get(cYear)) - e.lastDayOffset
				if t > day {
					mon++
					if mon > 12 {
						mon = 1
						tmon = 3333 // make the mon != tmon test below succeed
						cl.addYear(1)
					}
					day = 1
				}
			case e.lastDayOfMonth: // LW, L-nW
				t = day
				day = lastDayOfMonth(mon, cl.get(cYear)) - e.lastDayOffset
				adj, before := e.weekdayNear(cl.get(cYear), mon, day, hr, min, sec, start)
				day = adj
				if before {
					day = 1
					mon++
				}
			case e.nearestWeekday: // nW
				t = day
				day, _ = e.dom.first()
				adj, before := e.weekdayNear(cl.get(cYear), mon, day, hr, min, sec, start)
				day = adj
				if before {
					day, _ = e.dom.first()
					mon++
				}
			case stOK:
				t = day
				day = st
				if day > lastDayOfMonth(mon, cl.get(cYear)) {
					day, _ = e.dom.first()
					mon++
				}
			default:
				day, _ = e.dom.first()
				mon++
			}
			if day != t || mon != tmon {
				cl.set(cSecond, 0)
				cl.set(cMinute, 0)
				cl.set(cHour, 0)
				cl.set(cDay, day)
				cl.set(cMonth, mon-1)
				continue
			}

		case dowSpec && !domSpec:
			switch {
			case e.lastDayOfWeek: // nL: the last n-day of the month
				dow, _ := e.dow.first()
				cDow := cl.get(cDayOfWeek)
				daysToAdd := 0
				if cDow < dow {
					daysToAdd = dow - cDow
				}
				if cDow > dow {
					daysToAdd = dow + (7 - cDow)
				}
				lDay := lastDayOfMonth(mon, cl.get(cYear))
				if day+daysToAdd > lDay {
					cl.set(cSecond, 0)
					cl.set(cMinute, 0)
					cl.set(cHour, 0)
					cl.set(cDay, 1)
					cl.set(cMonth, mon) // the next month
					continue
				}
				for day+daysToAdd+7 <= lDay {
					daysToAdd += 7
				}
				day += daysToAdd
				if daysToAdd > 0 {
					cl.set(cSecond, 0)
					cl.set(cMinute, 0)
					cl.set(cHour, 0)
					cl.set(cDay, day)
					cl.set(cMonth, mon-1)
					continue
				}

			case e.nthDayOfWeek != 0: // n#k
				dow, _ := e.dow.first()
				cDow := cl.get(cDayOfWeek)
				daysToAdd := 0
				if cDow < dow {
					daysToAdd = dow - cDow
				} else if cDow > dow {
					daysToAdd = dow + (7 - cDow)
				}
				dayShifted := daysToAdd > 0
				day += daysToAdd
				weekOfMonth := day / 7
				if day%7 > 0 {
					weekOfMonth++
				}
				daysToAdd = (e.nthDayOfWeek - weekOfMonth) * 7
				day += daysToAdd
				if daysToAdd < 0 || day > lastDayOfMonth(mon, cl.get(cYear)) {
					cl.set(cSecond, 0)
					cl.set(cMinute, 0)
					cl.set(cHour, 0)
					cl.set(cDay, 1)
					cl.set(cMonth, mon) // the next month
					continue
				} else if daysToAdd > 0 || dayShifted {
					cl.set(cSecond, 0)
					cl.set(cMinute, 0)
					cl.set(cHour, 0)
					cl.set(cDay, day)
					cl.set(cMonth, mon-1)
					continue
				}

			default:
				cDow := cl.get(cDayOfWeek)
				dow, _ := e.dow.first()
				if v, ok := e.dow.ceil(cDow); ok {
					dow = v
				}
				daysToAdd := 0
				if cDow < dow {
					daysToAdd = dow - cDow
				}
				if cDow > dow {
					daysToAdd = dow + (7 - cDow)
				}
				lDay := lastDayOfMonth(mon, cl.get(cYear))
				if day+daysToAdd > lDay {
					cl.set(cSecond, 0)
					cl.set(cMinute, 0)
					cl.set(cHour, 0)
					cl.set(cDay, 1)
					cl.set(cMonth, mon) // the next month
					continue
				} else if daysToAdd > 0 {
					cl.set(cSecond, 0)
					cl.set(cMinute, 0)
					cl.set(cHour, 0)
					cl.set(cDay, day+daysToAdd)
					cl.set(cMonth, mon-1)
					continue
				}
			}

		default:
			// parse rejects expressions with both or neither day field.
			return 0, false
		}
		cl.set(cDay, day)

		// month
		mon = cl.get(cMonth) + 1
		year := cl.get(cYear)
		t = -1
		if year > e.maxYear {
			return 0, false
		}
		if v, ok := e.month.ceil(mon); ok {
			t = mon
			mon = v
		} else {
			mon, _ = e.month.first()
			year++
		}
		if mon != t {
			cl.set(cSecond, 0)
			cl.set(cMinute, 0)
			cl.set(cHour, 0)
			cl.set(cDay, 1)
			cl.set(cMonth, mon-1)
			cl.set(cYear, year)
			continue
		}
		cl.set(cMonth, mon-1)

		// year
		year = cl.get(cYear)
		t = -1
		if v, ok := e.year.ceil(year); ok {
			t = year
			year = v
		} else {
			return 0, false // ran out of years
		}
		if year != t {
			cl.set(cSecond, 0)
			cl.set(cMinute, 0)
			cl.set(cHour, 0)
			cl.set(cDay, 1)
			cl.set(cMonth, 0)
			cl.set(cYear, year)
			continue
		}
		cl.set(cYear, year)
		return cl.unixTime(), true
	}
	return 0, false
}

// weekdayNear ports the "tcal" blocks of getTimeAfter for 'W': it moves
// day (of month mon, year) to the nearest weekday without leaving the month,
// and reports whether that day at hr:min:sec is before start (Quartz's
// nTime.before(afterTime)). As in Quartz the day may be out of range (0W,
// L-30W in February); the lenient calendar rolls it into a neighbour month.
func (e *Expression) weekdayNear(year, mon, day, hr, min, sec int, start int64) (int, bool) {
	tc := jcal{loc: e.loc}
	tc.setFields(year, mon-1, day, 0, 0, 0)
	ldom := lastDayOfMonth(mon, year)
	dow := tc.get(cDayOfWeek)
	switch {
	case dow == saturday && day == 1:
		day += 2
	case dow == saturday:
		day--
	case dow == sunday && day == ldom:
		day -= 2
	case dow == sunday:
		day++
	}
	tc.set(cSecond, sec)
	tc.set(cMinute, min)
	tc.set(cHour, hr)
	tc.set(cDay, day)
	tc.set(cMonth, mon-1)
	// Quartz's tcal carries the milliseconds of "now" while afterTime carries
	// those of the caller's instant; for whole-second instants (all Quartz
	// and ejob fire times) this is exactly a comparison of seconds.
	return day, tc.unixTime() < start
}
