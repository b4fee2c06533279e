package script_test

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/ejob-io/ejob/plugins/jobtype/script"
	"github.com/ejob-io/ejob/spi"
)

// TestParseCommandLine pins commons-exec 1.3 CommandLine.parse
// (translateCommandline), rule by rule.
func TestParseCommandLine(t *testing.T) {
	t.Parallel()
	tests := map[string]struct {
		line    string
		want    []string
		wantErr error
	}{
		"spec: echo":                  {line: "echo script-job", want: []string{"echo", "script-job"}},
		"spec: sh -c single quotes":   {line: "/bin/sh -c 'echo a b'", want: []string{"/bin/sh", "-c", "echo a b"}},
		"spec: double quotes":         {line: `sh demo.sh "x y"`, want: []string{"sh", "demo.sh", "x y"}},
		"single executable":           {line: "prog", want: []string{"prog"}},
		"run of spaces collapses":     {line: "a    b  c", want: []string{"a", "b", "c"}},
		"leading and trailing spaces": {line: "   a b   ", want: []string{"a", "b"}},
		"tab is not a separator":      {line: "a\tb c", want: []string{"a\tb", "c"}},
		"newline is not a separator":  {line: "a\nb c", want: []string{"a\nb", "c"}},
		"adjacent quotes concatenate": {line: "x a''b", want: []string{"x", "ab"}},
		"option with quoted value":    {line: `x --opt="v"`, want: []string{"x", "--opt=v"}},
		"quoted then unquoted":        {line: `x "a b"c 'd'"e"f`, want: []string{"x", "a bc", "def"}},
		"empty double quotes":         {line: `x "" y`, want: []string{"x", "", "y"}},
		"empty single quotes at end":  {line: `x ''`, want: []string{"x", ""}},
		"two empty args":              {line: `x "" ''`, want: []string{"x", "", ""}},
		"empty quotes glued to text":  {line: `x ""a`, want: []string{"x", "a"}},
		"other quote is literal":      {line: `x "it's" 'say "hi"'`, want: []string{"x", "it's", `say "hi"`}},
		"spaces kept inside quotes":   {line: `x "  a  "`, want: []string{"x", "  a  "}},
		"tab inside quotes":           {line: "x '\t'", want: []string{"x", "\t"}},
		"backslash is literal":        {line: `x a\ b "c\"`, want: []string{"x", `a\`, "b", `c\`}},
		"dollar is literal":           {line: "x ${HOME} $(id) `id`", want: []string{"x", "${HOME}", "$(id)", "`id`"}},
		"equals and non-ascii":        {line: "x k=v 作业 'é ü'", want: []string{"x", "k=v", "作业", "é ü"}},
		"quoted executable":           {line: `'/opt/my dir/run' a`, want: []string{"/opt/my dir/run", "a"}},
		"tab-only token is kept":      {line: "x \t y", want: []string{"x", "\t", "y"}},
		"empty line":                  {line: "", wantErr: script.ErrEmptyCommandLine},
		"blank line":                  {line: "   ", wantErr: script.ErrEmptyCommandLine},
		"blank with tabs and newline": {line: " \t\r\n ", wantErr: script.ErrEmptyCommandLine},
		"unbalanced double":           {line: `echo "a b`, wantErr: script.ErrUnbalancedQuotes},
		"unbalanced single":           {line: `echo 'a`, wantErr: script.ErrUnbalancedQuotes},
		"unbalanced after group":      {line: `echo "a" '`, wantErr: script.ErrUnbalancedQuotes},
		"empty executable":            {line: `"" x`, wantErr: script.ErrEmptyExecutable},
		"blank executable":            {line: `" " x`, wantErr: script.ErrEmptyExecutable},
		"tab executable":              {line: "'\t' x", wantErr: script.ErrEmptyExecutable},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			got, err := script.ParseCommandLine(tc.line)
			if tc.wantErr != nil {
				if !errors.Is(err, tc.wantErr) {
					t.Fatalf("ParseCommandLine(%q) = %q, %v; want error %v", tc.line, got, err, tc.wantErr)
				}
				return
			}
			if err != nil || !slices.Equal(got, tc.want) {
				t.Errorf("ParseCommandLine(%q) = %q, %v\nwant %q", tc.line, got, err, tc.want)
			}
		})
	}
}

func TestParseCommandLineUnbalancedMessage(t *testing.T) {
	t.Parallel()
	_, err := script.ParseCommandLine(`echo "a`)
	if want := `Unbalanced quotes in echo "a`; err == nil || err.Error() != want {
		t.Errorf("error = %v, want %q (commons-exec's message)", err, want)
	}
}

