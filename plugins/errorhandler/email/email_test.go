package email_test

import (
	"bytes"
	"errors"
	"io"
	"maps"
	"mime"
	"mime/multipart"
	"net/mail"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ejob-io/ejob/plugins/errorhandler/alert"
	"github.com/ejob-io/ejob/plugins/errorhandler/alert/alerttest"
	"github.com/ejob-io/ejob/plugins/errorhandler/email"
	"github.com/ejob-io/ejob/spi"
)

const (
	user     = "alerts@example.com"
	password = "pa55-w0rd-s3cret"
)

func props(s *alerttest.SMTPServer, extra map[string]string) map[string]string {
	p := map[string]string{
		"email.host": s.Host, "email.port": s.Port, "email.username": user, "email.password": password,
		"email.from": "ejob <ejob@example.com>", "email.to": "ops@example.com, dev@example.com",
		"email.cc": "lead@example.com,qa@example.com", "email.bcc": "audit@example.com",
		"email.subject": "orders failed", "alert.suppressSeconds": "0",
	}
	maps.Copy(p, extra)
	return p
}

// TestSend sends through a real SMTP server in each TLS mode, with AUTH,
// and parses what the server alerttest.Mail.
func TestSend(t *testing.T) {
	t.Parallel()
	tests := map[string]struct {
		mode    alerttest.SMTPMode
		props   map[string]string
		wantTLS bool
	}{
		"plain":                  {mode: alerttest.SMTPPlain, props: map[string]string{"email.useSsl": "false"}},
		"plain, startTls off":    {mode: alerttest.SMTPStartTLS, props: map[string]string{"email.useSsl": "false", "email.startTls": "off"}},
		"implicit TLS (default)": {mode: alerttest.SMTPImplicit, props: map[string]string{"email.ssl.trust": "127.0.0.1"}, wantTLS: true},
		"STARTTLS mandatory":     {mode: alerttest.SMTPStartTLS, props: map[string]string{"email.useSsl": "false", "email.startTls": "mandatory", "email.ssl.trust": "*"}, wantTLS: true},
		"STARTTLS opportunistic": {mode: alerttest.SMTPStartTLS, props: map[string]string{"email.useSsl": "false", "email.startTls": "Opportunistic", "email.ssl.trust": "*"}, wantTLS: true},
		"opportunistic, none":    {mode: alerttest.SMTPPlain, props: map[string]string{"email.useSsl": "false", "email.startTls": "opportunistic"}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			srv := alerttest.NewSMTPServer(t, tc.mode, user, password)
			log := &alerttest.Logger{}
			h := email.New(alert.Options{Logger: log, Now: alerttest.Now})
			alerttest.Send(t, h, alerttest.Failure(props(srv, tc.props)))
			msgs := srv.Messages()
			if len(msgs) != 1 {
				t.Fatalf("server got %d messages; log:\n%s", len(msgs), log.Text())
			}
			checkMessage(t, msgs[0], tc.wantTLS)
			if !strings.Contains(log.Text(), "INFO An exception has occurred in Job 'orders', an email has been sent successfully.") {
				t.Errorf("no success line:\n%s", log.Text())
			}
		})
	}
}

