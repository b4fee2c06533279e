package cron

import (
	"fmt"
	"slices"
	"strings"
	"time"

	robfig "github.com/robfig/cron/v3"
)

// Kind is the syntax a cron string is read in. ParseSchedule decides it
// from the string's shape alone (see KindOf), so no Quartz expression
// changes meaning.
type Kind int

const (
	// KindQuartz is Quartz's syntax, what ElasticJob reads: 6 or 7 fields,
	// seconds first. It is also the kind of anything that fits no other
	// shape, so that an invalid string gets Quartz's error.
	KindQuartz Kind = iota
	// KindCrontab is the standard 5-field crontab (minute hour
	// day-of-month month day-of-week), parsed by robfig/cron/v3.
	KindCrontab
	// KindDescriptor is a robfig/cron/v3 descriptor: @yearly, @annually,
	// @monthly, @weekly, @daily, @midnight, @hourly or @every <duration>.
	KindDescriptor
)

// String returns "Quartz", "crontab" or "descriptor".
func (k Kind) String() string {
	switch k {
	case KindCrontab:
		return "crontab"
	case KindDescriptor:
		return "descriptor"
	}
	return "Quartz"
}

// article returns the kind as a noun phrase for error messages.
func (k Kind) article() string {
	switch k {
	case KindCrontab:
		return "a standard crontab"
	case KindDescriptor:
		return "a descriptor"
	}
	return "Quartz"
}

// fields splits expr as Quartz tokenizes it: on runs of spaces and tabs.
func fields(expr string) []string {
	return strings.FieldsFunc(expr, func(r rune) bool { return r == ' ' || r == '\t' })
}

// KindOf returns the syntax ParseSchedule reads expr in: KindDescriptor
// when it starts with '@' (after leading spaces and tabs), KindCrontab when
// it has exactly 5 fields separated by spaces or tabs, else KindQuartz
// (so the empty string, a one-off job's cron, is KindQuartz). It does not
// check that expr is valid.
func KindOf(expr string) Kind {
	f := fields(expr)
	switch {
	case len(f) > 0 && strings.HasPrefix(f[0], "@"):
		return KindDescriptor
	case len(f) == 5:
		return KindCrontab
	}
	return KindQuartz
}

// IsQuartz reports whether expr is read as a Quartz expression, the only
// kind an Apache ElasticJob (Java) instance can read from a shared
// namespace. The empty string counts: it is a one-off job's cron, which
// ElasticJob reads too.
func IsQuartz(expr string) bool { return KindOf(expr) == KindQuartz }

// Schedule is a parsed cron string of any kind, bound to a time zone. The
// Quartz kind is *Expression. A Schedule is immutable and safe for
// concurrent use.
type Schedule interface {
	// Next returns the first fire time strictly after the given instant,
	// a whole second in the schedule's location, or the zero Time when
	// there is none.
	Next(after time.Time) time.Time
	// String returns the cron string as it was given.
	String() string
	// Location returns the time zone fire times are computed in.
	Location() *time.Location
	// Kind returns the syntax the string was read in.
	Kind() Kind
}

var _ Schedule = (*Expression)(nil)

// Kind returns KindQuartz.
func (e *Expression) Kind() Kind { return KindQuartz }

// ParseSchedule parses a cron string of any kind whose fire times are
// computed in loc (nil means UTC). The kind comes from the shape (KindOf):
//
//   - starts with '@': a descriptor, parsed by robfig/cron/v3. "@every d"
//     takes a Go duration that must be a positive whole number of seconds
//     (robfig would silently turn 0s, -1m or 1500ms into 1s);
//   - 5 fields: a standard crontab, parsed by robfig/cron/v3's standard
//     parser, except that '?' (Quartz syntax; robfig reads it as '*') is
//     rejected, since a 5-field string with '?' is most likely a Quartz
//     expression with a field missing;
//   - anything else: Quartz, exactly as ParseInLocation.
//
// robfig's CRON_TZ= and TZ= prefixes are rejected: the job's time zone is
// loc. Errors are *ParseError values saying which syntax was assumed and why,
// and wrap ErrInvalidExpression.
func ParseSchedule(expr string, loc *time.Location) (Schedule, error) {
	if loc == nil {
		loc = time.UTC
	}
	f := fields(expr)
	if len(f) > 0 && (strings.HasPrefix(f[0], "CRON_TZ=") || strings.HasPrefix(f[0], "TZ=")) {
		return nil, &ParseError{Expr: expr, Kind: KindOf(expr),
			Reason: fmt.Sprintf("a %s prefix is not supported: set the job's timeZone instead", f[0][:strings.IndexByte(f[0], '=')+1])}
	}
	switch KindOf(expr) {
	case KindDescriptor:
		return parseDescriptor(expr, f, loc)
	case KindCrontab:
		return parseCrontab(expr, f, loc)
	}
	if len(f) < 5 {
		n := fmt.Sprintf("%d fields fit", len(f))
		if len(f) == 1 {
			n = "1 field fits"
		}
		return nil, &ParseError{Expr: expr, Kind: KindQuartz, Reason: fmt.Sprintf(
			"%s no syntax: want 5 (crontab: minute hour day-of-month month day-of-week), "+
				"6 or 7 (Quartz: second minute hour day-of-month month day-of-week [year]), "+
				"or a descriptor (@hourly, @daily, @every 90s, ...)", n)}
	}
	e, err := ParseInLocation(expr, loc)
	if err != nil {
		if pe, ok := err.(*ParseError); ok {
			pe.Why = fmt.Sprintf("%d fields", len(f))
		}
		return nil, err
	}
	return e, nil
}

