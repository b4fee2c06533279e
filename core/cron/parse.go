package cron

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// ErrInvalidExpression is wrapped by every error Parse and ParseInLocation
// return; test for it with errors.Is.
var ErrInvalidExpression = errors.New("invalid cron expression")

// ParseError describes why an expression was rejected. Kind is the syntax it
// was read in and Why the reason for that choice ("6 fields", "starts with
// @"); ParseSchedule sets Why, Parse and ParseInLocation (Quartz only) leave
// it empty. Field is the field the parser was in ("second", "minute",
// "hour", "day-of-month", "month", "day-of-week", "year"), or "" when the
// problem is the expression as a whole.
type ParseError struct {
	Expr   string
	Kind   Kind
	Why    string
	Field  string
	Value  string // the comma-separated element (Quartz) or field (crontab) being parsed, when known
	Reason string
}

// Error reads `cron "EXPR": [read as KIND (WHY): ][FIELD field: ]REASON`.
func (e *ParseError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "cron %q: ", e.Expr)
	if e.Why != "" {
		fmt.Fprintf(&b, "read as %s (%s): ", e.Kind.article(), e.Why)
	}
	if e.Field != "" {
		fmt.Fprintf(&b, "%s field: ", e.Field)
	}
	b.WriteString(e.Reason)
	return b.String()
}

// Unwrap makes errors.Is(err, ErrInvalidExpression) true.
func (e *ParseError) Unwrap() error { return ErrInvalidExpression }

// Field indexes, in expression order (Quartz's SECOND..YEAR).
const (
	fSecond = iota
	fMinute
	fHour
	fDayOfMonth
	fMonth
	fDayOfWeek
	fYear
)

// fieldName returns the user-facing name of field f.
func fieldName(f int) string {
	switch f {
	case fSecond:
		return "second"
	case fMinute:
		return "minute"
	case fHour:
		return "hour"
	case fDayOfMonth:
		return "day-of-month"
	case fMonth:
		return "month"
	case fDayOfWeek:
		return "day-of-week"
	case fYear:
		return "year"
	}
	return ""
}

// Quartz's markers for '*' and '?', stored in the sets like real values.
const (
	allSpec = 99
	noSpec  = 98
)

// Parse parses a Quartz cron expression whose fire times are computed in
// time.Local (Quartz uses the JVM default zone when none is set).
func Parse(expr string) (*Expression, error) {
	return ParseInLocation(expr, time.Local)
}

// ParseInLocation parses a Quartz cron expression whose fire times are
// computed in loc (nil means UTC). It accepts exactly the expressions Quartz
// 2.3.2 accepts, with three deliberate differences documented in docs/cron.md:
// non-ASCII characters are rejected; expressions that Quartz accepts but then
// fails on when computing a fire time (an empty second, minute, hour, month or
// day-of-week field, e.g. "0 , * * * ?") are rejected; and year values beyond
// the search horizon are dropped instead of enumerated.
func ParseInLocation(expr string, loc *time.Location) (*Expression, error) {
	return parse(expr, loc, time.Now().Year()+100)
}

// parse is ParseInLocation with Quartz's CronExpression.MAX_YEAR (the year
// the class was loaded + 100) made explicit so tests can pin it.
func parse(expr string, loc *time.Location, maxYear int) (e *Expression, err error) {
	if loc == nil {
		loc = time.UTC
	}
	e = &Expression{expr: expr, loc: loc, maxYear: maxYear}
	p := parser{expr: expr, e: e, field: -1}
	defer func() {
		if r := recover(); r != nil {
			pe, ok := r.(*ParseError)
			if !ok {
				panic(r)
			}
			e, err = nil, pe
		}
	}()
	p.build()
	return e, nil
}

// parser is a port of CronExpression.buildExpression and friends. Errors are
// raised with panic(*ParseError) and recovered in parse, which keeps the port
// line-for-line comparable with the Java it mirrors (where every charAt and
// parseInt can throw).
type parser struct {
	expr  string
	e     *Expression
	field int
	value string
}

func (p *parser) fail(format string, args ...any) {
	f := ""
	if p.field >= 0 {
		f = fieldName(p.field)
	}
	panic(&ParseError{Expr: p.expr, Field: f, Value: p.value, Reason: fmt.Sprintf(format, args...)})
}