func checkMessage(t *testing.T, got alerttest.Mail, wantTLS bool) {
	t.Helper()
	if got.User != user || got.TLS != wantTLS {
		t.Errorf("AUTH user %q, TLS %t; want %q, %t", got.User, got.TLS, user, wantTLS)
	}
	if got.From != "ejob@example.com" {
		t.Errorf("MAIL FROM %q", got.From)
	}
	if want := []string{"ops@example.com", "dev@example.com", "lead@example.com", "qa@example.com", "audit@example.com"}; !slices.Equal(got.To, want) {
		t.Errorf("RCPT TO %q, want %q", got.To, want)
	}
	msg, err := mail.ReadMessage(bytes.NewReader(got.Data))
	if err != nil {
		t.Fatalf("net/mail: %v\n%s", err, got.Data)
	}
	h := msg.Header
	for k, want := range map[string]string{
		"From": `"ejob" <ejob@example.com>`, "To": "<ops@example.com>, <dev@example.com>", "Cc": "<lead@example.com>, <qa@example.com>",
		"Subject": "orders failed", "X-Ejob-Job": "orders",
	} {
		if h.Get(k) != want {
			t.Errorf("header %s = %q, want %q", k, h.Get(k), want)
		}
	}
	if h.Get("Bcc") != "" || bytes.Contains(got.Data, []byte("audit@example.com")) {
		t.Errorf("the Bcc address is visible in the message:\n%s", got.Data)
	}
	if _, err := h.Date(); err != nil {
		t.Errorf("Date: %v", err)
	}
	mediaType, params, err := mime.ParseMediaType(h.Get("Content-Type"))
	if err != nil || mediaType != "multipart/alternative" {
		t.Fatalf("Content-Type %q (%v), want multipart/alternative", h.Get("Content-Type"), err)
	}
	parts := map[string]string{}
	mr := multipart.NewReader(msg.Body, params["boundary"])
	for {
		p, err := mr.NextPart()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		ct, _, _ := mime.ParseMediaType(p.Header.Get("Content-Type"))
		body, _ := io.ReadAll(p)
		parts[ct] = strings.ReplaceAll(string(body), "\r\n", "\n")
	}
	want := "Job 'orders' exception occur in job processing, caused by exit status 3 <disk & full> 'y' = z\n" +
		"\n" +
		"Job:      orders\n" +
		"Instance: 10.0.0.5@-@4242\n" +
		"Item:     2\n" +
		"Task:     orders@-@0,1,2@-@READY@-@10.0.0.5@-@4242\n" +
		"Time:     2026-11-23T10:00:00Z\n" +
		"\n" +
		"caused by *exec.ExitError: exit status 3\n"
	if parts["text/plain"] != want {
		t.Errorf("text/plain part:\n%q\nwant:\n%q", parts["text/plain"], want)
	}
	html := parts["text/html"]
	for _, w := range []string{"Job &#39;orders&#39; exception occur in job processing, caused by exit status 3 &lt;disk &amp; full&gt; &#39;y&#39; = z", "10.0.0.5@-@4242", "caused by *exec.ExitError"} {
		if !strings.Contains(html, w) {
			t.Errorf("text/html part lacks %q:\n%s", w, html)
		}
	}
}

