package slack_test

import (
	"encoding/json"
	"errors"
	"net/url"
	"strings"
	"testing"

	slackgo "github.com/slack-go/slack"

	"github.com/ejob-io/ejob/plugins/errorhandler/alert"
	"github.com/ejob-io/ejob/plugins/errorhandler/alert/alerttest"
	"github.com/ejob-io/ejob/plugins/errorhandler/slack"
)

const (
	token     = "xoxb-1234-5678-abcdefghijklmnopqrstuvwx"
	hookToken = "ABCDEFGHIJKLMNOPQRSTUVWX"
)

const first = "Job 'orders' exception occur in job processing, caused by " + alerttest.Message

// checkBlocks decodes Block Kit JSON and checks the layout: the first line
// in bold, the four fields, the detail as code, the task as context.
func checkBlocks(t *testing.T, raw []byte) {
	t.Helper()
	var blocks slackgo.Blocks
	if err := json.Unmarshal(raw, &blocks); err != nil {
		t.Fatalf("blocks: %v\n%s", err, raw)
	}
	if len(blocks.BlockSet) != 4 {
		t.Fatalf("%d blocks, want 4: %s", len(blocks.BlockSet), raw)
	}
	head := blocks.BlockSet[0].(*slackgo.SectionBlock)
	if want := "*Job 'orders' exception occur in job processing, caused by exit status 3 &lt;disk &amp; full&gt; 'y' = z*"; head.Text.Text != want {
		t.Errorf("first block %q, want %q", head.Text.Text, want)
	}
	fields := blocks.BlockSet[1].(*slackgo.SectionBlock).Fields
	var got []string
	for _, f := range fields {
		got = append(got, f.Text)
	}
	want := []string{"*Job*\norders", "*Instance*\n10.0.0.5@-@4242", "*Item*\n2", "*Time*\n<!date^1795428000^{date_short_pretty} {time_secs}|2026-11-23T10:00:00Z>"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("fields %q, want %q", got, want)
	}
	if code := blocks.BlockSet[2].(*slackgo.SectionBlock).Text.Text; code != "```caused by *exec.ExitError: exit status 3```" {
		t.Errorf("detail block %q", code)
	}
	if ctx := blocks.BlockSet[3].(*slackgo.ContextBlock); len(ctx.ContextElements.Elements) != 1 {
		t.Errorf("context block %+v", ctx)
	}
}

func TestWebhook(t *testing.T) {
	t.Parallel()
	rc := alerttest.NewReceiver(t, func(_ int, r alerttest.Request) alerttest.Response {
		if !strings.HasSuffix(r.URL.Path, "/"+hookToken) {
			return alerttest.Response{Status: 403, Body: "invalid_token"}
		}
		return alerttest.Response{Body: "ok"}
	})
	log := &alerttest.Logger{}
	h := slack.New(alert.Options{Logger: log, Now: alerttest.Now})
	props := map[string]string{"slack.webhook": rc.URL + "/services/T000/B000/" + hookToken, "alert.suppressSeconds": "0"}
	alerttest.Send(t, h, alerttest.Failure(props))
	reqs := rc.Requests()
	if len(reqs) != 1 {
		t.Fatalf("%d requests; log:\n%s", len(reqs), log.Text())
	}
	var msg struct {
		Text   string          `json:"text"`
		Blocks json.RawMessage `json:"blocks"`
	}
	if err := json.Unmarshal(reqs[0].Body, &msg); err != nil || reqs[0].Header.Get("Content-Type") != "application/json" {
		t.Fatalf("%v: %s", err, reqs[0].Body)
	}
	if msg.Text != first {
		t.Errorf("text %q", msg.Text)
	}
	checkBlocks(t, msg.Blocks)
	if !strings.Contains(log.Text(), "a slack message has been sent successfully") {
		t.Errorf("log:\n%s", log.Text())
	}

	// A revoked webhook: Slack's refusal comes back, the token does not.
	props["slack.webhook"] = rc.URL + "/services/T000/B000/REVOKEDREVOKEDREVOKED1234"
	props["alert.test"] = "true"
	_, err := h.HandleError(t.Context(), alerttest.Failure(props))
	if err == nil || !strings.Contains(err.Error(), "403 Forbidden: invalid_token") || strings.Contains(err.Error(), "REVOKED") {
		t.Errorf("err = %v", err)
	}
	if strings.Contains(log.Text(), hookToken) || strings.Contains(log.Text(), "REVOKED") {
		t.Errorf("webhook token in the log:\n%s", log.Text())
	}
}

