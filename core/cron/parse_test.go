package cron

import (
	"errors"
	"strings"
	"testing"
	"time"
)

func TestParseErrors(t *testing.T) {
	t.Parallel()
	tests := map[string]struct {
		expr   string
		field  string // "" for the whole expression
		reason string // substring of the message
	}{
		"hour out of range":          {"0 0 25 * * ?", "hour", "value 25 out of range 0-23"},
		"second out of range":        {"60 0 12 * * ?", "second", "value 60 out of range 0-59"},
		"minute range end":           {"0 5-60 12 * * ?", "minute", "range end 60 out of range 0-59"},
		"day-of-month zero":          {"0 0 12 0 * ?", "day-of-month", "value 0 out of range 1-31"},
		"day-of-month 32":            {"0 0 12 32 * ?", "day-of-month", "value 32 out of range 1-31"},
		"month 13":                   {"0 0 12 1 13 ?", "month", "value 13 out of range 1-12"},
		"day-of-week 8":              {"0 0 12 ? * 8", "day-of-week", "value 8 out of range 1-7"},
		"day-of-week 0":              {"0 0 12 ? * 0", "day-of-week", "value 0 out of range 1-7"},
		"too few fields":             {"0 0 12 * *", "", "expected 6 or 7 fields"},
		"empty":                      {"", "", "got 0"},
		"both day fields":            {"0 0 12 5 * MON", "", "both a day-of-month and a day-of-week"},
		"both stars":                 {"0 0 12 * * *", "", "both a day-of-month and a day-of-week"},
		"both question marks":        {"0 0 12 ? * ?", "day-of-week", "'?' can only be used in one of"},
		"question mark in hour":      {"0 0 ? * * ?", "hour", "'?' is only allowed in day-of-month and day-of-week"},
		"bad month name":             {"0 0 12 1 FOO ?", "month", `invalid month name "FOO"`},
		"bad day name":               {"0 0 12 ? * FOO", "day-of-week", `invalid day-of-week name "FOO"`},
		"name in minute":             {"0 MON 12 * * ?", "minute", `names such as "MON" are not allowed here`},
		"nth too big":                {"0 0 12 ? * MON#6", "day-of-week", "'#' must be followed by a number from 1 to 5"},
		"nth missing":                {"0 0 12 ? * 2#", "day-of-week", "'#' must be followed by a number from 1 to 5"},
		"two nth":                    {"0 0 12 ? * 2#1,3#2", "day-of-week", "only one \"nth\" day"},
		"L with list in dom":         {"0 0 12 L,5 * ?", "day-of-month", "'L' and 'LW' cannot be combined"},
		"L with list in dow":         {"0 0 12 ? * 5L,6", "day-of-week", "'L' cannot be combined"},
		"nL out of range":            {"0 0 12 ? * 8L", "day-of-week", "value 8 out of range 1-7"},
		"L after number in dom":      {"0 0 12 5L * ?", "day-of-month", "'L' is not allowed after a number here"},
		"W too big":                  {"0 0 12 32W * ?", "day-of-month", "'W' needs a day of at most 31"},
		"W in day-of-week":           {"0 0 12 ? * 5W", "day-of-week", "'W' is only allowed in day-of-month"},
		"L offset too big":           {"0 0 12 L-31 * ?", "day-of-month", "offset from the last day must be at most 30"},
		"slash without step":         {"0 0/ 12 * * ?", "minute", "'/' must be followed by an integer"},
		"step too big":               {"0 0/60 12 * * ?", "minute", "increment 60 out of range 0-59"},
		"hour step too big":          {"0 0 0/24 * * ?", "hour", "increment 24 out of range 0-23"},
		"star step not a number":     {"0 */5X 12 * * ?", "minute", `"5X" is not a number`},
		"range to non-digit":         {"0 5-X 12 * * ?", "minute", "where a digit was expected"},
		"year range backwards":       {"0 0 12 * * ? 2030-2020", "year", "range start 2030 is after range end 2020"},
		"year number overflows":      {"0 0 12 * * ? 99999999999", "year", "is not a number"},
		"unexpected character":       {"0 0 12 * * ? -", "year", "unexpected character '-'"},
		"truncated name":             {"0 0 12 1 JA ?", "month", "ends unexpectedly"},
		"empty minute list":          {"0 , 12 * * ?", "minute", "no values"},
		"non-ASCII":                  {"0 0 12 5\u00e9 * ?", "", "non-ASCII character"},
		"junk after question mark":   {"0 0 12 * * ?XY", "day-of-week", "unexpected character 'X' after '?'"},
		"day-of-month list is empty": {"0 0 12 , * ?", "day-of-week", "day-of-month field has no values"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			e, err := ParseInLocation(tc.expr, time.UTC)
			if err == nil {
				t.Fatalf("ParseInLocation(%q) = %v, want an error", tc.expr, e)
			}
			if !errors.Is(err, ErrInvalidExpression) {
				t.Errorf("error %v does not wrap ErrInvalidExpression", err)
			}
			var pe *ParseError
			if !errors.As(err, &pe) {
				t.Fatalf("error %T is not a *ParseError", err)
			}
			if pe.Field != tc.field {
				t.Errorf("Field = %q, want %q (%v)", pe.Field, tc.field, err)
			}
			if !strings.Contains(err.Error(), tc.reason) {
				t.Errorf("error %q does not contain %q", err, tc.reason)
			}
			if !strings.HasPrefix(err.Error(), "cron "+`"`) {
				t.Errorf("error %q does not start with the expression", err)
			}
		})
	}
}

func TestParseErrorMessage(t *testing.T) {
	t.Parallel()
	_, err := ParseInLocation("0 0 25 * * ?", time.UTC)
	const want = `cron "0 0 25 * * ?": hour field: value 25 out of range 0-23`
	if err == nil || err.Error() != want {
		t.Fatalf("error = %v, want %s", err, want)
	}
}

// Quartz is lax; these parse there, so they must parse here (and mean the
// same: the golden file checks the fire times).
func TestParseAcceptsWhatQuartzAccepts(t *testing.T) {
	t.Parallel()
	tests := map[string]string{
		"trailing junk after a number": "0 0 12X * * ?",
		"junk after question mark":     "0 0 12 * * ?X",
		"99 is Quartz's '*' marker":    "99 0 12 * * ?",
		"leading slash":                "0 /5 * * * ?",
		"full day name":                "0 0 12 ? * MONDAY",
		"lower case":                   "0 0 12 ? jan-mar mon-fri",
		"extra tokens ignored":         "0 0 12 * * ? 2030 whatever",
		"tabs and spaces":              "0\t0  12 * *\t?",
		"name range step ignored":      "0 0 12 1 JAN-MAR/2 ?",
		"zero step":                    "0 0/0 12 * * ?",
		"L in day-of-week is SAT":      "0 0 12 ? * L",
		"year beyond horizon":          "0 0 12 * * ? 2500",
	}
	for name, expr := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			if _, err := ParseInLocation(expr, time.UTC); err != nil {
				t.Errorf("ParseInLocation(%q): %v", expr, err)
			}
		})
	}
}

func TestString(t *testing.T) {
	t.Parallel()
	const expr = "0 15 10 ? * mon-fri"
	e, err := ParseInLocation(expr, time.UTC)
	if err != nil {
		t.Fatal(err)
	}
	if e.String() != expr {
		t.Errorf("String() = %q, want %q", e.String(), expr)
	}
	if e.Location() != time.UTC {
		t.Errorf("Location() = %v, want UTC", e.Location())
	}
}
