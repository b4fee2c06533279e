package alert

import (
	"cmp"
	"encoding/base64"
	"net/url"
	"slices"
	"strings"

	"github.com/ejob-io/ejob/spi/redact"
)

// Mask is what a secret is replaced with (redact.Mask).
const Mask = redact.Mask

// Masker replaces the secrets of one job's props wherever they appear in a
// text. Its zero value (and nil) masks nothing. It is safe for concurrent
// use.
type Masker struct {
	r *strings.Replacer
}

// minTokenLen is the shortest path segment or header word taken as a
// token of its own (shorter ones are masked only as part of the whole
// value, so that words like "services" survive).
const minTokenLen = 16

// NewMasker collects the secrets of props: the whole value of each key in
// secretKeys (a key ending in "." names every key with that prefix), and of
// each URL in urlKeys the whole URL, its user info, every query value and
// every path segment of at least 16 characters. Each is also masked in its
// URL-escaped and base64 forms.
func NewMasker(props map[string]string, secretKeys, urlKeys []string) *Masker {
	var secrets []string
	for k, v := range props {
		if v == "" {
			continue
		}
		for _, sk := range secretKeys {
			if k == sk || (strings.HasSuffix(sk, ".") && strings.HasPrefix(k, sk)) {
				secrets = append(secrets, v)
				for _, w := range strings.Fields(v) {
					if len(w) >= minTokenLen/2 {
						secrets = append(secrets, w)
					}
				}
			}
		}
		if slices.Contains(urlKeys, k) {
			secrets = append(secrets, urlSecrets(v)...)
		}
	}
	return newMasker(secrets)
}

func urlSecrets(raw string) []string {
	out := []string{raw}
	u, err := url.Parse(raw)
	if err != nil {
		return out
	}
	if u.User != nil {
		out = append(out, u.User.String(), u.User.Username())
		if p, ok := u.User.Password(); ok {
			out = append(out, p)
		}
	}
	if u.RawQuery != "" {
		out = append(out, u.RawQuery)
	}
	for _, vs := range u.Query() {
		out = append(out, vs...)
	}
	for _, seg := range strings.Split(u.Path, "/") {
		if len(seg) >= minTokenLen {
			out = append(out, seg)
		}
	}
	if u.Fragment != "" {
		out = append(out, u.Fragment)
	}
	return out
}

func newMasker(secrets []string) *Masker {
	var all []string
	for _, s := range secrets {
		if strings.TrimSpace(s) == "" {
			continue
		}
		all = append(all, s, url.QueryEscape(s), url.PathEscape(s), base64.StdEncoding.EncodeToString([]byte(s)))
	}
	if len(all) == 0 {
		return &Masker{}
	}
	// Longest first, so that a secret containing another is masked whole.
	slices.SortFunc(all, func(a, b string) int { return cmp.Or(cmp.Compare(len(b), len(a)), strings.Compare(a, b)) })
	all = slices.Compact(all)
	pairs := make([]string, 0, 2*len(all))
	for _, s := range all {
		pairs = append(pairs, s, Mask)
	}
	return &Masker{r: strings.NewReplacer(pairs...)}
}

// Scrub returns s with every secret replaced by Mask.
func (m *Masker) Scrub(s string) string {
	if m == nil || m.r == nil {
		return s
	}
	return m.r.Replace(s)
}

// RedactURL returns raw for display, as spi/redact masks every URL ejob
// logs: user info, query values, fragment and long path segments.
func RedactURL(raw string) string { return redact.URLString(raw) }
