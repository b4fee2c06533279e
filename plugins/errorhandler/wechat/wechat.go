package wechat

import (
	"context"
	"net/http"

	"github.com/ejob-io/ejob/plugins/errorhandler/alert"
)

// TypeName is the type the handler is registered under.
const TypeName = "WECHAT"

// The props WECHAT reads, upstream's keys.
const (
	PropWebhook        = "wechat.webhook" // required; its key= token is secret
	PropConnectTimeout = "wechat.connectTimeoutMilliseconds"
	PropReadTimeout    = "wechat.readTimeoutMilliseconds"
)

// New returns the WECHAT handler.
func New(opts alert.Options) *alert.Handler { return alert.New(Channel(), opts) }

// Channel describes WECHAT for package alert.
func Channel() alert.Channel {
	return alert.Channel{
		Type:     TypeName,
		Noun:     "wechat message",
		URLProps: []string{PropWebhook},
		Parse:    parse,
	}
}

func parse(props map[string]string, _ alert.Env) (alert.Sender, error) {
	if _, err := alert.HTTPURL(props, PropWebhook); err != nil {
		return nil, err
	}
	connect, read, err := alert.Timeouts(props, "wechat")
	if err != nil {
		return nil, err
	}
	url := props[PropWebhook]
	return &sender{url: url, target: alert.RedactURL(url), client: alert.HTTPClient(connect, read)}, nil
}

type sender struct {
	url, target string
	client      *http.Client
}

func (s *sender) Target() string { return s.target }

// Send posts upstream's payload, {"msgtype":"text","text":{"content":...}},
// with the headers upstream's HttpClient sends.
func (s *sender) Send(ctx context.Context, m alert.Message) error {
	header := http.Header{"Content-Type": {"application/json"}, "Content-Encoding": {"UTF-8"}}
	status, body, err := alert.Post(ctx, s.client, s.url, s.target, header, alert.RobotPayload(m.Text()))
	if err != nil {
		return err
	}
	return alert.CheckRobotResponse(status, body)
}
