package alert_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ejob-io/ejob/plugins/errorhandler/alert"
	"github.com/ejob-io/ejob/plugins/errorhandler/alert/alerttest"
	"github.com/ejob-io/ejob/spi"
)

var t0 = time.Date(2026, 11, 23, 10, 0, 0, 0, time.UTC)

func TestMessageText(t *testing.T) {
	t.Parallel()
	tests := map[string]struct {
		m    alert.Message
		want string
	}{
		"item failure": {
			m: alert.Message{JobName: "orders", InstanceID: "10.0.0.5@-@4242", TaskID: "orders@-@0,1,2@-@READY@-@10.0.0.5@-@4242",
				Item: 2, Time: t0, Error: spi.JobError{Message: "exit status 1", Detail: "caused by *exec.ExitError: exit status 1\n"}},
			want: "Job 'orders' exception occur in job processing, caused by exit status 1\n" +
				"\n" +
				"Job:      orders\n" +
				"Instance: 10.0.0.5@-@4242\n" +
				"Item:     2\n" +
				"Task:     orders@-@0,1,2@-@READY@-@10.0.0.5@-@4242\n" +
				"Time:     2026-11-23T10:00:00Z\n" +
				"\n" +
				"caused by *exec.ExitError: exit status 1\n",
		},
		"multi-line error outside an item, suppressed count": {
			m: alert.Message{JobName: "j", InstanceID: "i", Item: -1, Time: t0, Error: spi.JobError{Message: "line one\nline two\n"},
				Suppressed: 7, Previous: t0.Add(-time.Minute), Window: 300 * time.Second},
			want: "Job 'j' exception occur in job processing, caused by line one\n" +
				"line two\n" +
				"\n" +
				"7 more failure(s) of job 'j' since the previous alert (2026-11-23T09:59:00Z) were not sent (alert.suppressSeconds=300).\n" +
				"\n" +
				"Job:      j\n" +
				"Instance: i\n" +
				"Item:     none (not tied to an item)\n" +
				"Time:     2026-11-23T10:00:00Z\n",
		},
		"test digest": {
			m: alert.Message{JobName: "j", InstanceID: "i", Item: 0, Time: t0, Error: spi.JobError{Message: "boom"},
				Suppressed: 49, Previous: t0.Add(-time.Second), Window: time.Second, Digest: true, Test: true},
			want: "Job 'j' exception occur in job processing, caused by boom\n" +
				"\n" + alert.TestNotice + "\n" +
				"\n" +
				"49 failure(s) of job 'j' since the previous alert (2026-11-23T09:59:59Z) were not sent one by one (alert.suppressSeconds=1); this is the latest of them.\n" +
				"\n" +
				"Job:      j\n" +
				"Instance: i\n" +
				"Item:     0\n" +
				"Time:     2026-11-23T10:00:00Z\n",
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			if got := tc.m.Text(); got != tc.want {
				t.Errorf("Text():\n%s\nwant:\n%s", got, tc.want)
			}
		})
	}
}

func TestProps(t *testing.T) {
	t.Parallel()
	tests := map[string]struct {
		props map[string]string
		want  alert.Settings
		err   string
	}{
		"defaults":          {props: nil, want: alert.Settings{Suppress: 300 * time.Second, Timeout: 20 * time.Second}},
		"set":               {props: map[string]string{"alert.suppressSeconds": "0", "alert.timeoutSeconds": "+5", "alert.test": "TRUE"}, want: alert.Settings{Timeout: 5 * time.Second, Test: true}},
		"suppress negative": {props: map[string]string{"alert.suppressSeconds": "-1"}, err: "The property `alert.suppressSeconds` should be at least 0."},
		"timeout zero":      {props: map[string]string{"alert.timeoutSeconds": "0"}, err: "The property `alert.timeoutSeconds` should be positive."},
		"timeout word":      {props: map[string]string{"alert.timeoutSeconds": "ten"}, err: "The property `alert.timeoutSeconds` should be integer."},
		"timeout too big":   {props: map[string]string{"alert.timeoutSeconds": "3000000000"}, err: "should be integer."},
		"test not a bool":   {props: map[string]string{"alert.test": "yes"}, err: "The property `alert.test` should be true or false."},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			got, err := alert.ParseSettings(tc.props)
			if tc.err != "" {
				if !errors.Is(err, spi.ErrInvalidConfig) || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err = %v, want ErrInvalidConfig with %q", err, tc.err)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("got %+v, %v; want %+v", got, err, tc.want)
			}
		})
	}
}

