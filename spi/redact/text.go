package redact

import (
	"net/url"
	"regexp"
	"slices"
	"strings"
)

// The patterns Text looks for. Functions, not variables: there is no
// package-level mutable state (a *regexp.Regexp is safe to share, but a
// variable could be reassigned).
func urlPattern() *regexp.Regexp {
	return regexp.MustCompile(`(?i)\b[a-z][a-z0-9+.\-]*://[^\s"'<>` + "`" + `\\]+`)
}

// assignPattern matches a name, the quote that may close it (JSON's
// "password": or an escaped \"password\":) and a separator: ':', '=' or
// their percent-encoded forms, with spaces around.
func assignPattern() *regexp.Regexp {
	return regexp.MustCompile(`((?:[A-Za-z0-9_.\-]|%5[fF]|%2[dDeE])+)(\\?["']?)(\s*(?:[:=]|%3[dDaA])\s*)`)
}

// flagPattern matches a command-line flag followed by spaces: the value is
// the next word (`--password hunter2`).
func flagPattern() *regexp.Regexp {
	return regexp.MustCompile(`(?:^|[\s"'])(--?[A-Za-z][A-Za-z0-9_.\-]*)([ \t]+)`)
}

// userFlagPattern matches curl's and similar tools' user:password flags
// (`-u user:pass`, `--user=user:pass`, `--proxy-user user:pass`).
func userFlagPattern() *regexp.Regexp {
	return regexp.MustCompile(`(?:^|[\s"'])(?:-u|-U|--user|--proxy-user)(?:[ \t]+|=)?(["']?)([^\s"':]+):([^\s"']+)`)
}

// userinfoPattern matches user:password@host without a scheme (a DSN
// such as `mongo user:pw@db:27017/app`).
func userinfoPattern() *regexp.Regexp {
	return regexp.MustCompile(`(?:^|[\s"'=/])([^\s:@/"'=]+):([^\s@/"']+)@[A-Za-z0-9.\-\[\]]`)
}

// bearerPattern matches an Authorization scheme and its credentials
// wherever they appear, with or without a header name before them.
func bearerPattern() *regexp.Regexp {
	return regexp.MustCompile(`\b((?i:bearer)|Basic|BASIC)([ \t]+)([A-Za-z0-9\-._~+/]+=*)`)
}

// authSchemes are the Authorization schemes kept in front of a masked
// credential ("Authorization: Bearer ***"), lower case.
func authSchemes() []string {
	return []string{"bearer", "basic", "digest", "token", "bot", "negotiate", "ntlm", "apikey", "key", "sso-key"}
}

// MayHoldSecret reports whether Text may change s: s holds a URL's "://",
// a user info's '@', a '%' (a percent-encoded name), a secret word or
// part of a name (IsSecretKey's, as a substring in any case), an
// Authorization scheme (bearer, basic) or a user flag (-u, -U, --user).
// Text(s) == s when it returns false. A cheap test: callers with long
// text (a run's output) mask only the lines it reports.
func MayHoldSecret(s string) bool {
	l := strings.ToLower(s)
	for _, words := range [][]string{{"://", "@", "%", "bearer", "basic", "-u"}, secretWords(), secretParts()} {
		for _, w := range words {
			if strings.Contains(l, w) {
				return true
			}
		}
	}
	return false
}

// Text returns free text (a command line, a request body, a header
// list, a dump) with every secret it carries masked, whatever the quoting:
//
//   - every URL's secret parts, as URLString masks them;
//   - the value of every name that names a secret (IsSecretKey) followed
//     by ':' or '=': `password=x`, `apikey=x&`, `"token": "x"` (JSON),
//     `\"secret\":\"x\"`, `Authorization: Bearer x`, `-H 'X-Api-Key: a b'`
//     (a header inside quotes is masked up to the closing quote),
//     `--password=x`, `PGPASSWORD=x`, `api%5Fkey=x`, `password%3Dx`; a
//     quoted value up to its closing quote (a doubled ” inside single
//     quotes, as YAML writes it, does not close it), a { or [ value as a
//     whole;
//   - the word after a flag that names a secret (`--password x`,
//     `--token "a b"`);
//   - the password of `-u user:password` (curl), `--user`, `--proxy-user`,
//     and of user:password@host without a scheme;
//   - the credentials after Bearer or Basic anywhere.
//
// Names, schemes, user names and the text around are kept, so a reader
// still sees what the command does. Text of masked text is the same.
func Text(s string) string {
	if s == "" {
		return s
	}
	s = urlPattern().ReplaceAllStringFunc(s, URLString)
	s = maskAssignments(s)
	s = maskFlags(s)
	s = replaceGroup(s, userFlagPattern(), 3)
	s = replaceGroup(s, userinfoPattern(), 2)
	s = replaceGroup(s, bearerPattern(), 3)
	return s
}

// replaceGroup replaces submatch g of every match of re with Mask.
func replaceGroup(s string, re *regexp.Regexp, g int) string {
	var b strings.Builder
	last := 0
	for _, m := range re.FindAllStringSubmatchIndex(s, -1) {
		if m[2*g] < 0 || m[2*g] < last {
			continue
		}
		b.WriteString(s[last:m[2*g]])
		b.WriteString(Mask)
		last = m[2*g+1]
	}
	if last == 0 {
		return s
	}
	b.WriteString(s[last:])
	return b.String()
}

