package script

import (
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/ejob-io/ejob/spi"
	"github.com/ejob-io/ejob/spi/gson"
	"github.com/ejob-io/ejob/spi/redact"
)

// The errors ParseCommandLine and the upstream quoting return, with
// commons-exec 1.3's messages. Argv wraps them together with
// spi.ErrInvalidConfig.
var (
	// ErrEmptyCommandLine: the command line is blank.
	ErrEmptyCommandLine = errors.New("Command line can not be empty")
	// ErrUnbalancedQuotes: a ' or " group is not closed.
	ErrUnbalancedQuotes = errors.New("Unbalanced quotes")
	// ErrEmptyExecutable: the first token is empty or blank (for instance
	// the line starts with "").
	ErrEmptyExecutable = errors.New("Executable can not be empty")
	// ErrMixedQuotes: with script.argv.quirk=upstream, an argument holds
	// both ' and " (commons-exec cannot quote it).
	ErrMixedQuotes = errors.New("Can't handle single and double quotes in same argument")
)

// ParseCommandLine splits line exactly as commons-exec 1.3
// CommandLine.parse does, returning the executable followed by the
// arguments, with no quoting added:
//
//   - a blank line (only characters <= U+0020, as Java's String.trim
//     sees it) is ErrEmptyCommandLine;
//   - tokens are separated by the space character only; a run of spaces
//     separates once; tabs and newlines are ordinary characters;
//   - single- and double-quoted groups keep their spaces and lose their
//     quotes; the other quote character inside a group is literal;
//   - quoted and unquoted text next to each other join into one token;
//   - an empty quoted group on its own is an empty argument;
//   - an unclosed group is ErrUnbalancedQuotes;
//   - a blank executable (first token) is ErrEmptyExecutable.
//
// For example (results in Go syntax, <TAB> a tab character):
//
//	a  b<TAB>c        ["a" "b\tc"]
//	sh -c 'echo a b'  ["sh" "-c" "echo a b"]
//	--opt="v" a''b    ["--opt=v" "ab"]
//	x "" y            ["x" "" "y"]
//
// There is no escape character: a backslash is literal. ${...} is literal
// too (upstream parses without a substitution map).
func ParseCommandLine(line string) ([]string, error) {
	if javaTrim(line) == "" {
		return nil, ErrEmptyCommandLine
	}
	const (
		normal = iota
		inSingle
		inDouble
	)
	var (
		tokens       []string
		cur          strings.Builder
		state        = normal
		closedQuoted bool // the previous delimiter closed a group
	)
	// commons-exec walks a StringTokenizer over the delimiters ' " and
	// space, returning the delimiters as tokens; this walks bytes, which is
	// the same because all three delimiters are ASCII.
	start := 0
	flushText := func(end int) {
		if end > start {
			cur.WriteString(line[start:end])
		}
	}
	for i := 0; i < len(line); i++ {
		c := line[i]
		if c != '\'' && c != '"' && c != ' ' {
			continue
		}
		flushText(i)
		start = i + 1
		switch state {
		case inSingle, inDouble:
			if (state == inSingle && c == '\'') || (state == inDouble && c == '"') {
				closedQuoted = true
				state = normal
			} else {
				cur.WriteByte(c)
			}
			continue
		}
		switch c {
		case '\'':
			state = inSingle
		case '"':
			state = inDouble
		case ' ':
			if closedQuoted || cur.Len() > 0 {
				tokens = append(tokens, cur.String())
				cur.Reset()
			}
		}
		closedQuoted = false
	}
	// Text between delimiters is appended in every state. (commons-exec
	// also clears its "last token was quoted" flag on text outside a
	// group; that cannot change the result, because the flag only matters
	// while the current token is empty.)
	flushText(len(line))
	if closedQuoted || cur.Len() > 0 {
		tokens = append(tokens, cur.String())
	}
	if state != normal {
		// The line as upstream quotes it, its secrets masked (the error
		// reaches logs and API answers).
		return nil, fmt.Errorf("%w in %s", ErrUnbalancedQuotes, redact.Text(line))
	}
	if javaTrim(tokens[0]) == "" {
		return nil, ErrEmptyExecutable
	}
	return tokens, nil
}

