package cron

import (
	"bytes"
	"flag"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

var (
	quartzLive = flag.Int("quartz.live", 400, "random cases TestQuartzLive checks against the Quartz oracle (0 disables)")
	quartzSeed = flag.Uint64("quartz.seed", 20261121, "seed for TestQuartzLive (0: time-based, to explore)")
)

// quartzJar is Debian's libquartz2-java; EJOB_QUARTZ_JAR overrides it.
func quartzJar() string {
	if p := os.Getenv("EJOB_QUARTZ_JAR"); p != "" {
		return p
	}
	return "/usr/share/java/quartz2.jar"
}

// oracleAvailable reports why the Quartz oracle cannot run, or "".
func oracleAvailable() string {
	for _, tool := range []string{"java", "javac"} {
		if _, err := exec.LookPath(tool); err != nil {
			return tool + " is not installed"
		}
	}
	if _, err := os.Stat(quartzJar()); err != nil {
		return "the Quartz jar is missing (apt-get install libquartz2-java, or set EJOB_QUARTZ_JAR): " + err.Error()
	}
	return ""
}

// runOracle compiles testdata/oracle/QuartzOracle.java and feeds it input.
func runOracle(t *testing.T, input string) string {
	t.Helper()
	if why := oracleAvailable(); why != "" {
		t.Fatalf("cannot run the Quartz oracle: %s", why)
	}
	dir := t.TempDir()
	cp := quartzJar()
	if out, err := exec.Command("javac", "-cp", cp, "-d", dir, filepath.Join("testdata", "oracle", "QuartzOracle.java")).CombinedOutput(); err != nil {
		t.Fatalf("javac: %v\n%s", err, out)
	}
	cmd := exec.Command("java", "-Duser.timezone=UTC", "-cp", cp+string(os.PathListSeparator)+dir, "QuartzOracle")
	cmd.Stdin = strings.NewReader(input)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("QuartzOracle: %v\n%s", err, stderr.String())
	}
	return stdout.String()
}

// TestQuartzLive is a differential test against the real Quartz on a fresh
// random sample. It needs Java and Debian's libquartz2-java and is skipped
// without them (the committed golden file covers the same ground offline).
func TestQuartzLive(t *testing.T) {
	if testing.Short() || *quartzLive <= 0 {
		t.Skip("skipped in -short mode or with -quartz.live=0")
	}
	if why := oracleAvailable(); why != "" {
		t.Skipf("Quartz oracle unavailable: %s", why)
	}
	seed := *quartzSeed
	if seed == 0 {
		seed = uint64(time.Now().UnixNano())
	}
	t.Logf("seed %d (rerun with -quartz.seed=%d)", seed, seed)
	out := runOracle(t, strings.Join(randomCases(seed, *quartzLive), "\n")+"\n")
	maxYear, cases, err := parseOracleOutput(out)
	if err != nil {
		t.Fatal(err)
	}
	failed := 0
	for _, c := range cases {
		if msg := checkAgainstQuartz(c, maxYear); msg != "" {
			failed++
			if failed <= 20 {
				t.Errorf("cron %q zone %q from %s: %s", c.expr, c.zone, c.from, msg)
			}
		}
	}
	t.Logf("%d of %d random cases agree with Quartz (seed %d)", len(cases)-failed, len(cases), seed)
}

// randomZones are zones whose rules Java 17's and Go's tz data agree on.
var randomZones = [...]string{
	"UTC", "America/New_York", "Europe/London", "Australia/Lord_Howe", "Asia/Shanghai",
	"Europe/Berlin", "America/Havana", "Pacific/Chatham", "Australia/Sydney", "Asia/Kolkata",
	"America/Sao_Paulo", "Europe/Dublin", "America/Los_Angeles", "GMT+08:00", "GMT-5", "GMT+0530",
}

// randomCases returns n oracle input lines (EXPR ZONE FROM N) drawn from seed.
func randomCases(seed uint64, n int) []string {
	r := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	out := make([]string, 0, n)
	for range n {
		zone := randomZones[r.IntN(len(randomZones))]
		line := escapeExpr(randomExpr(r)) + "\t" + zone + "\t" + randomFrom(r, zone) + "\t" + strconv.Itoa(8+r.IntN(13))
		out = append(out, line)
	}
	return out
}

// randomFrom is a whole-second start instant, often just before one of the
// zone's transitions.
func randomFrom(r *rand.Rand, zone string) string {
	lo := time.Date(2018, 1, 1, 0, 0, 0, 0, time.UTC).Unix()
	hi := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC).Unix()
	if r.IntN(40) == 0 {
		lo = time.Date(2120, 1, 1, 0, 0, 0, 0, time.UTC).Unix()
		hi = time.Date(2128, 1, 1, 0, 0, 0, 0, time.UTC).Unix()
	}
	t := time.Unix(lo+r.Int64N(hi-lo), 0).UTC()
	if r.IntN(10) == 0 {
		t = t.Truncate(time.Hour)
	}
	if loc, err := LoadZone(zone); err == nil && r.IntN(3) == 0 {
		if _, end := t.In(loc).ZoneBounds(); !end.IsZero() {
			t = end.Add(-time.Duration(r.Int64N(3*24*3600)) * time.Second).UTC()
		}
	}
	return t.Format(time.RFC3339)
}

