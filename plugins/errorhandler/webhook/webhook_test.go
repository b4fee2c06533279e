package webhook_test

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/ejob-io/ejob/plugins/errorhandler/alert"
	"github.com/ejob-io/ejob/plugins/errorhandler/alert/alerttest"
	"github.com/ejob-io/ejob/plugins/errorhandler/webhook"
)

const (
	secret = "whsec-0123456789-abcdef"
	bearer = "Bearer tok-abcdefghijklmnop"
)

// TestPayload: the body is schema version 1, field by field; headers from
// webhook.headers.* arrive; the signature verifies with the secret as a
// receiver computes it.
func TestPayload(t *testing.T) {
	t.Parallel()
	rc := alerttest.NewReceiver(t, alerttest.Always(alerttest.Response{Status: 204}))
	log := &alerttest.Logger{}
	h := webhook.New(alert.Options{Logger: log, Now: alerttest.Now})
	props := map[string]string{"webhook.url": rc.URL + "/hooks/ejob?tenant=42", "webhook.secret": secret,
		"webhook.headers.Authorization": bearer, "webhook.headers.x-team": "payments", "alert.suppressSeconds": "0"}
	alerttest.Send(t, h, alerttest.Failure(props))
	reqs := rc.Requests()
	if len(reqs) != 1 {
		t.Fatalf("%d requests; log:\n%s", len(reqs), log.Text())
	}
	r := reqs[0]
	var got map[string]any
	if err := json.Unmarshal(r.Body, &got); err != nil {
		t.Fatalf("%v: %s", err, r.Body)
	}
	want := map[string]any{
		"version": 1.0, "event": "job.failure", "test": false,
		"summary": "Job 'orders' exception occur in job processing, caused by exit status 3 <disk & full> 'y' = z",
		"text": "Job 'orders' exception occur in job processing, caused by exit status 3 <disk & full> 'y' = z\n\nJob:      orders\nInstance: 10.0.0.5@-@4242\nItem:     2\n" +
			"Task:     orders@-@0,1,2@-@READY@-@10.0.0.5@-@4242\nTime:     2026-11-23T10:00:00Z\n\ncaused by *exec.ExitError: exit status 3\n",
		"job": "orders", "instance": "10.0.0.5@-@4242", "taskId": "orders@-@0,1,2@-@READY@-@10.0.0.5@-@4242", "item": 2.0,
		"error":      map[string]any{"message": "exit status 3 <disk & full> 'y' = z", "detail": "caused by *exec.ExitError: exit status 3\n"},
		"time":       "2026-11-23T10:00:00Z",
		"suppressed": 0.0, "previousAlert": nil, "digest": false, "suppressSeconds": 0.0,
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("payload\n%v\nwant\n%v", got, want)
	}
	for k, v := range map[string]string{"Content-Type": "application/json", "Authorization": bearer, "X-Team": "payments",
		"X-Ejob-Event": "job.failure", "X-Ejob-Timestamp": "1795428000", "User-Agent": "ejob-alert/1"} {
		if r.Header.Get(k) != v {
			t.Errorf("header %s = %q, want %q", k, r.Header.Get(k), v)
		}
	}
	// What a receiver does: HMAC-SHA256(secret, timestamp + "." + body).
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write([]byte(r.Header.Get("X-Ejob-Timestamp") + "." + string(r.Body)))
	if want := "sha256=" + hex.EncodeToString(mac.Sum(nil)); r.Header.Get("X-Ejob-Signature") != want {
		t.Errorf("signature %q, want %q", r.Header.Get("X-Ejob-Signature"), want)
	}
	if !webhook.Verify(secret, r.Header.Get("X-Ejob-Timestamp"), r.Header.Get("X-Ejob-Signature"), r.Body) {
		t.Error("Verify refuses a genuine request")
	}
	if webhook.Verify("other", r.Header.Get("X-Ejob-Timestamp"), r.Header.Get("X-Ejob-Signature"), r.Body) ||
		webhook.Verify(secret, "1795428001", r.Header.Get("X-Ejob-Signature"), r.Body) ||
		webhook.Verify(secret, r.Header.Get("X-Ejob-Timestamp"), r.Header.Get("X-Ejob-Signature"), append(r.Body, ' ')) {
		t.Error("Verify accepts a forged request")
	}
	if out := log.Text(); strings.Contains(out, secret) || strings.Contains(out, "tok-abcdefghijklmnop") {
		t.Errorf("secrets in the log:\n%s", out)
	}
}

// TestNoSecretNoSignature: without webhook.secret there is no signature
// header; a test alert says so in the payload; an item-less failure has
// item null.
func TestNoSecretNoSignature(t *testing.T) {
	t.Parallel()
	rc := alerttest.NewReceiver(t, alerttest.Always(alerttest.Response{}))
	h := webhook.New(alert.Options{Logger: &alerttest.Logger{}})
	req := alerttest.Failure(map[string]string{"webhook.url": rc.URL, "alert.test": "true"})
	req.ShardingItem, req.TaskID = -1, ""
	if _, err := h.HandleError(t.Context(), req); err != nil {
		t.Fatal(err)
	}
	r := rc.Requests()[0]
	var p webhook.Payload
	if err := json.Unmarshal(r.Body, &p); err != nil {
		t.Fatal(err)
	}
	if r.Header.Get("X-Ejob-Signature") != "" || !p.Test || p.Item != nil || !strings.Contains(p.Text, alert.TestNotice) {
		t.Errorf("signature %q, payload %+v", r.Header.Get("X-Ejob-Signature"), p)
	}
}