// javaTrim trims like Java's String.trim: every character <= U+0020 at
// either end.
func javaTrim(s string) string {
	return strings.TrimFunc(s, func(r rune) bool { return r <= ' ' })
}

// fixFileSeparator replaces / and \ in the executable with the platform's
// separator, as commons-exec's StringUtils.fixFileSeparatorChar does.
func fixFileSeparator(executable string) string {
	sep := string(os.PathSeparator)
	return strings.NewReplacer("/", sep, `\`, sep).Replace(executable)
}

// upstreamQuote is commons-exec 1.3's StringUtils.quoteArgument, which
// upstream applies to every parsed argument (not the executable, not the
// JSON): trim (Java), strip leading then trailing ' and " characters, then
// wrap in '...' if a " remains, else in "..." if a ' or a space remains.
// The added quotes end up in argv literally: no shell removes them.
func upstreamQuote(arg string) (string, error) {
	s := javaTrim(arg)
	s = strings.TrimLeft(s, `'"`)
	s = strings.TrimRight(s, `'"`)
	switch {
	case strings.Contains(s, `"`):
		if strings.Contains(s, `'`) {
			return "", ErrMixedQuotes
		}
		return "'" + s + "'", nil
	case strings.ContainsAny(s, "' "):
		return `"` + s + `"`, nil
	}
	return s, nil
}

// Argv returns the argv an item of a SCRIPT job runs: the command line of
// props[PropCommandLine] split by ParseCommandLine, the executable's / and
// \ replaced by the platform separator as upstream does, each argument
// quoted as upstream quotes it when props[PropArgvQuirk] is "upstream",
// and the Gson JSON of sc as the last element, verbatim. argv[0] is the
// executable as written; it is looked up in PATH when it has no slash.
//
// Errors wrap spi.ErrInvalidConfig and name the property.
func Argv(props map[string]string, sc spi.ShardingContext) ([]string, error) {
	argv, err := commandArgv(props)
	if err != nil {
		return nil, err
	}
	return append(argv, string(gson.ShardingContext(sc))), nil
}

// commandArgv is Argv without the JSON.
func commandArgv(props map[string]string) ([]string, error) {
	quirk, err := argvQuirk(props)
	if err != nil {
		return nil, err
	}
	line := props[PropCommandLine]
	if line == "" {
		return nil, fmt.Errorf("script: %s (property `%s` is required): %w", MsgNoCommandLine, PropCommandLine, spi.ErrInvalidConfig)
	}
	argv, err := ParseCommandLine(line)
	if err != nil {
		return nil, fmt.Errorf("script: property `%s`: %w: %w", PropCommandLine, err, spi.ErrInvalidConfig)
	}
	argv[0] = fixFileSeparator(argv[0])
	if quirk {
		for i := 1; i < len(argv); i++ {
			if argv[i], err = upstreamQuote(argv[i]); err != nil {
				return nil, fmt.Errorf("script: property `%s` argument %d with %s=%s: %w: %w",
					PropCommandLine, i, PropArgvQuirk, QuirkUpstream, err, spi.ErrInvalidConfig)
			}
		}
	}
	return argv, nil
}

// argvQuirk reads PropArgvQuirk: "upstream" (any case) turns the quirk
// on; absent, empty or "none" leaves it off.
func argvQuirk(props map[string]string) (bool, error) {
	v, ok := props[PropArgvQuirk]
	if !ok {
		return false, nil
	}
	switch strings.ToLower(strings.TrimSpace(v)) {
	case "", QuirkNone:
		return false, nil
	case QuirkUpstream:
		return true, nil
	}
	return false, fmt.Errorf("script: property `%s` is %q, want %q or %q: %w", PropArgvQuirk, v, QuirkUpstream, QuirkNone, spi.ErrInvalidConfig)
}
