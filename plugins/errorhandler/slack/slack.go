package slack

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"unicode/utf8"

	slackgo "github.com/slack-go/slack"

	"github.com/ejob-io/ejob/plugins/errorhandler/alert"
)

// TypeName is the type the handler is registered under.
const TypeName = "SLACK"

// The props SLACK reads. Give slack.webhook, or slack.token with
// slack.channel.
const (
	// PropWebhook is an incoming webhook URL (secret).
	PropWebhook = "slack.webhook"
	// PropToken is a bot token (xoxb-..., secret) with chat:write.
	PropToken = "slack.token"
	// PropChannel is the channel ID or name the bot posts to.
	PropChannel = "slack.channel"
	// PropAPIURL is the Web API base URL (default DefaultAPIURL), for
	// GovSlack or a test server.
	PropAPIURL         = "slack.apiUrl"
	PropConnectTimeout = "slack.connectTimeoutMilliseconds"
	PropReadTimeout    = "slack.readTimeoutMilliseconds"
)

// DefaultAPIURL is Slack's Web API.
const DefaultAPIURL = "https://slack.com/api/"

// New returns the SLACK handler.
func New(opts alert.Options) *alert.Handler { return alert.New(Channel(), opts) }

// Channel describes SLACK for package alert.
func Channel() alert.Channel {
	return alert.Channel{
		Type:        TypeName,
		Noun:        "slack message",
		SecretProps: []string{PropToken},
		URLProps:    []string{PropWebhook},
		Parse:       parse,
	}
}

func parse(props map[string]string, _ alert.Env) (alert.Sender, error) {
	webhook, token, channel := strings.TrimSpace(props[PropWebhook]), strings.TrimSpace(props[PropToken]), strings.TrimSpace(props[PropChannel])
	connect, read, err := alert.Timeouts(props, "slack")
	if err != nil {
		return nil, err
	}
	client := alert.HTTPClient(connect, read)
	switch {
	case webhook != "" && token != "":
		return nil, alert.Invalid("Give either the property `%s` or `%s` with `%s`, not both.", PropWebhook, PropToken, PropChannel)
	case webhook != "":
		if _, err := alert.HTTPURL(props, PropWebhook); err != nil {
			return nil, err
		}
		return &webhookSender{url: webhook, target: alert.RedactURL(webhook), client: client}, nil
	case token != "":
		if channel == "" {
			return nil, alert.Invalid("The property `%s` is required.", PropChannel)
		}
		apiURL := DefaultAPIURL
		if _, ok := props[PropAPIURL]; ok {
			u, err := alert.HTTPURL(props, PropAPIURL)
			if err != nil {
				return nil, err
			}
			apiURL = strings.TrimSuffix(u.String(), "/") + "/"
		}
		api := slackgo.New(token, slackgo.OptionHTTPClient(client), slackgo.OptionAPIURL(apiURL))
		return &botSender{api: api, channel: channel, target: apiURL + "chat.postMessage #" + channel}, nil
	}
	return nil, alert.Invalid("The property `%s` is required (or `%s` with `%s`).", PropWebhook, PropToken, PropChannel)
}

type webhookSender struct {
	url, target string
	client      *http.Client
}

func (s *webhookSender) Target() string { return s.target }

// Send posts the message to the incoming webhook. Slack answers 200 "ok",
// or an error status with a reason such as "invalid_token" or
// "channel_is_archived", which the error carries.
func (s *webhookSender) Send(ctx context.Context, m alert.Message) error {
	body, err := json.Marshal(WebhookMessage(m))
	if err != nil {
		return fmt.Errorf("encode the slack message: %w", err)
	}
	status, resp, err := alert.Post(ctx, s.client, s.url, s.target, http.Header{"Content-Type": {"application/json"}}, body)
	if err != nil {
		return err
	}
	if status != http.StatusOK {
		return alert.StatusError(status, resp)
	}
	return nil
}

type botSender struct {
	api     *slackgo.Client
	channel string
	target  string
}

