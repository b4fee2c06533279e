package dingtalk

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"net/http"
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
func New(opts alert.Options) *alert.Handler { return alert.New(Channel(opts.Now), opts) }

// Channel describes DINGTALK for package alert; now is the clock of the
// signature's timestamp (nil: time.Now).
func Channel(now func() time.Time) alert.Channel {
	if now == nil {
		now = time.Now
	}
	return alert.Channel{
		Type:        TypeName,
		Noun:        "dingtalk message",
		SecretProps: []string{PropSecret},
		URLProps:    []string{PropWebhook},
		Parse: func(props map[string]string, _ alert.Env) (alert.Sender, error) {
			return parse(props, now)
		},
	}
}

func parse(props map[string]string, now func() time.Time) (alert.Sender, error) {
	if _, err := alert.HTTPURL(props, PropWebhook); err != nil {
		return nil, err
	}
	connect, read, err := alert.Timeouts(props, "dingtalk")
	if err != nil {
		return nil, err
	}
	s := &sender{
		webhook: props[PropWebhook], keyword: props[PropKeyword], secret: props[PropSecret],
		client: alert.HTTPClient(connect, read), now: now,
	}
	s.target = alert.RedactURL(s.webhook)
	return s, nil
}

type sender struct {
	webhook, keyword, secret, target string
	client                           *http.Client
	now                              func() time.Time
}

func (s *sender) Target() string { return s.target }

// Send posts upstream's payload with the keyword in front of the text, to
// the webhook signed when a secret is set.
func (s *sender) Send(ctx context.Context, m alert.Message) error {
	u := s.webhook
	if s.secret != "" {
		u = SignedURL(s.webhook, s.secret, s.now().UnixMilli())
	}
	header := http.Header{"Content-Type": {"application/json"}, "Content-Encoding": {"UTF-8"}}
	status, body, err := alert.Post(ctx, s.client, u, s.target, header, alert.RobotPayload(s.keyword+m.Text()))
	if err != nil {
		return err
	}
	return alert.CheckRobotResponse(status, body)
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
