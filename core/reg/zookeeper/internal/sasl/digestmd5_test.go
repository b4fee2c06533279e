package sasl

import (
	"errors"
	"strings"
	"testing"
)

// rfc2831 are the two examples of RFC 2831 section 4 (user chris, password
// secret).
var rfc2831 = map[string]struct {
	challenge, cnonce, service, response, rspauth string
}{
	"IMAP": {
		challenge: `realm="elwood.innosoft.com",nonce="OA6MG9tEQGm2hh",qop="auth",algorithm=md5-sess,charset=utf-8`,
		cnonce:    "OA6MHXh6VqTrRk", service: "imap",
		response: "d388dad90d4bbd760a152321f2143af7", rspauth: "ea40f60335c427b5527b84dbabcdfffd",
	},
	"ACAP": {
		challenge: `realm="elwood.innosoft.com",nonce="OA9BSXrbuRhWay",qop="auth",algorithm=md5-sess,charset=utf-8`,
		cnonce:    "OA9BSuZWMSpW8m", service: "acap",
		response: "6084c6db3fede7352c551284490fd0fc", rspauth: "2f0b3d7c3c2e486600ef710726aa2eae",
	},
}

func TestDigestMD5RFC2831Examples(t *testing.T) {
	for name, tc := range rfc2831 {
		t.Run(name, func(t *testing.T) {
			d := &DigestMD5{Username: "chris", Password: "secret", Service: tc.service, Host: "elwood.innosoft.com", cnonceFixed: tc.cnonce}
			first, err := d.Start()
			if err != nil || len(first) != 0 {
				t.Fatalf("Start = %q, %v; want an empty initial response", first, err)
			}
			resp, err := d.Step([]byte(tc.challenge))
			if err != nil {
				t.Fatal(err)
			}
			want := `charset=utf-8,username="chris",realm="elwood.innosoft.com",nonce="` + strings.Split(strings.Split(tc.challenge, `nonce="`)[1], `"`)[0] +
				`",nc=00000001,cnonce="` + tc.cnonce + `",digest-uri="` + tc.service + `/elwood.innosoft.com",maxbuf=65536,response=` + tc.response + `,qop=auth`
			if string(resp) != want {
				t.Errorf("response\n got %s\nwant %s", resp, want)
			}
			if d.Complete() {
				t.Fatal("complete before the server's rspauth")
			}
			if _, err := d.Step([]byte("rspauth=" + strings.Repeat("0", 32))); !errors.Is(err, ErrRejected) {
				t.Errorf("a wrong rspauth: %v, want ErrRejected", err)
			}
			last, err := d.Step([]byte("rspauth=" + tc.rspauth))
			if err != nil || last != nil || !d.Complete() {
				t.Errorf("rspauth step = %q, %v, complete %v; want nil, nil, true", last, err, d.Complete())
			}
		})
	}
}

func TestDigestMD5RefusesWhatItCannotDo(t *testing.T) {
	for name, tc := range map[string]struct {
		challenge string
		want      error
		text      string
	}{
		"empty (server without SASL)": {"", ErrNoChallenge, "no SASL configured"},
		"no nonce":                    {`realm="r",qop="auth",algorithm=md5-sess`, ErrRejected, "no nonce"},
		"two nonces":                  {`nonce="a",nonce="b",algorithm=md5-sess`, ErrRejected, "2 nonce"},
		"other algorithm":             {`nonce="a",algorithm=md5`, ErrRejected, "not md5-sess"},
		"only a security layer":       {`nonce="a",qop="auth-conf",algorithm=md5-sess`, ErrRejected, "not auth"},
		"unterminated quote":          {`nonce="a`, ErrRejected, "unterminated"},
		"garbage":                     {`nonce`, ErrRejected, "malformed"},
	} {
		t.Run(name, func(t *testing.T) {
			d := &DigestMD5{Username: "u", Password: "p", Service: "s", Host: "h"}
			_, err := d.Step([]byte(tc.challenge))
			if !errors.Is(err, tc.want) || !strings.Contains(err.Error(), tc.text) {
				t.Errorf("Step = %v, want %v containing %q", err, tc.want, tc.text)
			}
		})
	}
}

func TestDigestMD5Charset(t *testing.T) {
	// Without charset=utf-8 a password outside ISO 8859-1 cannot be sent.
	d := &DigestMD5{Username: "u", Password: "пароль", Service: "s", Host: "h"}
	if _, err := d.Step([]byte(`nonce="n",algorithm=md5-sess`)); err == nil || !strings.Contains(err.Error(), "ISO 8859-1") {
		t.Errorf("Step = %v, want the charset refused", err)
	}
	// ISO 8859-1 text hashes as Latin-1 bytes even when UTF-8 is allowed:
	// "é" is the one byte 0xe9 in A1.
	latin := &DigestMD5{Username: "u", Password: "é", Service: "s", Host: "h", cnonceFixed: "c"}
	raw := &DigestMD5{Username: "u", Password: "\xe9", Service: "s", Host: "h", cnonceFixed: "c"}
	a, _ := encodeCred(latin.Password, true)
	if string(a) != "\xe9" {
		t.Errorf("encodeCred(é) = %q, want one byte 0xe9", a)
	}
	if _, err := encodeCred(raw.Password, true); err == nil {
		t.Error("invalid UTF-8 accepted")
	}
	// Quotes and backslashes in a username are escaped.
	q := &DigestMD5{Username: `a"b\c`, Password: "p", Service: "s", Host: "h", cnonceFixed: "c"}
	resp, err := q.Step([]byte(`nonce="n",algorithm=md5-sess,charset=utf-8`))
	if err != nil || !strings.Contains(string(resp), `username="a\"b\\c"`) {
		t.Errorf("response %s, %v: want the username escaped", resp, err)
	}
	kv, err := parseDirectives(string(resp))
	if err != nil || kv["username"][0] != `a"b\c` {
		t.Errorf("round trip of the escaped username: %v, %v", kv["username"], err)
	}
}