// maskAssignments masks the value of every secret name followed by ':'
// or '='.
func maskAssignments(s string) string {
	var b strings.Builder
	last := 0 // s[:last] is written
	for _, m := range assignPattern().FindAllStringSubmatchIndex(s, -1) {
		if m[0] < last {
			continue
		}
		name := s[m[2]:m[3]]
		if dec, err := url.PathUnescape(name); err == nil {
			name = dec
		}
		if !IsSecretKey(strings.TrimLeft(name, "-")) {
			continue
		}
		// A header inside quotes ("Authorization: Bearer x") has no quote
		// between name and ':'; a JSON name ("token": x) has.
		header := m[5] == m[4] && strings.ContainsAny(s[m[6]:m[7]], ":aA")
		from, to := valueSpan(s, m[1], opener(s, m[2]), header)
		if from == to {
			continue
		}
		b.WriteString(s[last:from])
		b.WriteString(Mask)
		last = to
	}
	if last == 0 {
		return s
	}
	b.WriteString(s[last:])
	return b.String()
}

// opener is the quote right before position i ("Authorization: ..."), or
// "" when there is none: a header-style value inside quotes runs to the
// closing quote.
func opener(s string, i int) string {
	switch {
	case i >= 2 && s[i-2] == '\\' && s[i-1] == '"':
		return `\"`
	case i >= 1 && (s[i-1] == '"' || s[i-1] == '\''):
		return s[i-1 : i]
	}
	return ""
}

// valueSpan finds the value that starts at i and returns the part of it to
// mask (from == to: nothing). quote is the quote the name was opened
// with; header says the name is a header's inside that quote.
func valueSpan(s string, i int, quote string, header bool) (from, to int) {
	rest := s[i:]
	switch {
	case strings.HasPrefix(rest, `\"`):
		j := strings.Index(rest[2:], `\"`)
		if j < 0 {
			return i + 2, len(s)
		}
		return i + 2, i + 2 + j
	case strings.HasPrefix(rest, `"`):
		return i + 1, i + 1 + closingDouble(rest[1:])
	case strings.HasPrefix(rest, `'`):
		return i + 1, i + 1 + closingSingle(rest[1:])
	case strings.HasPrefix(rest, "{") || strings.HasPrefix(rest, "["):
		return i, i + balanced(rest)
	}
	var j int
	if quote != "" && header {
		// -H "X-Api-Key: a b c": up to the closing quote or the line end.
		j = strings.Index(rest, quote)
		if quote == `"` {
			if k := strings.Index(rest, `\"`); k >= 0 && (j < 0 || k < j) {
				j = k
			}
		}
		if k := strings.IndexAny(rest, "\r\n"); k >= 0 && (j < 0 || k < j) {
			j = k
		}
		if j < 0 {
			j = len(rest)
		}
		for j > 0 && (rest[j-1] == ' ' || rest[j-1] == '\t') {
			j--
		}
	} else {
		j = word(rest)
		// Authorization: Bearer x: the scheme and its credentials.
		if w := strings.ToLower(rest[:j]); isScheme(w) {
			k := j
			for k < len(rest) && (rest[k] == ' ' || rest[k] == '\t') {
				k++
			}
			if k > j && k < len(rest) {
				if n := word(rest[k:]); n > 0 {
					return i + k, i + k + n
				}
			}
		}
	}
	from = i
	if sp := strings.IndexAny(rest[:j], " \t"); sp > 0 && isScheme(strings.ToLower(rest[:sp])) {
		from = i + sp + 1
		for from < i+j && (s[from] == ' ' || s[from] == '\t') {
			from++
		}
	}
	return from, i + j
}

func isScheme(w string) bool { return slices.Contains(authSchemes(), w) }

// word is the length of the unquoted value at the start of s: up to a
// space or a character that ends a value in a command line, a query
// string, JSON or a header list.
func word(s string) int {
	if i := strings.IndexAny(s, " \t\r\n&;,\"'<>(){}[]|\\`"); i >= 0 {
		return i
	}
	return len(s)
}

// closingDouble is the index of the '"' that closes a double-quoted value
// (a backslash escapes the next character), or len(s).
func closingDouble(s string) int {
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '\\':
			i++
		case '"':
			return i
		}
	}
	return len(s)
}

// closingSingle is the index of the '\” that closes a single-quoted
// value (” inside is a quote, as YAML writes it), or len(s).
func closingSingle(s string) int {
	for i := 0; i < len(s); i++ {
		if s[i] == '\'' {
			if i+1 < len(s) && s[i+1] == '\'' {
				i++
				continue
			}
			return i
		}
	}
	return len(s)
}

// balanced is the length of the {...} or [...] value at the start of s,
// skipping quoted strings, or len(s) when it does not close.
func balanced(s string) int {
	depth := 0
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '{', '[':
			depth++
		case '}', ']':
			depth--
			if depth == 0 {
				return i + 1
			}
		case '"':
			i += 1 + closingDouble(s[i+1:])
		}
	}
	return len(s)
}

// maskFlags masks the word after a flag that names a secret.
func maskFlags(s string) string {
	var b strings.Builder
	last := 0
	for _, m := range flagPattern().FindAllStringSubmatchIndex(s, -1) {
		if m[0] < last || !IsSecretKey(strings.TrimLeft(s[m[2]:m[3]], "-")) {
			continue
		}
		i := m[1]
		if i >= len(s) || s[i] == '-' {
			continue
		}
		from, to := valueSpan(s, i, "", false)
		if from == to || s[from:to] == Mask {
			continue
		}
		b.WriteString(s[last:from])
		b.WriteString(Mask)
		last = to
	}
	if last == 0 {
		return s
	}
	b.WriteString(s[last:])
	return b.String()
}
