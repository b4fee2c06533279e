// Package redact masks the secrets that URLs carry, for everything ejob and
// its plugins log or return in an error: user info (user:password, or a
// token in the user part), query values (?token=, ?access_token=,
// DingTalk's ?access_token=&sign=, pre-signed URLs' signatures) and tokens
// in the path (Slack's /services/T…/B…/<token>). The rule is generic rather
// than a list of parameter names: every query value, the fragment and every
// path segment of MinTokenLen characters or more are masked; parameter
// names and short segments are kept, so a reader still sees which endpoint
// was called and with which parameters.
package redact

import (
	"net/url"
	"slices"
	"strings"
)

// Mask replaces a secret.
const Mask = "***"

// MinTokenLen is the length from which a path segment is taken for a
// token: API paths' words are shorter, generated secrets longer.
const MinTokenLen = 16

// URL returns u as a string with its user info, every query value, its
// fragment and its path segments of MinTokenLen characters or more
// replaced by Mask. u is not modified.
func URL(u *url.URL) string {
	if u == nil {
		return ""
	}
	c := *u
	c.User = nil
	if segs := strings.Split(c.Path, "/"); slices.ContainsFunc(segs, isToken) {
		for i, seg := range segs {
			if isToken(seg) {
				segs[i] = Mask
			}
		}
		c.Path, c.RawPath = strings.Join(segs, "/"), ""
	}
	if c.RawQuery != "" {
		c.RawQuery = query(c.RawQuery)
	}
	if c.Fragment != "" || c.RawFragment != "" {
		c.Fragment, c.RawFragment = Mask, ""
	}
	// url.URL.String escapes the mask in the path as %2A%2A%2A.
	s := strings.ReplaceAll(c.String(), url.PathEscape(Mask), Mask)
	if u.User != nil {
		// url.User would escape the mask as %2A%2A%2A.
		if i := strings.Index(s, "//"); i >= 0 {
			s = s[:i+2] + Mask + "@" + s[i+2:]
		}
	}
	return s
}

// URLString is URL for a URL held as text. Text that does not parse as a
// URL is masked whole unless it has no '?', '#' or '@' (nothing of it can
// be a secret by the rule above).
func URLString(s string) string {
	u, err := url.Parse(s)
	if err != nil {
		if strings.ContainsAny(s, "?#@") {
			return Mask
		}
		return s
	}
	return URL(u)
}

func isToken(seg string) bool { return len(seg) >= MinTokenLen }

// query masks every value of a raw query, keeping names and order (and
// leaving names with no '=' as they are).
func query(raw string) string {
	parts := strings.Split(raw, "&")
	for i, p := range parts {
		if name, _, ok := strings.Cut(p, "="); ok {
			parts[i] = name + "=" + Mask
		}
	}
	return strings.Join(parts, "&")
}
