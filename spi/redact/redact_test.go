package redact_test

import (
	"net/url"
	"strings"
	"testing"

	"github.com/ejob-io/ejob/spi/redact"
)

func TestURL(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"https://example.com/run":           "https://example.com/run",
		"https://user:pa55@example.com/run": "https://***@example.com/run",
		"https://t0ken@example.com/":        "https://***@example.com/",
		"https://oapi.dingtalk.com/robot/send?access_token=abc&timestamp=1&sign=xyz": "https://oapi.dingtalk.com/robot/send?access_token=***&timestamp=***&sign=***",
		"https://qyapi.weixin.qq.com/cgi-bin/webhook/send?key=693a91f6":              "https://qyapi.weixin.qq.com/cgi-bin/webhook/send?key=***",
		"https://hooks.slack.com/services/T000/B000/XXXXXXXXXXXXXXXXXXXXXXXX":        "https://hooks.slack.com/services/T000/B000/***",
		"http://h/p?token=s3cret&flag":                                               "http://h/p?token=***&flag",
		"https://h/cb#access_token=s3cret":                                           "https://h/cb#***",
	} {
		u, err := url.Parse(in)
		if err != nil {
			t.Fatal(err)
		}
		if got := redact.URL(u); got != want {
			t.Errorf("URL(%q) = %q, want %q", in, got, want)
		}
		if got := redact.URLString(in); got != want {
			t.Errorf("URLString(%q) = %q, want %q", in, got, want)
		}
		if u.String() != in {
			t.Errorf("URL modified its argument: %q", u)
		}
	}
}

// The secret values of the usual token parameters never survive.
func TestCommonSecretParametersMasked(t *testing.T) {
	t.Parallel()
	const secret = "S3CR3T"
	for _, name := range []string{"token", "access_token", "key", "api_key", "apikey", "secret", "sign", "signature",
		"password", "passwd", "auth", "X-Amz-Signature", "sig", "code", "client_secret"} {
		in := "https://h/p?" + name + "=" + secret + "&x=1"
		if got := redact.URLString(in); strings.Contains(got, secret) {
			t.Errorf("%s: %q keeps the secret", name, got)
		}
	}
	if got := redact.URLString("::not a url?token=" + secret); strings.Contains(got, secret) {
		t.Errorf("unparseable text keeps the secret: %q", got)
	}
}
