package sasl

import (
	"crypto/md5"
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"strings"
	"unicode/utf8"
)

// ZooKeeper's DIGEST-MD5 names: its client asks for the service
// "zookeeper" on the host "zk-sasl-md5", and its server's realm is that
// host name.
const (
	ZooKeeperDigestService = "zookeeper"
	ZooKeeperDigestHost    = "zk-sasl-md5"
)

// DigestMD5 is the DIGEST-MD5 client of RFC 2831 with qop "auth" (no
// security layer), as ZooKeeper's server asks for.
type DigestMD5 struct {
	// Username and Password are the credentials (a user_NAME="PASSWORD"
	// entry of the server's JAAS DigestLoginModule).
	Username, Password string
	// Service and Host make the digest-uri "Service/Host"
	// (ZooKeeperDigestService, ZooKeeperDigestHost for ZooKeeper).
	Service, Host string
	// Rand is the source of the client nonce (default crypto/rand).
	Rand io.Reader

	cnonceFixed string // tests: RFC 2831's examples' cnonce
	state       int    // 0 new, 1 response sent, 2 complete
	rspauth     string
}

var _ Mechanism = (*DigestMD5)(nil)

// Name implements Mechanism.
func (d *DigestMD5) Name() string { return "DIGEST-MD5" }

// Start implements Mechanism: DIGEST-MD5 has no initial response.
func (d *DigestMD5) Start() ([]byte, error) { return []byte{}, nil }

// Complete implements Mechanism.
func (d *DigestMD5) Complete() bool { return d.state == 2 }

// Step implements Mechanism: the first challenge gets the digest
// response; the second must prove the server knows the password too.
func (d *DigestMD5) Step(challenge []byte) ([]byte, error) {
	switch d.state {
	case 0:
		if len(challenge) == 0 {
			return nil, ErrNoChallenge
		}
		resp, rspauth, err := d.respond(challenge)
		if err != nil {
			return nil, err
		}
		d.state, d.rspauth = 1, rspauth
		return resp, nil
	case 1:
		if len(challenge) == 0 {
			return nil, fmt.Errorf("DIGEST-MD5: the server sent no rspauth: %w", ErrRejected)
		}
		kv, err := parseDirectives(string(challenge))
		if err != nil {
			return nil, fmt.Errorf("DIGEST-MD5: server's final message: %v: %w", err, ErrRejected)
		}
		got := kv["rspauth"]
		if len(got) != 1 || subtle.ConstantTimeCompare([]byte(got[0]), []byte(d.rspauth)) != 1 {
			return nil, fmt.Errorf("DIGEST-MD5: the server's rspauth does not prove it knows the password: %w", ErrRejected)
		}
		d.state = 2
		return nil, nil
	}
	return nil, errors.New("DIGEST-MD5: exchange already complete")
}

// respond computes the digest-response to a digest-challenge, and the
// rspauth the server must send back.
func (d *DigestMD5) respond(challenge []byte) (resp []byte, rspauth string, err error) {
	kv, err := parseDirectives(string(challenge))
	if err != nil {
		return nil, "", fmt.Errorf("DIGEST-MD5: challenge: %v: %w", err, ErrRejected)
	}
	one := func(name string) (string, error) {
		v := kv[name]
		if len(v) > 1 {
			return "", fmt.Errorf("DIGEST-MD5: challenge has %d %s directives: %w", len(v), name, ErrRejected)
		}
		if len(v) == 0 {
			return "", nil
		}
		return v[0], nil
	}
	nonce, err := one("nonce")
	if err != nil {
		return nil, "", err
	}
	if nonce == "" {
		return nil, "", fmt.Errorf("DIGEST-MD5: challenge has no nonce: %w", ErrRejected)
	}
	algorithm, err := one("algorithm")
	if err != nil {
		return nil, "", err
	}
	if algorithm != "md5-sess" {
		return nil, "", fmt.Errorf("DIGEST-MD5: challenge's algorithm is %q, not md5-sess: %w", algorithm, ErrRejected)
	}
	charset, err := one("charset")
	if err != nil {
		return nil, "", err
	}
	utf8ok := strings.EqualFold(charset, "utf-8")
	if qops, err := one("qop"); err != nil {
		return nil, "", err
	} else if qops != "" && !hasToken(qops, "auth") {
		return nil, "", fmt.Errorf("DIGEST-MD5: the server offers qop %q, not auth (ejob has no security layer): %w", qops, ErrRejected)
	}
	realm := ""
	if r := kv["realm"]; len(r) > 0 {
		realm = r[0] // the server's first (ZooKeeper offers one)
	}
	user, err := encodeCred(d.Username, utf8ok)
	if err != nil {
		return nil, "", fmt.Errorf("DIGEST-MD5: username: %w", err)
	}
	pass, err := encodeCred(d.Password, utf8ok)
	if err != nil {
		return nil, "", fmt.Errorf("DIGEST-MD5: password: %w", err)
	}
	realmBytes, err := encodeCred(realm, utf8ok)
	if err != nil {
		return nil, "", fmt.Errorf("DIGEST-MD5: realm: %w", err)
	}
	cnonce, err := d.cnonce()
	if err != nil {
		return nil, "", err
	}
	const nc = "00000001"
	uri := d.Service + "/" + d.Host
	response, rspauth := digest(user, realmBytes, pass, nonce, cnonce, nc, uri)

	var b strings.Builder
	if utf8ok {
		b.WriteString("charset=utf-8,")
	}
	fmt.Fprintf(&b, "username=%s,", quote(d.Username))
	if len(kv["realm"]) > 0 {
		fmt.Fprintf(&b, "realm=%s,", quote(realm))
	}
	fmt.Fprintf(&b, "nonce=%s,nc=%s,cnonce=%s,digest-uri=%s,maxbuf=65536,response=%s,qop=auth",
		quote(nonce), nc, quote(cnonce), quote(uri), response)
	return []byte(b.String()), rspauth, nil
}

