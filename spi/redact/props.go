package redact

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"unicode"
)

// secretWords mark a prop as secret when one of its key's words (split
// at '.', '-', '_', '%', spaces and camelCase humps, lower case) is one of
// them: the alerting error handlers' secret props (dingtalk.secret,
// email.password, slack.token, webhook.secret, webhook.headers.*) and the
// usual names of credentials (apiKey, X-Api-Key, client_secret,
// Authorization, Cookie).
func secretWords() []string {
	return []string{"password", "passwd", "pwd", "pass", "passphrase", "secret", "token", "credential", "credentials",
		"key", "apikey", "accesskey", "privatekey", "headers", "authorization", "auth", "sign", "signature", "sig",
		"cookie", "jwt"}
}

// secretParts mark a key's word as secret when it contains one of them:
// names written as one word (PGPASSWORD, authtoken, clientsecret).
func secretParts() []string {
	return []string{"password", "passwd", "secret", "token", "credential", "apikey", "accesskey", "privatekey",
		"passphrase", "authorization"}
}

// keyWords splits a key into lower-case words at separators and at
// camelCase humps ("X-Api-Key", "apiKey", "API_KEY" all give api, key).
func keyWords(key string) []string {
	var words []string
	var cur []rune
	flush := func() {
		if len(cur) > 0 {
			words = append(words, strings.ToLower(string(cur)))
			cur = cur[:0]
		}
	}
	rs := []rune(key)
	for i, r := range rs {
		switch {
		case !unicode.IsLetter(r) && !unicode.IsDigit(r):
			flush()
			continue
		case unicode.IsUpper(r) && len(cur) > 0 &&
			(unicode.IsLower(cur[len(cur)-1]) || (i+1 < len(rs) && unicode.IsLower(rs[i+1]))):
			flush()
		}
		cur = append(cur, r)
	}
	flush()
	return words
}

// IsSecretKey reports whether a prop's value is a secret as a whole: one
// of its key's words is a secret word (secretWords), contains a longer
// one (secretParts) or ends in "pass" (storepass, keypass).
func IsSecretKey(key string) bool {
	for _, w := range keyWords(key) {
		if slices.Contains(secretWords(), w) || strings.HasSuffix(w, "pass") {
			return true
		}
		for _, p := range secretParts() {
			if strings.Contains(w, p) {
				return true
			}
		}
	}
	return false
}

// Value is a job prop's value as ejob shows it (REST API, console,
// `ejob job show`, the dump): Mask for a secret key; a value that is one
// URL with its user info, query values, fragment and long path segments
// masked (URLString, as in ejob's logs); any other text with the secrets
// it carries masked (Text: Authorization headers, password=..., --token
// ..., URLs inside a command line or a body).
func Value(key, v string) string {
	switch {
	case v == "":
		return v
	case IsSecretKey(key):
		return Mask
	case strings.Contains(v, "://") && !strings.ContainsAny(v, " \t\r\n\"'"):
		return URLString(v)
	}
	return Text(v)
}

// Props returns props with every secret masked (Value).
func Props(props map[string]string) map[string]string {
	out := make(map[string]string, len(props))
	for k, v := range props {
		out[k] = Value(k, v)
	}
	return out
}

// ErrMasked is wrapped by Unmask's error: a value sent back still holds
// the Mask of a secret it was shown with, edited around it, so the secret
// itself would be lost.
var ErrMasked = errors.New("a masked secret was sent back edited")

// Unmask returns sent with each value that is exactly the masked form
// of the stored one replaced by the stored value: a console that reads a
// config and writes it back keeps the secrets it was never shown. A value
// that differs from the stored one's masked form but still holds Mask,
// where the stored value had a secret masked, is refused (ErrMasked,
// naming the key): the edit was made around a secret the sender never
// saw, and saving it would write Mask in the secret's place.
func Unmask(sent, stored map[string]string) (map[string]string, error) {
	out := maps.Clone(sent)
	for _, k := range slices.Sorted(maps.Keys(sent)) {
		v := sent[k]
		sv, ok := stored[k]
		if !ok || v == sv {
			continue
		}
		shown := Value(k, sv)
		switch {
		case v == shown:
			out[k] = sv
		case shown != sv && strings.Contains(v, Mask):
			return nil, fmt.Errorf("%w: prop %s holds %s where its stored value has a secret: send the whole value, secret included", ErrMasked, k, Mask)
		}
	}
	return out, nil
}
