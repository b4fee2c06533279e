package cli_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ejob-io/ejob/host/cli"
	"github.com/ejob-io/ejob/plugins/errorhandler/alert/alerttest"
	"github.com/ejob-io/ejob/plugins/errorhandler/webhook"
)

func writeFile(t *testing.T, content string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "ejob.yaml")
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// job is a SCRIPT job entry of a config file with an error handler and
// its props (indented for elasticjob.jobs).
func job(name, cron, handler string, props map[string]string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "    %s:\n      elasticJobType: SCRIPT\n      cron: %q\n      shardingTotalCount: 1\n      jobErrorHandlerType: %s\n      props:\n", name, cron, handler)
	fmt.Fprintf(&b, "        script.command.line: /bin/sh -c 'exit 3'\n")
	for k, v := range props {
		fmt.Fprintf(&b, "        %s: %q\n", k, v)
	}
	return b.String()
}

// TestAlertTest runs `ejob alert test` against real receivers: a webhook
// that accepts, an SMTP server that refuses the password, and jobs whose
// handler sends nothing or that do not exist.
func TestAlertTest(t *testing.T) {
	t.Parallel()
	rc := alerttest.NewReceiver(t, alerttest.Always(alerttest.Response{Status: 202}))
	smtp := alerttest.NewSMTPServer(t, alerttest.SMTPPlain, "ops", "the right password")
	const wrong = "wrong-Pa55word"
	file := writeFile(t, "elasticjob:\n  jobs:\n"+
		job("hook", "0 0 0 * * ?", "webhook", map[string]string{"webhook.url": rc.URL + "/ejob?token=abcdef"})+
		job("mail", "0 0 0 * * ?", "EMAIL", map[string]string{"email.host": smtp.Host, "email.port": smtp.Port, "email.username": "ops",
			"email.password": wrong, "email.from": "ejob@example.com", "email.to": "ops@example.com", "email.useSsl": "false"})+
		job("logged", "0 0 0 * * ?", "LOG", nil))

	tests := map[string]struct {
		args              []string
		code              int
		wantOut, wantErr  string
		wantErr2          string
		forbidden         string
		wantWebhookAlerts int
	}{
		"sent": {args: []string{"hook"}, wantOut: `job "hook": test alert sent through WEBHOOK in `, wantWebhookAlerts: 1},
		"refused": {args: []string{"mail"}, code: 1,
			wantErr:  `alert not sent: email to ` + smtp.Host + ":" + smtp.Port + ` failed after 1 attempt(s): dial failed: SMTP AUTH failed: 535 "5.7.8 Authentication failed"`,
			wantErr2: `job "mail": EMAIL did not deliver the test alert: `, forbidden: wrong},
		"handler sends nothing": {args: []string{"logged"}, code: 1, wantErr: `job "logged" uses the error handler LOG, which sends no alert`},
		"no such job":           {args: []string{"nope"}, code: 1, wantErr: `has no job "nope" (its jobs: hook, logged, mail)`},
		"no job named":          {args: nil, code: 2, wantErr: "want one job name, got 0 arguments"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			code, out, errOut := run(t, append([]string{"alert", "test", "-c", file}, tc.args...)...)
			if code != tc.code || !strings.Contains(out, tc.wantOut) || !strings.Contains(errOut, tc.wantErr) || !strings.Contains(errOut, tc.wantErr2) {
				t.Errorf("exit %d (want %d)\nstdout: %s\nstderr: %s\nwant stdout %q, stderr %q", code, tc.code, out, errOut, tc.wantOut, tc.wantErr)
			}
			if tc.forbidden != "" && strings.Contains(out+errOut, tc.forbidden) {
				t.Errorf("%q printed:\n%s%s", tc.forbidden, out, errOut)
			}
		})
	}
	reqs := rc.Requests()
	if len(reqs) != 1 {
		t.Fatalf("the webhook got %d requests, want 1", len(reqs))
	}
	var p webhook.Payload
	if err := json.Unmarshal(reqs[0].Body, &p); err != nil {
		t.Fatal(err)
	}
	if !p.Test || p.Job != "hook" || p.Error.Message != cli.TestAlertMessage || p.Item != nil {
		t.Errorf("payload %+v", p)
	}
}

// TestBadAlertPropsRejected: a bad error-handler prop stops `ejob run` and
// `ejob alert test` at load, with the file, the prop's line and upstream's
// message.
func TestBadAlertPropsRejected(t *testing.T) {
	t.Parallel()
	file := writeFile(t, `elasticjob:
  jobs:
    mail:
      elasticJobType: SCRIPT
      cron: 0 0 0 * * ?
      shardingTotalCount: 1
      jobErrorHandlerType: EMAIL
      props:
        script.command.line: /bin/true
        email.host: smtp.example.com
        email.port: smtps
        email.username: ops
        email.password: secret-password-value
        email.from: ejob@example.com
        email.to: ops@example.com
`)
	where := file + ":11: elasticjob.jobs.mail.props: invalid for error handler type EMAIL: "
	want := "invalid config: The property `email.port` should be integer."
	for _, args := range [][]string{{"run", "-c", file}, {"alert", "test", "-c", file, "mail"}} {
		code, out, errOut := run(t, args...)
		if code != 1 || !strings.Contains(errOut, where) || !strings.Contains(errOut, want) || strings.Contains(out+errOut, "secret-password-value") {
			t.Errorf("%v: exit %d\nstderr: %s\nwant %q", args, code, errOut, want)
		}
	}
}