// digest computes RFC 2831's response-value and the rspauth the server
// answers with, for qop auth and no authzid.
func digest(user, realm, pass []byte, nonce, cnonce, nc, uri string) (response, rspauth string) {
	h := md5.New()
	h.Write(user)
	h.Write([]byte(":"))
	h.Write(realm)
	h.Write([]byte(":"))
	h.Write(pass)
	a1 := append(h.Sum(nil), ":"+nonce+":"+cnonce...)
	ha1 := hexMD5(a1)
	kd := func(a2 string) string {
		return hexMD5([]byte(ha1 + ":" + nonce + ":" + nc + ":" + cnonce + ":auth:" + hexMD5([]byte(a2))))
	}
	return kd("AUTHENTICATE:" + uri), kd(":" + uri)
}

func hexMD5(b []byte) string {
	s := md5.Sum(b)
	return hex.EncodeToString(s[:])
}

func (d *DigestMD5) cnonce() (string, error) {
	if d.cnonceFixed != "" {
		return d.cnonceFixed, nil
	}
	r := d.Rand
	if r == nil {
		r = rand.Reader
	}
	b := make([]byte, 24)
	if _, err := io.ReadFull(r, b); err != nil {
		return "", fmt.Errorf("DIGEST-MD5: client nonce: %w", err)
	}
	return base64.RawStdEncoding.EncodeToString(b), nil
}

// encodeCred is RFC 2831's encoding of the username, realm and password
// in A1: ISO 8859-1 when every character fits, else UTF-8 (only when the
// server announced charset=utf-8).
func encodeCred(s string, utf8ok bool) ([]byte, error) {
	if !utf8.ValidString(s) {
		return nil, errors.New("not valid UTF-8")
	}
	out := make([]byte, 0, len(s))
	for _, r := range s {
		if r > 0xff {
			if !utf8ok {
				return nil, errors.New("has characters outside ISO 8859-1 and the server did not announce charset=utf-8")
			}
			return []byte(s), nil
		}
		out = append(out, byte(r))
	}
	return out, nil
}

// quote returns s as an RFC 2831 quoted-string.
func quote(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for i := 0; i < len(s); i++ {
		if s[i] == '"' || s[i] == '\\' {
			b.WriteByte('\\')
		}
		b.WriteByte(s[i])
	}
	b.WriteByte('"')
	return b.String()
}

// hasToken reports whether the comma-separated list holds tok.
func hasToken(list, tok string) bool {
	for _, t := range strings.Split(list, ",") {
		if strings.EqualFold(strings.TrimSpace(t), tok) {
			return true
		}
	}
	return false
}

// parseDirectives parses RFC 2831's #(name=value) list, where a value is
// a token or a quoted-string. Names are lower-cased; a name may repeat
// (realm).
func parseDirectives(s string) (map[string][]string, error) {
	out := map[string][]string{}
	i := 0
	skip := func() {
		for i < len(s) && (s[i] == ' ' || s[i] == '\t' || s[i] == '\r' || s[i] == '\n' || s[i] == ',') {
			i++
		}
	}
	for {
		skip()
		if i >= len(s) {
			return out, nil
		}
		start := i
		for i < len(s) && s[i] != '=' && s[i] != ',' {
			i++
		}
		name := strings.ToLower(strings.TrimSpace(s[start:i]))
		if i >= len(s) || s[i] != '=' || name == "" {
			return nil, fmt.Errorf("malformed directive at byte %d", start)
		}
		i++ // '='
		for i < len(s) && (s[i] == ' ' || s[i] == '\t') {
			i++
		}
		var val string
		if i < len(s) && s[i] == '"' {
			i++
			var b strings.Builder
			closed := false
			for i < len(s) {
				c := s[i]
				i++
				if c == '\\' && i < len(s) {
					b.WriteByte(s[i])
					i++
					continue
				}
				if c == '"' {
					closed = true
					break
				}
				b.WriteByte(c)
			}
			if !closed {
				return nil, fmt.Errorf("unterminated quoted value of %s", name)
			}
			val = b.String()
		} else {
			start := i
			for i < len(s) && s[i] != ',' {
				i++
			}
			val = strings.TrimSpace(s[start:i])
		}
		out[name] = append(out[name], val)
		for i < len(s) && (s[i] == ' ' || s[i] == '\t') {
			i++
		}
		if i < len(s) && s[i] != ',' {
			return nil, fmt.Errorf("unexpected %q after %s", s[i], name)
		}
	}
}
