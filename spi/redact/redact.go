// Package redact masks the secrets that URLs carry, for everything ejob and
// its plugins log or return in an error: user info (user:password, or a
// token in the user part) and query values (?token=, ?access_token=,
// DingTalk's ?access_token=&sign=, pre-signed URLs' signatures). The rule is
// generic rather than a list of parameter names: every query value and the
// fragment are masked, parameter names are kept, so a reader still sees
// which endpoint was called and with which parameters.
package redact

import (
	"net/url"
	"strings"
)

// Mask replaces a secret.
const Mask = "***"

// URL returns u as a string with its user info, every query value and its
// fragment replaced by Mask. u is not modified.
func URL(u *url.URL) string {
	if u == nil {
		return ""
	}
	c := *u
	c.User = nil
	if c.RawQuery != "" {
		c.RawQuery = query(c.RawQuery)
	}
	if c.Fragment != "" || c.RawFragment != "" {
		c.Fragment, c.RawFragment = Mask, ""
	}
	s := c.String()
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