// TestSendFailures: a wrong password, an untrusted certificate, a server
// that is down and one that hangs are each one logged send failure within
// the deadline; HandleError returns at once all the same and never
// propagates.
func TestSendFailures(t *testing.T) {
	t.Parallel()
	tests := map[string]struct {
		props        func(t *testing.T) map[string]string
		wantErr      string
		wantAttempts int
	}{
		"wrong password": {props: func(t *testing.T) map[string]string {
			s := alerttest.NewSMTPServer(t, alerttest.SMTPPlain, user, "another password")
			return props(s, map[string]string{"email.useSsl": "false"})
		}, wantErr: `535 "5.7.8 Authentication failed"`, wantAttempts: 1},
		"untrusted certificate": {props: func(t *testing.T) map[string]string {
			s := alerttest.NewSMTPServer(t, alerttest.SMTPImplicit, user, password)
			return props(s, nil)
		}, wantErr: "certificate", wantAttempts: 1},
		"STARTTLS mandatory, not offered": {props: func(t *testing.T) map[string]string {
			s := alerttest.NewSMTPServer(t, alerttest.SMTPPlain, user, password)
			return props(s, map[string]string{"email.useSsl": "false", "email.startTls": "mandatory"})
		}, wantErr: "does not support STARTTLS", wantAttempts: 1},
		"server down": {props: func(t *testing.T) map[string]string {
			return props(&alerttest.SMTPServer{Host: "127.0.0.1", Port: alerttest.ClosedPort(t)}, map[string]string{"email.useSsl": "false", "alert.timeoutSeconds": "2"})
		}, wantErr: "connection refused", wantAttempts: 2},
		"server hangs": {props: func(t *testing.T) map[string]string {
			host, port := alerttest.HangingServer(t)
			return props(&alerttest.SMTPServer{Host: host, Port: port}, map[string]string{"email.useSsl": "false", "alert.timeoutSeconds": "1"})
		}, wantErr: "gave up at the deadline, alert.timeoutSeconds=", wantAttempts: 1},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			log := &alerttest.Logger{}
			h := email.New(alert.Options{Logger: log})
			p := tc.props(t)
			start := time.Now()
			resp, err := h.HandleError(t.Context(), alerttest.Failure(p))
			if err != nil || resp.Propagate {
				t.Fatalf("HandleError = %+v, %v", resp, err)
			}
			if d := time.Since(start); d > time.Second {
				t.Errorf("HandleError took %v: it must not wait for the server", d)
			}
			if err := h.Wait(t.Context()); err != nil {
				t.Fatal(err)
			}
			if d, limit := time.Since(start), 10*time.Second; d > limit {
				t.Errorf("the failure took %v to be logged (deadline %s s)", d, p["alert.timeoutSeconds"])
			}
			out := log.Text()
			if !strings.Contains(out, "ERROR An exception has occurred in Job 'orders' but failed to send email") || !strings.Contains(out, tc.wantErr) {
				t.Errorf("log lacks the failure with %q:\n%s", tc.wantErr, out)
			}
			if tc.wantAttempts == 1 && !strings.Contains(out, "attempts 1 ") {
				t.Errorf("want one attempt:\n%s", out)
			}
			if tc.wantAttempts > 1 && strings.Contains(out, "attempts 1 ") {
				t.Errorf("want retries:\n%s", out)
			}
			if strings.Contains(out, password) {
				t.Errorf("the password is in the log:\n%s", out)
			}
			// The same through test mode: the error comes back to the caller.
			p["alert.test"] = "true"
			_, err = h.HandleError(t.Context(), alerttest.Failure(p))
			t.Logf("test-mode error: %v", err)
			if !errors.Is(err, alert.ErrSendFailed) || !strings.Contains(err.Error(), tc.wantErr) || strings.Contains(err.Error(), password) {
				t.Errorf("test-mode error = %v, want ErrSendFailed with %q", err, tc.wantErr)
			}
		})
	}
}

// TestSecretsNeverLogged: a server whose refusal quotes the password, with
// email.debug on, still leaves no trace of it, plain or base64, in any log
// line or error.
func TestSecretsNeverLogged(t *testing.T) {
	t.Parallel()
	s := alerttest.NewSMTPServer(t, alerttest.SMTPPlain, user, "the right one")
	s.SetAuthReply(func(u, p string) string { return "no such user " + u + " with password " + p })
	log := &alerttest.Logger{}
	h := email.New(alert.Options{Logger: log})
	p := props(s, map[string]string{"email.useSsl": "false", "email.debug": "true"})
	alerttest.Send(t, h, alerttest.Failure(p))
	p["alert.test"] = "true"
	_, err := h.HandleError(t.Context(), alerttest.Failure(p))
	out := log.Text() + "\n" + err.Error()
	if !strings.Contains(out, "DEBUG smtp") || !strings.Contains(out, "with password ***") {
		t.Fatalf("expected debug lines and the masked refusal:\n%s", out)
	}
	for _, leak := range []string{password, "cGE1NS13MHJkLXMzY3JldA=="} {
		if strings.Contains(out, leak) {
			t.Errorf("%q appears:\n%s", leak, out)
		}
	}
}

