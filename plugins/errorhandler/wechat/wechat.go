package wechat

import (
	"context"

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
	e, err := alert.ParseEndpoint(props, PropWebhook, "wechat")
	if err != nil {
		return nil, err
	}
	return &sender{ep: e}, nil
}

type sender struct{ ep alert.Endpoint }

func (s *sender) Target() string { return s.ep.Target }

// Send posts upstream's payload, {"msgtype":"text","text":{"content":...}},
// with the headers upstream's HttpClient sends.
func (s *sender) Send(ctx context.Context, m alert.Message) error {
	return alert.PostRobot(ctx, s.ep.Client, s.ep.URL, s.ep.Target, m.Text())
}
