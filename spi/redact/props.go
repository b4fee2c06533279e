package redact

import (
	"cmp"
	"maps"
	"slices"
	"strings"
)

// secretWords mark a prop as secret when one of its key's dot- or
// dash-separated words (lower case) is one of them: the alerting error
// handlers' secret props (dingtalk.secret, email.password, slack.token,
// webhook.secret, webhook.headers.*) and the usual names of credentials.
func secretWords() []string {
	return []string{"password", "passwd", "pwd", "secret", "token", "credential", "credentials",
		"apikey", "accesskey", "privatekey", "headers", "authorization", "auth", "sign", "signature"}
}

// IsSecretKey reports whether a prop's value is a secret as a whole.
func IsSecretKey(key string) bool {
	words := strings.FieldsFunc(strings.ToLower(key), func(r rune) bool { return r == '.' || r == '-' || r == '_' })
	for _, w := range words {
		if slices.Contains(secretWords(), w) {
			return true
		}
	}
	return false
}

// Value is a job prop's value as ejob shows it (REST API, `ejob job
// show`): Mask for a secret key, a URL with its user info, query values,
// fragment and long path segments masked (URLString, as in ejob's logs),
// else the value.
func Value(key, v string) string {
	switch {
	case v == "":
		return v
	case IsSecretKey(key):
		return Mask
	case strings.Contains(v, "://"):
		return URLString(v)
	}
	return v
}

// Props returns props with every secret masked (Value).
func Props(props map[string]string) map[string]string {
	out := make(map[string]string, len(props))
	for k, v := range props {
		out[k] = Value(k, v)
	}
	return out
}

// Unmask returns sent with each value that is exactly the masked form
// of the stored one replaced by the stored value: a console that reads a
// config and writes it back keeps the secrets it was never shown.
func Unmask(sent, stored map[string]string) map[string]string {
	out := maps.Clone(sent)
	for k, v := range sent {
		if sv, ok := stored[k]; ok && v != sv && v == Value(k, sv) {
			out[k] = sv
		}
	}
	return out
}

// TextMasker masks, in free text (a dump), every secret of props: the
// values of secret keys, and each URL's secret parts.
func TextMasker(props map[string]string) *strings.Replacer {
	type pair struct{ old, new string }
	var ps []pair
	for k, v := range props {
		if m := Value(k, v); m != v {
			ps = append(ps, pair{v, m})
		}
	}
	// Longest first, so that a secret containing another is masked whole.
	slices.SortFunc(ps, func(a, b pair) int { return cmp.Or(len(b.old)-len(a.old), strings.Compare(a.old, b.old)) })
	args := make([]string, 0, 2*len(ps))
	for _, p := range ps {
		args = append(args, p.old, p.new)
	}
	return strings.NewReplacer(args...)
}