var (
	randMonths = [...]string{"JAN", "FEB", "MAR", "APR", "MAY", "JUN", "JUL", "AUG", "SEP", "OCT", "NOV", "DEC"}
	randDays   = [...]string{"SUN", "MON", "TUE", "WED", "THU", "FRI", "SAT"}
)

func randomExpr(r *rand.Rand) string {
	if r.IntN(10) == 0 {
		return chaosExpr(r)
	}
	f := []string{
		randomList(r, 0, 59, nil, 3),
		randomList(r, 0, 59, nil, 4),
		randomList(r, 0, 23, nil, 4),
		"", // day-of-month
		randomList(r, 1, 12, randMonths[:], 6),
		"", // day-of-week
	}
	if r.IntN(2) == 0 {
		f[0] = "0"
	}
	dom, dow := "?", "?"
	switch k := r.IntN(24); {
	case k == 0: // both given: Quartz rejects
		dom, dow = randomDayOfMonth(r), randomDayOfWeek(r)
	case k == 1: // both '?': rejected
	case k < 13:
		dom = randomDayOfMonth(r)
	default:
		dow = randomDayOfWeek(r)
	}
	f[3], f[5] = dom, dow
	switch r.IntN(10) {
	case 0:
		f = append(f, "*")
	case 1:
		f = append(f, randomList(r, 2018, 2040, nil, 1))
	case 2:
		f = append(f, strconv.Itoa(2020+r.IntN(110)))
	}
	s := strings.Join(f, " ")
	if r.IntN(15) == 0 {
		s = mutate(r, s)
	}
	return s
}

func randomDayOfMonth(r *rand.Rand) string {
	switch r.IntN(14) {
	case 0:
		return "L"
	case 1:
		return "L-" + strconv.Itoa(r.IntN(21))
	case 2:
		return "LW"
	case 3:
		return "L-" + strconv.Itoa(r.IntN(8)) + "W"
	case 4, 5:
		return strconv.Itoa(1+r.IntN(31)) + "W"
	}
	return randomList(r, 1, 31, nil, 5)
}

func randomDayOfWeek(r *rand.Rand) string {
	day := func() string {
		if r.IntN(2) == 0 {
			return randDays[r.IntN(7)]
		}
		return strconv.Itoa(1 + r.IntN(7))
	}
	switch r.IntN(12) {
	case 0:
		return "L"
	case 1, 2:
		return day() + "L"
	case 3, 4:
		return day() + "#" + strconv.Itoa(1+r.IntN(5))
	}
	return randomList(r, 1, 7, randDays[:], 1)
}

// randomList is a comma list of one to three elements of a field with values
// lo..hi (names, if given, stand for lo, lo+1, ...). spread scales steps.
func randomList(r *rand.Rand, lo, hi int, names []string, spread int) string {
	val := func() string {
		v := lo + r.IntN(hi-lo+1)
		if r.IntN(40) == 0 {
			v = []int{lo - 1, hi + 1, 99, 98}[r.IntN(4)]
		}
		if names != nil && v >= lo && v <= hi && r.IntN(2) == 0 {
			name := names[v-lo]
			if r.IntN(4) == 0 {
				name = strings.ToLower(name)
			}
			return name
		}
		return strconv.Itoa(v)
	}
	step := func() string { return strconv.Itoa(1 + r.IntN(spread*3)) }
	elem := func() string {
		switch r.IntN(12) {
		case 0:
			return "*"
		case 1:
			return "*/" + step()
		case 2:
			return val() + "/" + step()
		case 3, 4:
			return val() + "-" + val()
		case 5:
			return val() + "-" + val() + "/" + step()
		case 6:
			if r.IntN(4) == 0 {
				return "/" + step()
			}
		}
		return val()
	}
	parts := []string{elem()}
	for r.IntN(3) == 0 && len(parts) < 3 {
		parts = append(parts, elem())
	}
	return strings.Join(parts, ",")
}

// chaosExpr is six or seven fields of short random strings over the
// characters Quartz gives meaning to, to compare what parses.
func chaosExpr(r *rand.Rand) string {
	const alphabet = "0123456789012345*/?-,#LW-/,LWJANFEBMONFRISAT"
	f := make([]string, 6+r.IntN(2))
	for i := range f {
		b := make([]byte, 1+r.IntN(5))
		for j := range b {
			b[j] = alphabet[r.IntN(len(alphabet))]
		}
		f[i] = string(b)
	}
	// Keep the day fields plausible now and then so some get past them.
	if r.IntN(2) == 0 {
		f[3+2*r.IntN(2)] = "?"
	}
	return strings.Join(f, " ")
}

// mutate damages s a little, to compare what Quartz and this package reject.
func mutate(r *rand.Rand, s string) string {
	const junk = "0123456789*/?-,#LW XAZ\t"
	i := r.IntN(len(s) + 1)
	switch r.IntN(3) {
	case 0:
		return s[:i] + string(junk[r.IntN(len(junk))]) + s[i:]
	case 1:
		if i < len(s) {
			return s[:i] + s[i+1:]
		}
	}
	return s + " " + string(junk[r.IntN(len(junk))])
}