// robfigParser is robfig/cron/v3's standard parser with descriptors (its
// ParseStandard), stateless.
func robfigParser() robfig.Parser {
	return robfig.NewParser(robfig.Minute | robfig.Hour | robfig.Dom | robfig.Month | robfig.Dow | robfig.Descriptor)
}

// checkPrintable rejects what neither robfig nor a YAML scalar should carry.
func checkPrintable(expr string, kind Kind, why string) error {
	for i := 0; i < len(expr); i++ {
		if c := expr[i]; (c < ' ' && c != '\t') || c >= 0x7f {
			return &ParseError{Expr: expr, Kind: kind, Why: why, Reason: fmt.Sprintf("non-ASCII or control character at byte %d", i)}
		}
	}
	return nil
}

// crontabFields names the fields of a standard crontab, in order.
const crontabFields = "minute hour day-of-month month day-of-week"

func parseCrontab(expr string, f []string, loc *time.Location) (Schedule, error) {
	const why = "5 fields"
	if err := checkPrintable(expr, KindCrontab, why); err != nil {
		return nil, err
	}
	fail := func(field int, reason string) error {
		return &ParseError{Expr: expr, Kind: KindCrontab, Why: why, Field: strings.Fields(crontabFields)[field], Value: f[field], Reason: reason}
	}
	for i, v := range f {
		if strings.Contains(v, "?") {
			return nil, fail(i, "'?' is Quartz syntax; in a 5-field crontab write '*' "+
				"(a Quartz expression has 6 or 7 fields, seconds first)")
		}
	}
	p := robfigParser()
	spec := strings.Join(f, " ")
	s, err := p.Parse(spec)
	if err != nil {
		// robfig's errors do not name the field: find the first field that
		// fails alone (robfig parses them in this order too).
		for i := range f {
			one := [5]string{"*", "*", "*", "*", "*"}
			one[i] = f[i]
			if _, ferr := p.Parse(strings.Join(one[:], " ")); ferr != nil {
				reason := ferr.Error()
				if strings.ContainsAny(strings.ToUpper(f[i]), "LW#") {
					reason += " ('L', 'W' and '#' are Quartz syntax: a Quartz expression has 6 or 7 fields, seconds first)"
				}
				return nil, fail(i, reason)
			}
		}
		return nil, &ParseError{Expr: expr, Kind: KindCrontab, Why: why, Reason: err.Error()}
	}
	return &standard{expr: expr, kind: KindCrontab, loc: loc, sched: s}, nil
}

// fixedDescriptors are robfig/cron/v3's descriptors other than @every.
const fixedDescriptors = "@yearly @annually @monthly @weekly @daily @midnight @hourly"

func isFixedDescriptor(s string) bool { return slices.Contains(strings.Fields(fixedDescriptors), s) }

func parseDescriptor(expr string, f []string, loc *time.Location) (Schedule, error) {
	const why = "starts with @"
	if err := checkPrintable(expr, KindDescriptor, why); err != nil {
		return nil, err
	}
	fail := func(format string, args ...any) error {
		return &ParseError{Expr: expr, Kind: KindDescriptor, Why: why, Reason: fmt.Sprintf(format, args...)}
	}
	name := f[0]
	var spec string
	switch {
	case name == "@every":
		if len(f) != 2 {
			return nil, fail("@every takes one Go duration such as 90s or 1h30m")
		}
		d, err := time.ParseDuration(f[1])
		if err != nil {
			return nil, fail("@every takes a Go duration such as 90s or 1h30m: %v", err)
		}
		if d <= 0 || d%time.Second != 0 {
			return nil, fail("@every needs a positive whole number of seconds (fire times are whole seconds), got %s", f[1])
		}
		spec = "@every " + f[1]
	case isFixedDescriptor(name):
		if len(f) != 1 {
			return nil, fail("%s takes no argument", name)
		}
		spec = name
	default:
		hint := ""
		if l := strings.ToLower(name); l != name && (l == "@every" || isFixedDescriptor(l)) {
			hint = fmt.Sprintf(" (descriptors are lower case: %s)", l)
		}
		return nil, fail("unknown descriptor %q%s; want one of %s or @every <duration>", name, hint, strings.ReplaceAll(fixedDescriptors, " ", ", "))
	}
	s, err := robfigParser().Parse(spec)
	if err != nil {
		return nil, fail("%v", err)
	}
	return &standard{expr: expr, kind: KindDescriptor, loc: loc, sched: s}, nil
}

// standard is a crontab or descriptor schedule: robfig/cron/v3's Schedule
// evaluated in loc. robfig's parser leaves the schedule's location at
// time.Local, which its SpecSchedule.Next reads as "the location of the
// time passed in", so Next passes after in loc.
type standard struct {
	expr  string
	kind  Kind
	loc   *time.Location
	sched robfig.Schedule
}

func (s *standard) Next(after time.Time) time.Time {
	t := s.sched.Next(after.In(s.loc))
	if t.IsZero() {
		return t
	}
	return t.In(s.loc)
}

func (s *standard) String() string           { return s.expr }
func (s *standard) Location() *time.Location { return s.loc }
func (s *standard) Kind() Kind               { return s.kind }