// TestStatuses: 2xx is success; 4xx is refused at once; a 5xx is retried
// and the alert arrives when the receiver recovers.
func TestStatuses(t *testing.T) {
	t.Parallel()
	tests := map[string]struct {
		respond  func(n int, r alerttest.Request) alerttest.Response
		wantErr  string
		wantReqs int
	}{
		"200": {respond: alerttest.Always(alerttest.Response{}), wantReqs: 1},
		"401": {respond: alerttest.Always(alerttest.Response{Status: 401, Body: `{"error":"bad token"}`}),
			wantErr: `unexpected http response status: 401 Unauthorized: {"error":"bad token"}`, wantReqs: 1},
		"redirect not followed": {respond: alerttest.Always(alerttest.Response{Status: 302}), wantErr: "302 Found", wantReqs: 1},
		"503 then 200": {respond: func(n int, _ alerttest.Request) alerttest.Response {
			if n == 1 {
				return alerttest.Response{Status: 503}
			}
			return alerttest.Response{}
		}, wantReqs: 2},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			rc := alerttest.NewReceiver(t, tc.respond)
			h := webhook.New(alert.Options{Logger: &alerttest.Logger{}})
			_, err := h.HandleError(t.Context(), alerttest.Failure(map[string]string{"webhook.url": rc.URL, "alert.test": "true"}))
			if tc.wantErr == "" && err != nil || tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)) {
				t.Errorf("err = %v, want %q", err, tc.wantErr)
			}
			if n := len(rc.Requests()); n != tc.wantReqs {
				t.Errorf("%d requests, want %d", n, tc.wantReqs)
			}
		})
	}
}

// TestSuppression: 50 failures in a row give one alert at once and, when
// the window ends, one digest with the 49 others counted.
func TestSuppression(t *testing.T) {
	t.Parallel()
	rc := alerttest.NewReceiver(t, alerttest.Always(alerttest.Response{}))
	log := &alerttest.Logger{}
	h := webhook.New(alert.Options{Logger: log})
	props := map[string]string{"webhook.url": rc.URL, "alert.suppressSeconds": "1"}
	for i := range 50 {
		req := alerttest.Failure(props)
		req.Error.Message = "failure " + string(rune('A'+i%26))
		if _, err := h.HandleError(t.Context(), req); err != nil {
			t.Fatal(err)
		}
	}
	reqs, err := rc.WaitFor(t.Context(), 2)
	if err != nil {
		t.Fatalf("%v; log:\n%s", err, log.Text())
	}
	if err := h.Wait(t.Context()); err != nil {
		t.Fatal(err)
	}
	if n := len(rc.Requests()); n != 2 {
		t.Fatalf("%d alerts, want 2", n)
	}
	var first, digest webhook.Payload
	if err := errors.Join(json.Unmarshal(reqs[0].Body, &first), json.Unmarshal(reqs[1].Body, &digest)); err != nil {
		t.Fatal(err)
	}
	if first.Suppressed != 0 || first.Digest || first.Error.Message != "failure A" {
		t.Errorf("first alert %+v", first)
	}
	if digest.Suppressed != 49 || !digest.Digest || digest.Error.Message != "failure X" || digest.PreviousAlert == nil || digest.SuppressSeconds != 1 ||
		!strings.Contains(digest.Text, "49 failure(s) of job 'orders' since the previous alert") {
		t.Errorf("digest %+v", digest)
	}
	if d := digest.PreviousAlert.Sub(first.Time); d < 0 || d > time.Second {
		t.Errorf("previousAlert %v, first alert %v", digest.PreviousAlert, first.Time)
	}
}

func TestValidate(t *testing.T) {
	t.Parallel()
	alerttest.CheckInvalid(t, webhook.New(alert.Options{Logger: &alerttest.Logger{}}), map[string]alerttest.Invalid{
		"no url":            {Props: map[string]string{"webhook.secret": secret}, Want: "The property `webhook.url` is required."},
		"url not a URL":     {Props: map[string]string{"webhook.url": "example.com/hook?token=" + secret}, Want: "The property `webhook.url` should be an absolute http or https URL."},
		"bad header name":   {Props: map[string]string{"webhook.url": "http://x", "webhook.headers.Bad Name": "v"}, Want: "The property `webhook.headers.Bad Name` should name an HTTP header."},
		"bad header value":  {Props: map[string]string{"webhook.url": "http://x", "webhook.headers.A": "v\nInjected: " + secret}, Want: "The property `webhook.headers.A` should be a header value"},
		"reserved header":   {Props: map[string]string{"webhook.url": "http://x", "webhook.headers.x-ejob-signature": "v"}, Want: "sets a header ejob sets itself"},
		"read not positive": {Props: map[string]string{"webhook.url": "http://x", "webhook.readTimeoutMilliseconds": "0"}, Want: "The property `webhook.readTimeoutMilliseconds` should be positive."},
	}, secret)
}

func TestConform(t *testing.T) {
	t.Parallel()
	rc := alerttest.NewReceiver(t, alerttest.Always(alerttest.Response{}))
	alerttest.Conform(t, webhook.New(alert.Options{Logger: &alerttest.Logger{}}), []map[string]string{{"webhook.url": rc.URL}}, nil)
}