// TestArgv checks the argv built from props, without and with the
// upstream quoting quirk, including, for three command lines (echo, sh -c,
// demo.sh), the argv upstream builds with commons-exec 1.3.
func TestArgv(t *testing.T) {
	t.Parallel()
	p := "A"
	sc := spi.ShardingContext{JobName: "myJob", TaskID: "myJob@-@0,1,2@-@READY@-@192.168.1.10@-@12345", ShardingTotalCount: 3, ShardingParameter: &p}
	const js = `{"jobName":"myJob","taskId":"myJob@-@0,1,2@-@READY@-@192.168.1.10@-@12345","shardingTotalCount":3,"jobParameter":"","shardingItem":0,"shardingParameter":"A"}`
	tests := map[string]struct {
		line       string
		want       []string // quirk off
		wantQuirk  []string // script.argv.quirk=upstream; nil means an error
		quirkError error
	}{
		"spec: echo": {
			line: "echo script-job", want: []string{"echo", "script-job"}, wantQuirk: []string{"echo", "script-job"},
		},
		"spec: sh -c": {
			line:      "/bin/sh -c 'echo a b'",
			want:      []string{"/bin/sh", "-c", "echo a b"},
			wantQuirk: []string{"/bin/sh", "-c", `"echo a b"`},
		},
		"spec: demo.sh": {
			line:      `sh demo.sh "x y"`,
			want:      []string{"sh", "demo.sh", "x y"},
			wantQuirk: []string{"sh", "demo.sh", `"x y"`},
		},
		"double quote inside gets single quotes": {
			line:      `x 'say "hi"'`,
			want:      []string{"x", `say "hi"`},
			wantQuirk: []string{"x", `'say "hi'`}, // the trailing quote is stripped, then the rest wrapped
		},
		"apostrophe gets double quotes": {
			line: `x "it's"`, want: []string{"x", "it's"}, wantQuirk: []string{"x", `"it's"`},
		},
		"quirk trims and strips end quotes": {
			line:      `x "  a  " '"b"' "'c d'"`,
			want:      []string{"x", "  a  ", `"b"`, "'c d'"},
			wantQuirk: []string{"x", "a", "b", `"c d"`},
		},
		"quirk leaves empty and plain args": {
			line: `x "" k=v a\tb`, want: []string{"x", "", "k=v", `a\tb`}, wantQuirk: []string{"x", "", "k=v", `a\tb`},
		},
		"executable is never quoted": {
			line: `'/opt/my dir/run'`, want: []string{"/opt/my dir/run"}, wantQuirk: []string{"/opt/my dir/run"},
		},
		"backslash in executable becomes slash": {
			line: `bin\run a\b`, want: []string{"bin/run", `a\b`}, wantQuirk: []string{"bin/run", `a\b`},
		},
		"both quote kinds": {
			line: `x 'a"b'"c'd"`, want: []string{"x", `a"bc'd`}, quirkError: script.ErrMixedQuotes,
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			for _, quirk := range []string{"", script.QuirkNone, script.QuirkUpstream, "UPSTREAM"} {
				props := map[string]string{script.PropCommandLine: tc.line}
				if quirk != "" {
					props[script.PropArgvQuirk] = quirk
				}
				want, wantErr := tc.want, error(nil)
				if quirk == script.QuirkUpstream || quirk == "UPSTREAM" {
					want, wantErr = tc.wantQuirk, tc.quirkError
				}
				got, err := script.Argv(props, sc)
				if wantErr != nil {
					if !errors.Is(err, wantErr) || !errors.Is(err, spi.ErrInvalidConfig) {
						t.Errorf("quirk %q: Argv = %q, %v; want %v wrapping spi.ErrInvalidConfig", quirk, got, err, wantErr)
					}
					continue
				}
				if err != nil || !slices.Equal(got, append(slices.Clone(want), js)) {
					t.Errorf("quirk %q: Argv = %q, %v\nwant %q + JSON", quirk, got, err, want)
				}
			}
		})
	}
}

func TestArgvErrors(t *testing.T) {
	t.Parallel()
	tests := map[string]struct {
		props   map[string]string
		mention string
	}{
		"missing":     {props: map[string]string{}, mention: script.MsgNoCommandLine},
		"nil props":   {props: nil, mention: script.MsgNoCommandLine},
		"empty":       {props: map[string]string{script.PropCommandLine: ""}, mention: script.MsgNoCommandLine},
		"blank":       {props: map[string]string{script.PropCommandLine: "  "}, mention: "Command line can not be empty"},
		"unbalanced":  {props: map[string]string{script.PropCommandLine: `echo 'x`}, mention: "Unbalanced quotes"},
		"bad quirk":   {props: map[string]string{script.PropCommandLine: "echo", script.PropArgvQuirk: "java"}, mention: script.PropArgvQuirk},
		"exe missing": {props: map[string]string{script.PropCommandLine: `'' x`}, mention: "Executable can not be empty"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			_, err := script.Argv(tc.props, spi.ShardingContext{})
			if !errors.Is(err, spi.ErrInvalidConfig) || !containsAll(err.Error(), tc.mention, "`script.") {
				t.Errorf("Argv error = %v; want spi.ErrInvalidConfig naming the property and mentioning %q", err, tc.mention)
			}
		})
	}
}

func ExampleArgv() {
	p := "A"
	argv, err := script.Argv(map[string]string{
		script.PropCommandLine: `/bin/sh -c 'echo "$0"'`,
	}, spi.ShardingContext{JobName: "myJob", TaskID: "t", ShardingTotalCount: 3, ShardingParameter: &p})
	fmt.Printf("%q %v\n", argv, err)
	// Output: ["/bin/sh" "-c" "echo \"$0\"" "{\"jobName\":\"myJob\",\"taskId\":\"t\",\"shardingTotalCount\":3,\"jobParameter\":\"\",\"shardingItem\":0,\"shardingParameter\":\"A\"}"] <nil>
}

// A command line refused for its quotes is quoted in the error with its
// secrets masked: the error reaches logs and the REST API's answer.
func TestUnbalancedQuotesErrorMasksSecrets(t *testing.T) {
	_, err := script.ParseCommandLine(`curl -H "Authorization: Bearer S3CR3T`)
	if !errors.Is(err, script.ErrUnbalancedQuotes) || strings.Contains(err.Error(), "S3CR3T") {
		t.Errorf("error = %v, want unbalanced quotes without the token", err)
	}
}