// TestValidate: bad props are refused with upstream's message where
// upstream has one.
func TestValidate(t *testing.T) {
	t.Parallel()
	valid := props(&alerttest.SMTPServer{Host: "smtp.example.com", Port: "465"}, nil)
	without := func(k string) map[string]string { p := maps.Clone(valid); delete(p, k); return p }
	with := func(k, v string) map[string]string { p := maps.Clone(valid); p[k] = v; return p }
	tests := map[string]alerttest.Invalid{
		"no host":            {Props: without("email.host"), Want: "The property `email.host` is required."},
		"empty host":         {Props: with("email.host", " "), Want: "The property `email.host` is required."},
		"no port":            {Props: without("email.port"), Want: "The property `email.port` is required."},
		"port not integer":   {Props: with("email.port", "smtp"), Want: "The property `email.port` should be integer."},
		"port zero":          {Props: with("email.port", "0"), Want: "The property `email.port` should be positive."},
		"port too big":       {Props: with("email.port", "70000"), Want: "The property `email.port` should be a port number (1-65535)."},
		"no username":        {Props: without("email.username"), Want: "The property `email.username` is required."},
		"no password":        {Props: without("email.password"), Want: "The property `email.password` is required."},
		"username only":      {Props: with("email.password", ""), Want: "should both be set, or both be empty"},
		"no from":            {Props: without("email.from"), Want: "The property `email.from` is required."},
		"bad from":           {Props: with("email.from", "not an address"), Want: "The property `email.from` should be an email address"},
		"no to":              {Props: without("email.to"), Want: "The property `email.to` is required."},
		"bad cc":             {Props: with("email.cc", "a@example.com,,b at example"), Want: "The property `email.cc` should be a comma-separated list"},
		"useSsl not boolean": {Props: with("email.useSsl", "yes"), Want: "The property `email.useSsl` should be true or false."},
		"debug not boolean":  {Props: with("email.debug", "1"), Want: "The property `email.debug` should be true or false."},
		"unknown startTls":   {Props: with("email.startTls", "always"), Want: "The property `email.startTls` should be one of off, opportunistic, mandatory."},
		"startTls with ssl":  {Props: with("email.startTls", "mandatory"), Want: "applies only when `email.useSsl` is false"},
		"bad suppress":       {Props: with("alert.suppressSeconds", "soon"), Want: "The property `alert.suppressSeconds` should be integer."},
	}
	h := email.New(alert.Options{Logger: &alerttest.Logger{}})
	alerttest.CheckInvalid(t, h, tests, password)
	for _, ok := range []map[string]string{
		valid,
		with("email.port", "+587"),
		with("email.username", ""), // both empty: no AUTH
		with("email.useSsl", "FALSE"),
	} {
		if ok["email.username"] == "" {
			ok["email.password"] = ""
		}
		if err := h.Validate(t.Context(), spi.ValidatePropsRequest{JobName: "orders", Props: ok}); err != nil {
			t.Errorf("Validate(%v) = %v", ok, err)
		}
	}
}

// TestNoAuth: with username and password empty, no AUTH is attempted.
func TestNoAuth(t *testing.T) {
	t.Parallel()
	s := alerttest.NewSMTPServer(t, alerttest.SMTPPlain, "", "")
	h := email.New(alert.Options{Logger: &alerttest.Logger{}})
	p := props(s, map[string]string{"email.useSsl": "false", "email.username": "", "email.password": "", "alert.test": "true"})
	if _, err := h.HandleError(t.Context(), alerttest.Failure(p)); err != nil {
		t.Fatal(err)
	}
	msgs := s.Messages()
	if len(msgs) != 1 || msgs[0].User != "" {
		t.Fatalf("got %+v", msgs)
	}
	m, err := mail.ReadMessage(bytes.NewReader(msgs[0].Data))
	if err != nil {
		t.Fatal(err)
	}
	if got := m.Header.Get("Subject"); got != "[test] orders failed" {
		t.Errorf("test alert subject %q", got)
	}
}

func TestConform(t *testing.T) {
	t.Parallel()
	s := alerttest.NewSMTPServer(t, alerttest.SMTPPlain, user, password)
	alerttest.Conform(t, email.New(alert.Options{Logger: &alerttest.Logger{}}),
		[]map[string]string{props(s, map[string]string{"email.useSsl": "false"})},
		map[string]map[string]string{"no to": {"email.host": "h", "email.port": "25", "email.username": "", "email.password": "", "email.from": "a@b.c"}})
	if len(s.Messages()) == 0 {
		t.Error("no message reached the server")
	}
}
