package dingtalk

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/ejob-io/ejob/plugins/errorhandler/alert"
)

// TypeName is the type the handler is registered under.
const TypeName = "DINGTALK"

// The props DINGTALK reads, upstream's keys.
const (
	PropWebhook        = "dingtalk.webhook" // required; its access_token is secret
	PropKeyword        = "dingtalk.keyword"
	PropSecret         = "dingtalk.secret"
	PropConnectTimeout = "dingtalk.connectTimeoutMilliseconds"
	PropReadTimeout    = "dingtalk.readTimeoutMilliseconds"
)

// New returns the DINGTALK handler; opts.Now also stamps the signature.
func New(opts alert.Options) *alert.Handler { return alert.New(Channel(), opts) }

// Channel describes DINGTALK for package alert.
func Channel() alert.Channel {
	return alert.Channel{
		Type:        TypeName,
		Noun:        "dingtalk message",
		SecretProps: []string{PropSecret},
		URLProps:    []string{PropWebhook},
		Parse:       parse,
	}
}

func parse(props map[string]string, env alert.Env) (alert.Sender, error) {
	e, err := alert.ParseEndpoint(props, PropWebhook, "dingtalk")
	if err != nil {
		return nil, err
	}
	return &sender{ep: e, keyword: props[PropKeyword], secret: props[PropSecret], now: env.Now}, nil
}

type sender struct {
	ep              alert.Endpoint
	keyword, secret string
	now             func() time.Time
}

func (s *sender) Target() string { return s.ep.Target }

// Send posts upstream's payload with the keyword in front of the text, to
// the webhook signed (with the handler's clock) when a secret is set.
func (s *sender) Send(ctx context.Context, m alert.Message) error {
	u := s.ep.URL
	if s.secret != "" {
		u = SignedURL(s.ep.URL, s.secret, s.now().UnixMilli())
	}
	return alert.PostRobot(ctx, s.ep.Client, u, s.ep.Target, s.keyword+m.Text())
}

// Sign returns DingTalk's signature for a request at timestampMillis,
// URL-encoded as upstream's URLEncoder does:
// urlencode(base64(HmacSHA256(key=secret, msg=timestamp+"\n"+secret))).
func Sign(secret string, timestampMillis int64) string {
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write([]byte(strconv.FormatInt(timestampMillis, 10) + "\n" + secret))
	return url.QueryEscape(base64.StdEncoding.EncodeToString(mac.Sum(nil)))
}

// SignedURL appends timestamp and sign to webhook as upstream does
// ("&timestamp=...&sign=..."), with "?" instead of the first "&" when the
// webhook has no query (upstream would send a broken URL).
func SignedURL(webhook, secret string, timestampMillis int64) string {
	sep := "&"
	if !strings.Contains(webhook, "?") {
		sep = "?"
	}
	return webhook + sep + "timestamp=" + strconv.FormatInt(timestampMillis, 10) + "&sign=" + Sign(secret, timestampMillis)
}
