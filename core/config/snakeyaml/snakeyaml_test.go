package snakeyaml

import (
	"math/rand/v2"
	"os"
	"regexp"
	"strings"
	"testing"
	"unicode/utf8"

	"gopkg.in/yaml.v3"
)

func TestResolve(t *testing.T) {
	t.Parallel()
	tests := map[string]string{
		"": TagNull, "~": TagNull, "null": TagNull, "Null": TagNull, "nULL": TagStr,
		"yes": TagBool, "On": TagBool, "OFF": TagBool, "y": TagStr, "n": TagStr, "True": TagBool, "tRUE": TagStr,
		"0": TagInt, "-12": TagInt, "1_000": TagInt, "0x1F": TagInt, "0b101": TagInt, "017": TagInt, "1:30": TagInt,
		"09": TagStr, "08": TagStr, "1.5": TagFloat, ".5": TagFloat, ".91_000": TagFloat, "1e5": TagFloat, ".inf": TagFloat, ".NaN": TagFloat,
		"2026-01-01": TagTimestamp, "2001-12-14t21:59:43.10-05:00": TagTimestamp, "<<": TagMerge,
		"0=a": TagStr, "10.0.0.1": TagStr, "GMT+08:00": TagStr, "0/5 * * * * ?": TagStr,
		"yesyesyesyes": TagStr, strings.Repeat("1", 1025): TagStr,
	}
	for in, want := range tests {
		t.Run(in, func(t *testing.T) {
			t.Parallel()
			if got := Resolve(in); got != want {
				t.Errorf("Resolve(%q) = %s, want %s", in, got, want)
			}
		})
	}
}

// Keys of 123+ characters, empty and multi-line keys are complex keys;
// empty collections are flow style; nested sequences and mappings indent
// as SnakeYAML indents them (vector written by SnakeYAML 1.33).
func TestDumpKeysAndNesting(t *testing.T) {
	t.Parallel()
	want, err := os.ReadFile("testdata/keys_and_nesting.yaml")
	if err != nil {
		t.Fatal(err)
	}
	root := Mapping(
		String(strings.Repeat("k", 122)), String("v"),
		String(strings.Repeat("k", 123)), String("v"),
		String(""), String("empty"),
		String("a\nb"), String("ml"),
		String("list"), Sequence(
			Mapping(String("x"), Sequence(), String("y"), Mapping(), String("z"), Null()),
			Sequence(String("p"), String("q")),
			Mapping(),
		),
	)
	got, err := Dump(root)
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != string(want) {
		t.Errorf("Dump =\n%s\nwant\n%s", got, want)
	}
	var n yaml.Node
	if err := yaml.Unmarshal(got, &n); err != nil {
		t.Fatal(err)
	}
	back, err := FromYAML(&n)
	if err != nil {
		t.Fatal(err)
	}
	again, err := Dump(back)
	if err != nil || string(again) != string(got) {
		t.Errorf("FromYAML/Dump round trip = %q, %v", again, err)
	}
}

func TestDumpErrors(t *testing.T) {
	t.Parallel()
	for name, n := range map[string]*Node{
		"nil":             nil,
		"odd mapping":     Mapping(String("a")),
		"alias no anchor": Sequence(&Node{Kind: AliasNode}),
		"unknown kind":    {Kind: 99},
	} {
		if _, err := Dump(n); err == nil {
			t.Errorf("%s: Dump succeeded", name)
		}
	}
}

// leadingZero and String's line-break check are the patterns they replace.
func TestScalarChecksMatchTheirPatterns(t *testing.T) {
	t.Parallel()
	leading := regexp.MustCompile(`^0[0-9_]+$`)
	multiline := regexp.MustCompile("\n|\u0085|\u2028|\u2029")
	for _, s := range []string{"", "0", "00", "0_", "01_2", "012a", "10", "_0", "0 1", "007", "0\n1", "a\u0085b", "x\u2028", "\u2029", "plain", "a\rb"} {
		if got, want := leadingZero(s), leading.MatchString(s); got != want {
			t.Errorf("leadingZero(%q) = %v, want %v", s, got, want)
		}
		if got, want := String(s).Style == StyleLiteral, multiline.MatchString(s); IsPrintable(s) && got != want {
			t.Errorf("String(%q) literal = %v, want %v", s, got, want)
		}
	}
}

// Resolve's character filter and its tests without regexp agree with
// SnakeYAML's patterns alone, on random values made of the characters
// they use and some they do not.
func TestResolveCharFilter(t *testing.T) {
	t.Parallel()
	byPatterns := func(value string) string {
		if value == "" {
			return TagNull
		}
		first, _ := utf8.DecodeRuneInString(value)
		for _, r := range resolvers {
			if containsRune(r.first, first) && utf16Len(value) <= r.limit && r.re.MatchString(value) { // the patterns alone
				return r.tag
			}
		}
		return TagStr
	}
	const alphabet = "0123456789-+_:.xbBeEinfINFaAnNuUlLyYsSoOtTrRZ \t~<!&*?#/gG"
	r := rand.New(rand.NewPCG(5, 6))
	values := []string{"0 0 0 1 1 ? 2099", "2001-12-14t21:59:43.10-05:00", "2002-12-14", "0x_1F", "0b101", "1:20", "1_000",
		".inf", "-.Inf", ".NaN", "6.8523015e+5", "190:20:30.15", "~", "NULL", "<<", "yes", "OFF", "!", "*",
		"0", "-0", "+12_3", "_1", "01", "--1", "+-1", "1_", "10", "True", "fALSE", "no", "On", "null", " ", "&", "<"}
	for range 200_000 {
		b := make([]byte, 1+r.IntN(12))
		for i := range b {
			b[i] = alphabet[r.IntN(len(alphabet))]
		}
		values = append(values, string(b))
	}
	for _, v := range values {
		if got, want := Resolve(v), byPatterns(v); got != want {
			t.Fatalf("Resolve(%q) = %s, the patterns say %s", v, got, want)
		}
	}
}