// at is Java's String.charAt: out of range is an error.
func (p *parser) at(s string, i int) byte {
	if i < 0 || i >= len(s) {
		p.fail("%q ends unexpectedly", s)
	}
	return s[i]
}

// substr is Java's String.substring(from, to).
func (p *parser) substr(s string, from, to int) string {
	if from < 0 || to > len(s) || from > to {
		p.fail("%q ends unexpectedly", s)
	}
	return s[from:to]
}

// parseInt is Java's Integer.parseInt (optional sign, decimal digits, int32).
func (p *parser) parseInt(s string) int {
	v, ok := javaParseInt(s)
	if !ok {
		p.fail("%q is not a number", s)
	}
	return v
}

func javaParseInt(s string) (int, bool) {
	if s == "" || s == "+" || s == "-" {
		return 0, false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if (c < '0' || c > '9') && !(i == 0 && (c == '+' || c == '-')) {
			return 0, false
		}
	}
	v, err := strconv.ParseInt(s, 10, 32)
	if err != nil {
		return 0, false
	}
	return int(v), true
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

func (p *parser) set(f int) *intSet {
	e := p.e
	switch f {
	case fSecond:
		return &e.sec
	case fMinute:
		return &e.min
	case fHour:
		return &e.hour
	case fDayOfMonth:
		return &e.dom
	case fMonth:
		return &e.month
	case fDayOfWeek:
		return &e.dow
	default:
		return &e.year
	}
}

func (p *parser) build() {
	e := p.e
	for i := 0; i < len(p.expr); i++ {
		if p.expr[i] >= 0x80 {
			p.fail("non-ASCII character at byte %d", i)
		}
	}
	upper := strings.ToUpper(p.expr)
	// StringTokenizer(expression, " \t"): runs of delimiters separate tokens.
	tokens := strings.FieldsFunc(upper, func(r rune) bool { return r == ' ' || r == '\t' })
	on := fSecond
	for _, tok := range tokens {
		if on > fYear {
			break // Quartz ignores anything after the year field
		}
		p.field, p.value = on, ""
		tok = strings.TrimFunc(tok, func(r rune) bool { return r <= ' ' }) // String.trim
		if on == fDayOfMonth && strings.IndexByte(tok, 'L') >= 0 && len(tok) > 1 && strings.Contains(tok, ",") {
			p.fail("'L' and 'LW' cannot be combined with other days of the month")
		}
		if on == fDayOfWeek && strings.IndexByte(tok, 'L') >= 0 && len(tok) > 1 && strings.Contains(tok, ",") {
			p.fail("'L' cannot be combined with other days of the week")
		}
		if on == fDayOfWeek && strings.Count(tok, "#") > 1 {
			p.fail("only one \"nth\" day ('#') is supported")
		}
		for _, v := range strings.Split(tok, ",") {
			if v == "" {
				continue // StringTokenizer(expr, ",") skips empty tokens
			}
			p.value = v
			p.store(v, on)
		}
		on++
	}
	p.field, p.value = -1, ""
	if on <= fDayOfWeek {
		p.fail("expected 6 or 7 fields (second minute hour day-of-month month day-of-week [year]), got %d", on)
	}
	if on <= fYear {
		p.field = fYear
		p.store("*", fYear)
		p.field = -1
	}
	domSpec := !e.dom.has(noSpec)
	dowSpec := !e.dow.has(noSpec)
	if domSpec == dowSpec {
		if domSpec {
			p.fail("specifying both a day-of-month and a day-of-week is not supported; use '?' in one of them")
		}
		p.fail("'?' can only be used in one of day-of-month and day-of-week")
	}
	// Quartz accepts these but getTimeAfter then throws NoSuchElementException.
	for _, f := range [...]int{fSecond, fMinute, fHour, fMonth} {
		if p.set(f).empty() {
			p.field = f
			p.fail("no values")
		}
	}
	if dowSpec && e.dow.empty() {
		p.field = fDayOfWeek
		p.fail("no values")
	}
}

func isLastDayOffset(s string) bool {
	// Java: s.matches("^L-[0-9]*[W]?")
	if len(s) < 2 || s[0] != 'L' || s[1] != '-' {
		return false
	}
	i := 2
	for i < len(s) && isDigit(s[i]) {
		i++
	}
	if i < len(s) && s[i] == 'W' {
		i++
	}
	return i == len(s)
}

// Month and day names, three letters each, in Quartz's order.
const (
	monthNames = "JANFEBMARAPRMAYJUNJULAUGSEPOCTNOVDEC"
	dayNames   = "SUNMONTUEWEDTHUFRISAT"
)

// nameIndex returns the position of the three-letter name s in names, or -1.
func nameIndex(names, s string) int {
	if len(s) != 3 {
		return -1
	}
	for i := 0; i+3 <= len(names); i += 3 {
		if names[i:i+3] == s {
			return i / 3
		}
	}
	return -1
}

// monthNumber returns 0..11, or -1 (Quartz's getMonthNumber).
func monthNumber(s string) int { return nameIndex(monthNames, s) }

// dayNumber returns 1 (SUN)..7 (SAT), or -1 (Quartz's getDayOfWeekNumber).
func dayNumber(s string) int {
	if i := nameIndex(dayNames, s); i >= 0 {
		return i + 1
	}
	return -1
}

// store is CronExpression.storeExpressionVals for one comma-separated element.
func (p *parser) store(s string, typ int) {
	e := p.e
	i := 0
	for i < len(s) && (s[i] == ' ' || s[i] == '\t') {
		i++
	}
	if i >= len(s) {
		return
	}
	c := s[i]
	if c >= 'A' && c <= 'Z' && s != "L" && s != "LW" && !isLastDayOffset(s) {
		sub := p.substr(s, i, i+3)
		sval, eval := -1, -1
		switch typ {
		case fMonth:
			sval = monthNumber(sub) + 1
			if sval <= 0 {
				p.fail("invalid month name %q", sub)
			}
			if len(s) > i+3 && s[i+3] == '-' {
				i += 4
				sub = p.substr(s, i, i+3)
				eval = monthNumber(sub) + 1
				if eval <= 0 {
					p.fail("invalid month name %q", sub)
				}
			}
		case fDayOfWeek:
			sval = dayNumber(sub)
			if sval < 0 {
				p.fail("invalid day-of-week name %q", sub)
			}
			if len(s) > i+3 {
				switch s[i+3] {
				case '-':
					i += 4
					sub = p.substr(s, i, i+3)
					eval = dayNumber(sub)
					if eval < 0 {
						p.fail("invalid day-of-week name %q", sub)
					}
				case '#':
					i += 4
					n, ok := javaParseInt(s[i:])
					if !ok || n < 1 || n > 5 {
						p.fail("'#' must be followed by a number from 1 to 5")
					}
					e.nthDayOfWeek = n
				case 'L':
					e.lastDayOfWeek = true
				}
			}
		default:
			p.fail("names such as %q are not allowed here", sub)
		}
		incr := 0
		if eval != -1 {
			incr = 1
		}
		p.addToSet(sval, eval, incr, typ)
		return
	}

	switch {
	case c == '?':
		i++
		if i+1 < len(s) && s[i] != ' ' && s[i+1] != '\t' {
			p.fail("unexpected character %q after '?'", s[i])
		}
		if typ != fDayOfWeek && typ != fDayOfMonth {
			p.fail("'?' is only allowed in day-of-month and day-of-week")
		}
		if typ == fDayOfWeek && !e.lastDayOfMonth {
			v, ok := e.dom.last()
			if !ok {
				p.fail("day-of-month field has no values")
			}
			if v == noSpec {
				p.fail("'?' can only be used in one of day-of-month and day-of-week")
			}
		}
		p.addToSet(noSpec, -1, 0, typ)

	case c == '*' || c == '/':
		incr := 0
		if c == '*' && i+1 >= len(s) {
			p.addToSet(allSpec, -1, incr, typ)
			return
		}
		if c == '/' && (i+1 >= len(s) || s[i+1] == ' ' || s[i+1] == '\t') {
			p.fail("'/' must be followed by an integer")
		}
		if c == '*' {
			i++
		}
		if s[i] == '/' {
			i++
			if i >= len(s) {
				p.fail("'/' must be followed by an integer")
			}
			// getNumericValue: Quartz's findNextWhiteSpace never stops early,
			// so the increment is the rest of the element.
			incr = p.parseInt(s[i:])
			p.checkIncrementRange(incr, typ)
		} else {
			incr = 1
		}
		p.addToSet(allSpec, -1, incr, typ)

	case c == 'L':
		i++
		if typ == fDayOfMonth {
			e.lastDayOfMonth = true
		}
		if typ == fDayOfWeek {
			p.addToSet(7, 7, 0, typ)
		}
		if typ == fDayOfMonth && len(s) > i {
			if s[i] == '-' {
				v, pos := p.getValue(0, s, i+1)
				e.lastDayOffset = v
				if v > 30 {
					p.fail("offset from the last day must be at most 30, got %d", v)
				}
				i = pos
			}
			if len(s) > i && s[i] == 'W' {
				e.nearestWeekday = true
			}
		}

	case isDigit(c):
		val := int(c - '0')
		i++
		if i >= len(s) {
			p.addToSet(val, -1, -1, typ)
			return
		}
		if isDigit(s[i]) {
			val, i = p.getValue(val, s, i)
		}
		p.checkNext(i, s, val, typ)

	default:
		p.fail("unexpected character %q", c)
	}
}

// checkNext is CronExpression.checkNext: what follows a leading number.
func (p *parser) checkNext(pos int, s string, val, typ int) {
	e := p.e
	end := -1
	i := pos
	if i >= len(s) {
		p.addToSet(val, end, -1, typ)
		return
	}
	switch c := s[pos]; c {
	case 'L':
		if typ != fDayOfWeek {
			p.fail("'L' is not allowed after a number here")
		}
		if val < 1 || val > 7 {
			p.fail("value %d out of range 1-7", val)
		}
		e.lastDayOfWeek = true
		p.set(typ).add(val)

	case 'W':
		if typ != fDayOfMonth {
			p.fail("'W' is only allowed in day-of-month")
		}
		e.nearestWeekday = true
		if val > 31 {
			p.fail("'W' needs a day of at most 31, got %d", val)
		}
		p.set(typ).add(val)

	case '#':
		if typ != fDayOfWeek {
			p.fail("'#' is only allowed in day-of-week")
		}
		i++
		n, ok := javaParseInt(s[i:])
		if !ok || n < 1 || n > 5 {
			p.fail("'#' must be followed by a number from 1 to 5")
		}
		e.nthDayOfWeek = n
		p.set(typ).add(val)

	case '-':
		i++
		v := p.digit(p.at(s, i))
		end = v
		i++
		if i >= len(s) {
			p.addToSet(val, end, 1, typ)
			return
		}
		if isDigit(s[i]) {
			end, i = p.getValue(v, s, i)
		}
		if i < len(s) && s[i] == '/' {
			i++
			v2 := p.digit(p.at(s, i))
			i++
			if i >= len(s) {
				p.addToSet(val, end, v2, typ)
				return
			}
			if isDigit(s[i]) {
				v3, _ := p.getValue(v2, s, i)
				p.addToSet(val, end, v3, typ)
				return
			}
			p.addToSet(val, end, v2, typ)
			return
		}
		p.addToSet(val, end, 1, typ)

	case '/':
		if i+1 >= len(s) || s[i+1] == ' ' || s[i+1] == '\t' {
			p.fail("'/' must be followed by an integer")
		}
		i++
		v2 := p.digit(s[i])
		i++
		if i >= len(s) {
			p.checkIncrementRange(v2, typ)
			p.addToSet(val, end, v2, typ)
			return
		}
		if !isDigit(s[i]) {
			p.fail("unexpected character %q after '/'", s[i])
		}
		v3, _ := p.getValue(v2, s, i)
		p.checkIncrementRange(v3, typ)
		p.addToSet(val, end, v3, typ)

	default:
		// Quartz ignores whatever follows the number.
		p.addToSet(val, end, 0, typ)
	}
}

// digit is Integer.parseInt(String.valueOf(c)).
func (p *parser) digit(c byte) int {
	if !isDigit(c) {
		p.fail("unexpected character %q where a digit was expected", c)
	}
	return int(c - '0')
}

// getValue is CronExpression.getValue: v followed by the digits at s[i:].
// It returns the number and the position after it (len+1 at the end, as Java).
func (p *parser) getValue(v int, s string, i int) (int, int) {
	c := p.at(s, i)
	num := strconv.Itoa(v)
	for isDigit(c) {
		num += string(c)
		i++
		if i >= len(s) {
			break
		}
		c = s[i]
	}
	pos := i
	if i >= len(s) {
		pos = i + 1
	}
	return p.parseInt(num), pos
}

func (p *parser) checkIncrementRange(incr, typ int) {
	switch {
	case incr > 59 && (typ == fSecond || typ == fMinute):
		p.fail("increment %d out of range 0-59", incr)
	case incr > 23 && typ == fHour:
		p.fail("increment %d out of range 0-23", incr)
	case incr > 31 && typ == fDayOfMonth:
		p.fail("increment %d out of range 0-31", incr)
	case incr > 7 && typ == fDayOfWeek:
		p.fail("increment %d out of range 0-7", incr)
	case incr > 12 && typ == fMonth:
		p.fail("increment %d out of range 0-12", incr)
	}
}

// addToSet is CronExpression.addToSet: validate, then add val, or the range
// val..end stepping by incr (wrapping around when end < val).
func (p *parser) addToSet(val, end, incr, typ int) {
	set := p.set(typ)
	lo, hi := 0, 0
	bad := false
	switch typ {
	case fSecond, fMinute:
		lo, hi = 0, 59
		bad = (val < 0 || val > 59 || end > 59) && val != allSpec
	case fHour:
		lo, hi = 0, 23
		bad = (val < 0 || val > 23 || end > 23) && val != allSpec
	case fDayOfMonth:
		lo, hi = 1, 31
		bad = (val < 1 || val > 31 || end > 31) && val != allSpec && val != noSpec
	case fMonth:
		lo, hi = 1, 12
		bad = (val < 1 || val > 12 || end > 12) && val != allSpec
	case fDayOfWeek:
		lo, hi = 1, 7
		bad = (val == 0 || val > 7 || end > 7) && val != allSpec && val != noSpec
	}
	if bad {
		if val < lo || val > hi {
			p.fail("value %d out of range %d-%d", val, lo, hi)
		}
		p.fail("range end %d out of range %d-%d", end, lo, hi)
	}

	if (incr == 0 || incr == -1) && val != allSpec {
		if val == -1 {
			val = noSpec
		}
		if typ != fYear || val <= p.e.maxYear {
			set.add(val)
		}
		return
	}

	start, stop := val, end
	if val == allSpec && incr <= 0 {
		incr = 1
		set.add(allSpec) // a marker; the values are filled in too
	}
	def := [...][2]int{fSecond: {0, 59}, fMinute: {0, 59}, fHour: {0, 23}, fDayOfMonth: {1, 31},
		fMonth: {1, 12}, fDayOfWeek: {1, 7}, fYear: {1970, p.e.maxYear}}[typ]
	if stop == -1 {
		stop = def[1]
	}
	if start == -1 || start == allSpec {
		start = def[0]
	}

	// A range whose end is before its start wraps around (23-2, FRI-MON).
	max := -1
	if stop < start {
		switch typ {
		case fSecond, fMinute:
			max = 60
		case fHour:
			max = 24
		case fMonth:
			max = 12
		case fDayOfWeek:
			max = 7
		case fDayOfMonth:
			max = 31
		case fYear:
			p.fail("range start %d is after range end %d", start, stop)
		}
		stop += max
	}
	if typ == fYear && stop > p.e.maxYear {
		// Years past MAX_YEAR can never fire (getTimeAfter gives up there),
		// so Quartz's enumeration of them is skipped.
		stop = p.e.maxYear
	}
	for i := start; i <= stop; i += incr {
		if max == -1 {
			set.add(i)
			continue
		}
		v := i % max
		if v == 0 && (typ == fMonth || typ == fDayOfWeek || typ == fDayOfMonth) {
			v = max
		}
		set.add(v)
	}
}