func TestMasker(t *testing.T) {
	t.Parallel()
	props := map[string]string{
		"x.password":       "s3cr3t pass",
		"x.headers.Auth":   "Bearer tok-0123456789",
		"x.url":            "https://user:pw@hooks.example.com/services/T000/B000/abcdefghijklmnopqrstuvwx?key=k%2Fey&access_token=AT123#frag",
		"x.plain":          "not secret",
		"x.empty.password": "",
	}
	m := alert.NewMasker(props, []string{"x.password", "x.headers.", "x.empty.password"}, []string{"x.url"})
	for _, leak := range []string{
		"s3cr3t pass", "s3cr3t+pass", "s3cr3t%20pass", "czNjcjN0IHBhc3M=", // whole, escaped, base64
		"tok-0123456789", "Bearer tok-0123456789",
		props["x.url"], "pw", "abcdefghijklmnopqrstuvwx", "k/ey", "k%2Fey", "AT123", "frag",
	} {
		got := m.Scrub("before " + leak + " after")
		if strings.Contains(got, leak) || !strings.Contains(got, alert.Mask) {
			t.Errorf("Scrub(%q) = %q", leak, got)
		}
	}
	if got := m.Scrub("not secret, services, hooks.example.com"); got != "not secret, services, hooks.example.com" {
		t.Errorf("Scrub masked what is not secret: %q", got)
	}
	var none *alert.Masker
	if none.Scrub("a") != "a" {
		t.Error("nil Masker changed text")
	}
}

func TestRedactURL(t *testing.T) {
	t.Parallel()
	tests := map[string]string{
		"https://qyapi.weixin.qq.com/cgi-bin/webhook/send?key=693a91f6-7xxx":  "https://qyapi.weixin.qq.com/cgi-bin/webhook/send?key=***",
		"https://oapi.dingtalk.com/robot/send?access_token=abc&x=1":           "https://oapi.dingtalk.com/robot/send?access_token=***&x=***",
		"https://hooks.slack.com/services/T000/B000/XXXXXXXXXXXXXXXXXXXXXXXX": "https://hooks.slack.com/services/T000/B000/***",
		"http://u:p@127.0.0.1:8080/hook#f":                                    "http://***@127.0.0.1:8080/hook#***",
		"%zz?token=s3cret":                                                    "***",
	}
	for in, want := range tests {
		if got := alert.RedactURL(in); got != want {
			t.Errorf("RedactURL(%q) = %q, want %q", in, got, want)
		}
	}
}

// funcSender is a Sender made of a function: the collaborator the queue
// tests control (block, fail, panic).
type funcSender func(ctx context.Context, m alert.Message) error

func (f funcSender) Send(ctx context.Context, m alert.Message) error { return f(ctx, m) }
func (funcSender) Target() string                                    { return "test-target" }

func testChannel(send funcSender) alert.Channel {
	return alert.Channel{
		Type: "TEST", Noun: "test alert", SecretProps: []string{"test.secret"},
		Parse: func(props map[string]string, _ alert.Env) (alert.Sender, error) {
			if _, err := alert.Required(props, "test.to"); err != nil {
				return nil, err
			}
			return send, nil
		},
	}
}

func failure(job string, props map[string]string) spi.HandleErrorRequest {
	return spi.HandleErrorRequest{JobName: job, InstanceID: "i", ShardingItem: 1, Props: props, Error: spi.JobError{Message: "boom"}}
}

// TestQueue: with the receiver stuck, HandleError still returns at once;
// beyond the queue an alert is dropped with a count and a WARN line; Wait
// waits for the sends in flight.
func TestQueue(t *testing.T) {
	t.Parallel()
	started, release := make(chan struct{}, 10), make(chan struct{})
	var mu sync.Mutex
	var sent []alert.Message
	log := &alerttest.Logger{}
	h := alert.New(testChannel(func(ctx context.Context, m alert.Message) error {
		started <- struct{}{}
		<-release
		mu.Lock()
		defer mu.Unlock()
		sent = append(sent, m)
		return nil
	}), alert.Options{Logger: log, QueueSize: 1, Workers: 1})
	props := map[string]string{"test.to": "x", "alert.suppressSeconds": "0"}
	handle := func() {
		t.Helper()
		resp, err := h.HandleError(t.Context(), failure("j", props))
		if err != nil || resp.Propagate {
			t.Fatalf("HandleError = %+v, %v", resp, err)
		}
	}
	handle()
	<-started // the worker holds the first
	handle()  // queued
	handle()  // dropped
	if got := h.Dropped(); got != 1 {
		t.Errorf("Dropped() = %d, want 1", got)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
	defer cancel()
	if err := h.Wait(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Wait with a send stuck = %v, want the deadline", err)
	}
	close(release)
	if err := h.Wait(t.Context()); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(sent) != 2 {
		t.Fatalf("sent %d alerts, want 2", len(sent))
	}
	if !strings.Contains(log.Text(), "WARN An exception has occurred in Job 'j' but the test alert queue is full") {
		t.Errorf("no WARN line for the drop:\n%s", log.Text())
	}
}

// TestRetries: transient failures are retried with backoff up to
// MaxAttempts, a permanent one is not, a panic is a failure; each is
// logged once with the attempts, and test mode returns the error.
func TestRetries(t *testing.T) {
	t.Parallel()
	tests := map[string]struct {
		fail         func(attempt int) error
		wantAttempts int
		wantErr      string
	}{
		"transient then ok": {fail: func(n int) error {
			if n < 3 {
				return alert.Transient(errors.New("connection refused"))
			}
			return nil
		}, wantAttempts: 3},
		"always transient": {fail: func(int) error { return alert.Transient(errors.New("503")) }, wantAttempts: alert.MaxAttempts, wantErr: "503"},
		"permanent":        {fail: func(int) error { return errors.New("535 authentication failed") }, wantAttempts: 1, wantErr: "535 authentication failed"},
		"panic":            {fail: func(int) error { panic("bug") }, wantAttempts: 1, wantErr: "panic while sending: bug"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			var mu sync.Mutex
			attempts := 0
			log := &alerttest.Logger{}
			h := alert.New(testChannel(func(ctx context.Context, m alert.Message) error {
				mu.Lock()
				attempts++
				n := attempts
				mu.Unlock()
				return tc.fail(n)
			}), alert.Options{Logger: log})
			_, err := h.HandleError(t.Context(), failure("j", map[string]string{"test.to": "x", "alert.test": "true"}))
			if tc.wantErr == "" && err != nil || tc.wantErr != "" && (!errors.Is(err, alert.ErrSendFailed) || !strings.Contains(err.Error(), tc.wantErr)) {
				t.Fatalf("HandleError error = %v, want %q", err, tc.wantErr)
			}
			if attempts != tc.wantAttempts {
				t.Errorf("%d attempts, want %d", attempts, tc.wantAttempts)
			}
			if want := fmt.Sprintf("attempts %d", tc.wantAttempts); !strings.Contains(log.Text(), want) {
				t.Errorf("log lacks %q:\n%s", want, log.Text())
			}
		})
	}
}