// syncBuffer is a bytes.Buffer safe for a writer and a reader at once.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestSecretsStayOutOfTheLog runs a host (`ejob run`) with five failing
// jobs, one per alerting handler, each configured with secrets and sending
// to a receiver that refuses and quotes back what it was sent. Once every
// handler has logged its send failure, no secret appears anywhere in what
// the host printed. The SMTP password comes from the environment
// (${EJOB_TEST_SMTP_PASSWORD}), so it is not in the file either.
func TestSecretsStayOutOfTheLog(t *testing.T) {
	secrets := map[string]string{
		"smtp":        "smtp-S3cret-pass-0001",
		"wechat key":  "wechat-key-S3cret-0002",
		"ding token":  "ding-access-token-S3cret-0003",
		"ding secret": "SEC-ding-S3cret-0004",
		"slack token": "xoxb-1111-2222-S3cretSlackToken0005",
		"hook token":  "hook-query-token-S3cret-0006",
		"hook secret": "whsec-S3cret-0007",
		"hook header": "bearer-S3cret-header-0008",
	}
	t.Setenv("EJOB_TEST_SMTP_PASSWORD", secrets["smtp"])
	// Every receiver refuses, quoting the request back.
	echo := func(_ int, r alerttest.Request) alerttest.Response {
		return alerttest.Response{Status: 401, Body: fmt.Sprintf("refused %s %v %s", r.URL, r.Header, r.Body)}
	}
	smtp := alerttest.NewSMTPServer(t, alerttest.SMTPPlain, "ops", "another")
	smtp.SetAuthReply(func(u, p string) string { return "bad password " + p + " for " + u })
	wechat := alerttest.NewReceiver(t, func(_ int, r alerttest.Request) alerttest.Response {
		return alerttest.Response{Body: `{"errcode":93000,"errmsg":"invalid webhook url ` + r.URL.String() + `"}`}
	})
	ding, hook := alerttest.NewReceiver(t, echo), alerttest.NewReceiver(t, echo)
	slack := alerttest.NewReceiver(t, func(_ int, r alerttest.Request) alerttest.Response {
		return alerttest.Response{Body: `{"ok":false,"error":"invalid_auth for ` + strings.ReplaceAll(string(r.Body), `"`, `'`) + `"}`}
	})
	every := "0/1 * * * * ?"
	file := writeFile(t, "elasticjob:\n  jobs:\n"+
		job("viaEmail", every, "EMAIL", map[string]string{"email.host": smtp.Host, "email.port": smtp.Port, "email.username": "ops",
			"email.password": "${EJOB_TEST_SMTP_PASSWORD}", "email.from": "ejob@example.com", "email.to": "ops@example.com",
			"email.useSsl": "false", "email.debug": "true"})+
		job("viaWechat", every, "WECHAT", map[string]string{"wechat.webhook": wechat.URL + "/cgi-bin/webhook/send?key=" + secrets["wechat key"]})+
		job("viaDingtalk", every, "DINGTALK", map[string]string{"dingtalk.webhook": ding.URL + "/robot/send?access_token=" + secrets["ding token"],
			"dingtalk.secret": secrets["ding secret"]})+
		job("viaSlack", every, "SLACK", map[string]string{"slack.token": secrets["slack token"], "slack.channel": "C1", "slack.apiUrl": slack.URL + "/api/"})+
		job("viaWebhook", every, "WEBHOOK", map[string]string{"webhook.url": hook.URL + "/hook?token=" + secrets["hook token"],
			"webhook.secret": secrets["hook secret"], "webhook.headers.Authorization": "Bearer " + secrets["hook header"]}))
	if data, _ := os.ReadFile(file); strings.Contains(string(data), secrets["smtp"]) {
		t.Fatal("the SMTP password is in the file")
	}

	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	var out, errOut syncBuffer
	done := make(chan int, 1)
	go func() { done <- cli.Main(ctx, []string{"run", "-c", file, "--log-level", "debug"}, &out, &errOut) }()
	want := []string{"failed to send email", "failed to send wechat message", "failed to send dingtalk message",
		"failed to send slack message", "failed to send webhook request"}
	for {
		missing := ""
		for _, w := range want {
			if !strings.Contains(errOut.String(), w) {
				missing = w
				break
			}
		}
		if missing == "" {
			break
		}
		select {
		case code := <-done:
			t.Fatalf("ejob run exited %d before %q was logged:\n%s", code, missing, errOut.String())
		case <-ctx.Done():
			t.Fatalf("%q not logged:\n%s", missing, errOut.String())
		case <-time.After(50 * time.Millisecond): // poll the log
		}
	}
	cancel()
	if code := <-done; code != 0 {
		t.Errorf("ejob run exited %d", code)
	}
	all := out.String() + errOut.String()
	for name, s := range secrets {
		if strings.Contains(all, s) {
			t.Errorf("the %s (%q) appears in the host's output", name, s)
		}
	}
	// The receivers did quote the secrets back: the masking was needed.
	if !strings.Contains(all, "bad password *** for ops") || !strings.Contains(all, "invalid_auth for") {
		t.Errorf("the refusals are not in the log:\n%s", all)
	}
	if t.Failed() {
		t.Logf("host output:\n%s", all)
	}
}
