package cron

import (
	"bufio"
	"errors"
	"flag"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"
)

var update = flag.Bool("update", false, "regenerate testdata/quartz_golden.txt with the Quartz oracle (needs java and libquartz2-java)")

const (
	goldenPath = "testdata/quartz_golden.txt"
	casesPath  = "testdata/oracle/cases.txt"
	// goldenRandomSeed and goldenRandomCount pick the fixed random sample
	// committed into the golden file next to the hand-written cases.
	goldenRandomSeed  = 20251109
	goldenRandomCount = 3000
)

// goldenCase is one line of an oracle answer: the input columns and Quartz's
// result column (see testdata/oracle/QuartzOracle.java).
type goldenCase struct {
	line   int
	expr   string // unescaped
	zone   string
	from   string
	n      int
	result string
}

func (c goldenCase) name() string { return fmt.Sprintf("L%d", c.line) }

// parseOracleOutput reads the oracle's output: a "# maxYear=N" header, then
// one tab-separated case per line.
func parseOracleOutput(text string) (maxYear int, cases []goldenCase, err error) {
	sc := bufio.NewScanner(strings.NewReader(text))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for ln := 1; sc.Scan(); ln++ {
		line := sc.Text()
		if v, ok := strings.CutPrefix(line, "# maxYear="); ok {
			if maxYear, err = strconv.Atoi(v); err != nil {
				return 0, nil, fmt.Errorf("line %d: %w", ln, err)
			}
			continue
		}
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		col := strings.Split(line, "\t")
		if len(col) != 5 {
			return 0, nil, fmt.Errorf("line %d: want 5 tab-separated columns, got %d", ln, len(col))
		}
		n, err := strconv.Atoi(col[3])
		if err != nil {
			return 0, nil, fmt.Errorf("line %d: %w", ln, err)
		}
		cases = append(cases, goldenCase{line: ln, expr: unescapeExpr(col[0]), zone: col[1], from: col[2], n: n, result: col[4]})
	}
	if err := sc.Err(); err != nil {
		return 0, nil, err
	}
	if maxYear == 0 {
		return 0, nil, errors.New("no \"# maxYear=\" header")
	}
	return maxYear, cases, nil
}