// TestDeadlineStopsRetries: retries never outlive alert.timeoutSeconds.
func TestDeadlineStopsRetries(t *testing.T) {
	t.Parallel()
	log := &alerttest.Logger{}
	h := alert.New(testChannel(func(ctx context.Context, m alert.Message) error {
		<-ctx.Done()
		return alert.Transient(ctx.Err())
	}), alert.Options{Logger: log})
	start := time.Now()
	_, err := h.HandleError(t.Context(), failure("j", map[string]string{"test.to": "x", "alert.test": "true", "alert.timeoutSeconds": "1"}))
	if err == nil || !strings.Contains(err.Error(), "failed after 1 attempt(s)") || !strings.Contains(err.Error(), "gave up at the deadline, alert.timeoutSeconds=1") {
		t.Fatalf("err = %v", err)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("took %v", d)
	}
}

// TestInvalidPropsAtRuntime: props that Validate would refuse make
// HandleError return the config error (nothing is queued), and log it.
func TestInvalidPropsAtRuntime(t *testing.T) {
	t.Parallel()
	log := &alerttest.Logger{}
	h := alert.New(testChannel(func(context.Context, alert.Message) error { panic("not sent") }), alert.Options{Logger: log})
	_, err := h.HandleError(t.Context(), failure("j", map[string]string{"test.secret": "hunter2-hunter2"}))
	if !errors.Is(err, spi.ErrInvalidConfig) || !strings.Contains(err.Error(), "The property `test.to` is required.") {
		t.Fatalf("err = %v", err)
	}
	if err := h.Validate(t.Context(), spi.ValidatePropsRequest{Props: map[string]string{"test.to": "x", "alert.suppressSeconds": "x"}}); !errors.Is(err, spi.ErrInvalidConfig) {
		t.Errorf("Validate = %v", err)
	}
	if !strings.Contains(log.Text(), "ERROR An exception has occurred in Job 'j' but no test alert can be sent: invalid props") || strings.Contains(log.Text(), "hunter2") {
		t.Errorf("log:\n%s", log.Text())
	}
}

// TestDroppedAlertIsCounted: an alert dropped by a full queue is counted
// in the job's digest at the end of its window.
func TestDroppedAlertIsCounted(t *testing.T) {
	t.Parallel()
	started, release := make(chan struct{}, 10), make(chan struct{})
	sent := make(chan alert.Message, 10)
	h := alert.New(testChannel(func(ctx context.Context, m alert.Message) error {
		started <- struct{}{}
		<-release
		sent <- m
		return nil
	}), alert.Options{Logger: &alerttest.Logger{}, QueueSize: 1, Workers: 1})
	props := map[string]string{"test.to": "x", "alert.suppressSeconds": "1"}
	for _, job := range []string{"a", "b", "c"} {
		if _, err := h.HandleError(t.Context(), failure(job, props)); err != nil {
			t.Fatal(err)
		}
		if job == "a" {
			<-started
		}
	}
	close(release)
	got := map[string]alert.Message{}
	for len(got) < 3 {
		select {
		case m := <-sent:
			got[m.JobName+fmt.Sprint(m.Digest)] = m
		case <-time.After(30 * time.Second):
			t.Fatalf("got %v", got)
		}
	}
	if d, ok := got["ctrue"]; !ok || d.Suppressed != 1 {
		t.Errorf("digest for the dropped alert: %+v (all: %v)", d, got)
	}
	if h.Dropped() != 1 {
		t.Errorf("Dropped() = %d", h.Dropped())
	}
}