// chatPostMessage answers as Slack's chat.postMessage does: the bot token
// must match, the channel must exist.
func chatPostMessage(_ int, r alerttest.Request) alerttest.Response {
	form, _ := url.ParseQuery(string(r.Body))
	switch {
	case r.URL.Path != "/api/chat.postMessage":
		return alerttest.Response{Status: 404}
	case form.Get("token") != token && r.Header.Get("Authorization") != "Bearer "+token:
		return alerttest.Response{Body: `{"ok":false,"error":"invalid_auth"}`}
	case form.Get("channel") != "C0ALERTS":
		return alerttest.Response{Body: `{"ok":false,"error":"channel_not_found"}`}
	}
	return alerttest.Response{Body: `{"ok":true,"channel":"C0ALERTS","ts":"1795428000.000100"}`}
}

func TestBot(t *testing.T) {
	t.Parallel()
	rc := alerttest.NewReceiver(t, chatPostMessage)
	log := &alerttest.Logger{}
	h := slack.New(alert.Options{Logger: log, Now: alerttest.Now})
	props := map[string]string{"slack.token": token, "slack.channel": "C0ALERTS", "slack.apiUrl": rc.URL + "/api", "alert.suppressSeconds": "0"}
	alerttest.Send(t, h, alerttest.Failure(props))
	reqs := rc.Requests()
	if len(reqs) != 1 {
		t.Fatalf("%d requests; log:\n%s", len(reqs), log.Text())
	}
	form, err := url.ParseQuery(string(reqs[0].Body))
	if err != nil {
		t.Fatal(err)
	}
	if form.Get("text") != first {
		t.Errorf("text %q", form.Get("text"))
	}
	checkBlocks(t, []byte(form.Get("blocks")))
	if !strings.Contains(log.Text(), "a slack message has been sent successfully") {
		t.Errorf("log:\n%s", log.Text())
	}

	for name, tc := range map[string]struct{ props map[string]string }{
		"invalid_auth":      {map[string]string{"slack.token": "xoxb-9999-wrong-token-zzzzzzzz"}},
		"channel_not_found": {map[string]string{"slack.channel": "#nope"}},
	} {
		p := map[string]string{"alert.test": "true"}
		for k, v := range props {
			p[k] = v
		}
		for k, v := range tc.props {
			p[k] = v
		}
		_, err := h.HandleError(t.Context(), alerttest.Failure(p))
		if !errors.Is(err, alert.ErrSendFailed) || !strings.Contains(err.Error(), "chat.postMessage: "+name) || !strings.Contains(err.Error(), "failed after 1 attempt") {
			t.Errorf("%s: err = %v", name, err)
		}
	}
	if out := log.Text(); strings.Contains(out, token) || strings.Contains(out, "wrong-token") {
		t.Errorf("token in the log:\n%s", out)
	}
}

func TestValidate(t *testing.T) {
	t.Parallel()
	alerttest.CheckInvalid(t, slack.New(alert.Options{Logger: &alerttest.Logger{}}), map[string]alerttest.Invalid{
		"nothing":         {Props: map[string]string{}, Want: "The property `slack.webhook` is required (or `slack.token` with `slack.channel`)."},
		"token only":      {Props: map[string]string{"slack.token": token}, Want: "The property `slack.channel` is required."},
		"both":            {Props: map[string]string{"slack.token": token, "slack.channel": "C", "slack.webhook": "https://hooks.slack.com/services/x"}, Want: "not both"},
		"webhook not URL": {Props: map[string]string{"slack.webhook": "hooks.slack.com/services/T/B/" + hookToken}, Want: "The property `slack.webhook` should be an absolute http or https URL."},
		"api not URL":     {Props: map[string]string{"slack.token": token, "slack.channel": "C", "slack.apiUrl": "slack-gov.com"}, Want: "The property `slack.apiUrl` should be an absolute http or https URL."},
		"bad timeout":     {Props: map[string]string{"slack.webhook": "https://h/x", "slack.connectTimeoutMilliseconds": "fast"}, Want: "The property `slack.connectTimeoutMilliseconds` should be integer."},
	}, token, hookToken)
}

func TestConform(t *testing.T) {
	t.Parallel()
	rc := alerttest.NewReceiver(t, chatPostMessage)
	alerttest.Conform(t, slack.New(alert.Options{Logger: &alerttest.Logger{}}), []map[string]string{
		{"slack.token": token, "slack.channel": "C0ALERTS", "slack.apiUrl": rc.URL + "/api/"},
		{"slack.webhook": "https://hooks.slack.com/services/T/B/x"},
	}, nil)
}