// escapeExpr escapes an expression for the tab-separated case files: tab,
// newline and backslash, and a leading '#' (which would start a comment).
func escapeExpr(s string) string {
	s = strings.NewReplacer(`\`, `\\`, "\t", `\t`, "\n", `\n`).Replace(s)
	if strings.HasPrefix(s, "#") {
		s = `\` + s
	}
	return s
}

func unescapeExpr(s string) string {
	return strings.NewReplacer(`\\`, `\`, `\t`, "\t", `\n`, "\n", `\#`, "#").Replace(s)
}

// checkAgainstQuartz compares this package with one Quartz answer and
// returns a description of the difference, or "".
func checkAgainstQuartz(c goldenCase, maxYear int) string {
	if !isASCII(c.expr) {
		// Deliberate difference: Quartz ignores some trailing garbage,
		// non-ASCII included ("5é" is 5); we reject non-ASCII outright.
		if _, err := parse(c.expr, time.UTC, maxYear); !errors.Is(err, ErrInvalidExpression) {
			return fmt.Sprintf("non-ASCII expression: got error %v, want ErrInvalidExpression", err)
		}
		return ""
	}
	kind, rest, _ := strings.Cut(c.result, " ")
	switch kind {
	case "parse-error", "runtime-error":
		// Quartz's runtime errors (NoSuchElementException from an empty
		// field) are parse errors here, deliberately.
		_, err := parse(c.expr, time.UTC, maxYear)
		if err == nil {
			return fmt.Sprintf("parsed, but Quartz says %s", c.result)
		}
		if !errors.Is(err, ErrInvalidExpression) {
			return fmt.Sprintf("error %v does not wrap ErrInvalidExpression", err)
		}
		return ""
	case "fires":
	default:
		return fmt.Sprintf("bad golden result %q", c.result)
	}
	quartzZone, want, _ := strings.Cut(rest, " ")
	e, err := parse(c.expr, time.UTC, maxYear)
	if err != nil {
		return fmt.Sprintf("parse error %v, but Quartz fires: %s", err, want)
	}
	loc, err := LoadZone(c.zone)
	if strings.HasPrefix(c.zone, "SystemV/") {
		// Deliberate difference: Java still has the SystemV/* zones the tz
		// database dropped in 2020; we reject them.
		if !errors.Is(err, ErrUnknownZone) {
			return fmt.Sprintf("LoadZone(%q): got %v, want ErrUnknownZone", c.zone, err)
		}
		return ""
	}
	if quartzZone == "GMT" && c.zone != "GMT" {
		// Java fell back to GMT for a zone it could not resolve.
		if err == nil {
			return fmt.Sprintf("LoadZone(%q) succeeded, but Java does not know the zone", c.zone)
		}
		if !errors.Is(err, ErrUnknownZone) || !strings.Contains(err.Error(), strconv.Quote(c.zone)) {
			return fmt.Sprintf("LoadZone error %v should wrap ErrUnknownZone and name the zone", err)
		}
		return ""
	}
	if err != nil {
		return fmt.Sprintf("LoadZone: %v (Java: %s)", err, quartzZone)
	}
	e.loc = loc
	from, err := time.Parse(time.RFC3339Nano, c.from)
	if err != nil {
		return fmt.Sprintf("bad golden from: %v", err)
	}
	var got []string
	t := from
	for i := 0; i < c.n; i++ {
		t = e.Next(t)
		if t.IsZero() {
			// Quartz either returned null ("end") or never returned ("hang").
			if strings.HasSuffix(want, "hang") {
				got = append(got, "hang")
			} else {
				got = append(got, "end")
			}
			break
		}
		got = append(got, t.Format("2006-01-02T15:04:05Z07:00"))
	}
	if g := strings.Join(got, " "); g != want {
		return fmt.Sprintf("fire times differ\n got: %s\nwant: %s", g, want)
	}
	return ""
}

func TestQuartzGolden(t *testing.T) {
	if *update {
		regenerateGolden(t)
	}
	data, err := os.ReadFile(goldenPath)
	if err != nil {
		t.Fatal(err)
	}
	maxYear, cases, err := parseOracleOutput(string(data))
	if err != nil {
		t.Fatalf("%s: %v", goldenPath, err)
	}
	if len(cases) < 1000 {
		t.Fatalf("%s has only %d cases", goldenPath, len(cases))
	}
	failed := 0
	for _, c := range cases {
		if msg := checkAgainstQuartz(c, maxYear); msg != "" {
			failed++
			if failed <= 40 {
				t.Errorf("%s:%d cron %q zone %q from %s: %s", goldenPath, c.line, c.expr, c.zone, c.from, msg)
			}
		}
	}
	t.Logf("%d of %d Quartz cases agree", len(cases)-failed, len(cases))
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= 0x80 {
			return false
		}
	}
	return true
}

// regenerateGolden runs the hand-written cases plus a fixed-seed random sample
// through the Quartz oracle and rewrites the golden file.
func regenerateGolden(t *testing.T) {
	hand, err := os.ReadFile(casesPath)
	if err != nil {
		t.Fatal(err)
	}
	var in strings.Builder
	in.Write(hand)
	in.WriteString("# --- random sample (seed " + strconv.Itoa(goldenRandomSeed) + ")\n")
	for _, c := range randomCases(goldenRandomSeed, goldenRandomCount) {
		in.WriteString(c + "\n")
	}
	out := runOracle(t, in.String())
	header := "# Golden answers of Quartz 2.3.2's CronExpression (Debian libquartz2-java, Java 17).\n" +
		"# Generated by testdata/oracle/regen.sh from testdata/oracle/cases.txt and a fixed-seed\n" +
		"# random sample; do not edit. Columns: EXPR ZONE FROM N RESULT (see QuartzOracle.java).\n"
	if err := os.WriteFile(goldenPath, []byte(header+out), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("wrote %s", goldenPath)
}