func (s *botSender) Target() string { return s.target }

// Send calls chat.postMessage. Slack's refusal ("channel_not_found",
// "invalid_auth", "not_in_channel", a missing scope) is the error.
func (s *botSender) Send(ctx context.Context, m alert.Message) error {
	_, _, err := s.api.PostMessageContext(ctx, s.channel,
		slackgo.MsgOptionText(Fallback(m), false), slackgo.MsgOptionBlocks(Blocks(m)...))
	if err == nil {
		return nil
	}
	var refusal slackgo.SlackErrorResponse
	if errors.As(err, &refusal) {
		if refusal.Needed != "" {
			return fmt.Errorf("chat.postMessage: %s (needed scope %s, token has %s)", refusal.Err, refusal.Needed, refusal.Provided)
		}
		return fmt.Errorf("chat.postMessage: %s", refusal.Err)
	}
	var retryable interface{ Retryable() bool }
	if errors.As(err, &retryable) && !retryable.Retryable() {
		return fmt.Errorf("chat.postMessage: %w", err)
	}
	// Rate limits, 5xx, and transport failures.
	return alert.Transient(fmt.Errorf("chat.postMessage: %w", err))
}

// WebhookMessage is what the incoming webhook receives: Fallback as text
// (notifications) and Blocks.
func WebhookMessage(m alert.Message) *slackgo.WebhookMessage {
	return &slackgo.WebhookMessage{Text: Fallback(m), Blocks: &slackgo.Blocks{BlockSet: Blocks(m)}}
}

// Fallback is the notification text: the first line.
func Fallback(m alert.Message) string { return truncate(m.FirstLine(), 3000) }

// Blocks lays the alert out for Slack, readable on a phone: the first line
// in bold; job, instance, item and time as fields (time shown in the
// reader's zone); the rest of the error and its detail as a code block;
// the notes (test, suppressed count) and the task id as context.
func Blocks(m alert.Message) []slackgo.Block {
	mrkdwn := func(s string) *slackgo.TextBlockObject {
		return slackgo.NewTextBlockObject(slackgo.MarkdownType, s, false, false)
	}
	blocks := []slackgo.Block{
		slackgo.NewSectionBlock(mrkdwn("*"+escape(truncate(m.FirstLine(), 2900))+"*"), nil, nil),
		slackgo.NewSectionBlock(nil, []*slackgo.TextBlockObject{
			mrkdwn("*Job*\n" + escape(truncate(m.JobName, 1900))),
			mrkdwn("*Instance*\n" + escape(truncate(m.InstanceID, 1900))),
			mrkdwn("*Item*\n" + escape(m.ItemText())),
			mrkdwn(fmt.Sprintf("*Time*\n<!date^%d^{date_short_pretty} {time_secs}|%s>", m.Time.Unix(), m.TimeText())),
		}, nil),
	}
	var more []string
	if _, rest, ok := strings.Cut(m.Error.Message, "\n"); ok && strings.TrimSpace(rest) != "" {
		more = append(more, strings.TrimRight(rest, "\n"))
	}
	if d := strings.TrimRight(m.Error.Detail, "\n"); d != "" {
		more = append(more, d)
	}
	if len(more) > 0 {
		blocks = append(blocks, slackgo.NewSectionBlock(mrkdwn("```"+escape(truncate(strings.Join(more, "\n"), 2900))+"```"), nil, nil))
	}
	var notes []slackgo.MixedElement
	for _, n := range m.Notes() {
		notes = append(notes, mrkdwn(escape(n)))
	}
	if m.TaskID != "" {
		notes = append(notes, mrkdwn("task "+escape(truncate(m.TaskID, 1900))))
	}
	if len(notes) > 0 {
		blocks = append(blocks, slackgo.NewContextBlock("", notes...))
	}
	return blocks
}

// escape escapes the three characters Slack's mrkdwn reserves.
func escape(s string) string {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;").Replace(s)
}

// truncate cuts s to at most n bytes on a rune boundary, marking the cut.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n - len("…")
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}
