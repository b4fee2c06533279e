package wechat_test

import (
	"strings"
	"testing"
	"time"

	"github.com/ejob-io/ejob/plugins/errorhandler/alert"
	"github.com/ejob-io/ejob/plugins/errorhandler/alert/alerttest"
	"github.com/ejob-io/ejob/plugins/errorhandler/wechat"
)

const key = "693a91f6-7aaa-4bbb-8ccc-secret-key"

// wantBody is upstream's payload for alerttest.Failure at alerttest.Now,
// escaped as Gson does (' < > & = as \u00xx).
const wantBody = `{"msgtype":"text","text":{"content":"Job \u0027orders\u0027 exception occur in job processing, caused by exit status 3 \u003cdisk \u0026 full\u003e \u0027y\u0027 \u003d z\n\n` +
	`Job:      orders\nInstance: 10.0.0.5@-@4242\nItem:     2\nTask:     orders@-@0,1,2@-@READY@-@10.0.0.5@-@4242\nTime:     2026-11-23T10:00:00Z\n\n` +
	`caused by *exec.ExitError: exit status 3\n"}}`

func TestSend(t *testing.T) {
	t.Parallel()
	tests := map[string]struct {
		resp     alerttest.Response
		props    map[string]string
		wantErr  string // "" : sent
		wantReqs int
	}{
		"errcode 0":        {resp: alerttest.Response{Body: `{"errcode":0,"errmsg":"ok"}`}, wantReqs: 1},
		"errcode string 0": {resp: alerttest.Response{Body: `{"errcode":"0"}`}, wantReqs: 1},
		"errcode non-zero": {resp: alerttest.Response{Body: `{"errcode":93000,"errmsg":"invalid webhook url, hint: [1700000000_1]"}`},
			wantErr: "errcode 93000: invalid webhook url, hint: [1700000000_1]", wantReqs: 1},
		"non-200":    {resp: alerttest.Response{Status: 404, Body: "no such robot"}, wantErr: "unexpected http response status: 404 Not Found: no such robot", wantReqs: 1},
		"not JSON":   {resp: alerttest.Response{Body: "<html>gateway</html>"}, wantErr: "response is not a JSON object: <html>gateway</html>", wantReqs: 1},
		"no errcode": {resp: alerttest.Response{Body: `{"ok":true}`}, wantErr: "response has no errcode", wantReqs: 1},
		"5xx retried": {resp: alerttest.Response{Status: 503, Body: "busy"}, props: map[string]string{"alert.timeoutSeconds": "2"},
			wantErr: "503 Service Unavailable: busy", wantReqs: 2},
		"slow": {resp: alerttest.Response{Delay: time.Minute}, props: map[string]string{"wechat.readTimeoutMilliseconds": "200", "alert.timeoutSeconds": "1"},
			wantErr: "timeout awaiting response headers", wantReqs: 1},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			rc := alerttest.NewReceiver(t, alerttest.Always(tc.resp))
			log := &alerttest.Logger{}
			h := wechat.New(alert.Options{Logger: log, Now: alerttest.Now})
			props := map[string]string{"wechat.webhook": rc.URL + "/cgi-bin/webhook/send?key=" + key, "alert.suppressSeconds": "0"}
			for k, v := range tc.props {
				props[k] = v
			}
			start := time.Now()
			resp, err := h.HandleError(t.Context(), alerttest.Failure(props))
			if err != nil || resp.Propagate {
				t.Fatalf("HandleError = %+v, %v", resp, err)
			}
			if d := time.Since(start); d > time.Second {
				t.Errorf("HandleError took %v", d)
			}
			if err := h.Wait(t.Context()); err != nil {
				t.Fatal(err)
			}
			reqs := rc.Requests()
			if len(reqs) < tc.wantReqs {
				t.Fatalf("%d requests, want %d; log:\n%s", len(reqs), tc.wantReqs, log.Text())
			}
			r := reqs[0]
			if r.Method != "POST" || r.URL.Path != "/cgi-bin/webhook/send" || r.URL.Query().Get("key") != key {
				t.Errorf("request %s %s", r.Method, r.URL)
			}
			if r.Header.Get("Content-Type") != "application/json" || r.Header.Get("Content-Encoding") != "UTF-8" {
				t.Errorf("headers %v", r.Header)
			}
			if string(r.Body) != wantBody {
				t.Errorf("body\n%s\nwant\n%s", r.Body, wantBody)
			}
			out := log.Text()
			if tc.wantErr == "" {
				if !strings.Contains(out, "INFO An exception has occurred in Job 'orders', a wechat message has been sent successfully.") {
					t.Errorf("log:\n%s", out)
				}
			} else if !strings.Contains(out, "ERROR An exception has occurred in Job 'orders' but failed to send wechat message") || !strings.Contains(out, tc.wantErr) {
				t.Errorf("log lacks the failure %q:\n%s", tc.wantErr, out)
			}
			if strings.Contains(out, key) {
				t.Errorf("the webhook key is in the log:\n%s", out)
			}
		})
	}
}

func TestValidate(t *testing.T) {
	t.Parallel()
	url := "https://qyapi.weixin.qq.com/cgi-bin/webhook/send?key=" + key
	alerttest.CheckInvalid(t, wechat.New(alert.Options{Logger: &alerttest.Logger{}}), map[string]alerttest.Invalid{
		"no webhook":           {Props: map[string]string{}, Want: "The property `wechat.webhook` is required."},
		"webhook not a URL":    {Props: map[string]string{"wechat.webhook": "qyapi.weixin.qq.com/send?key=" + key}, Want: "The property `wechat.webhook` should be an absolute http or https URL."},
		"webhook unparseable":  {Props: map[string]string{"wechat.webhook": "https://x/%zz?key=" + key}, Want: "The property `wechat.webhook` should be an absolute http or https URL (it does not parse)."},
		"connect not integer":  {Props: map[string]string{"wechat.webhook": url, "wechat.connectTimeoutMilliseconds": "3s"}, Want: "The property `wechat.connectTimeoutMilliseconds` should be integer."},
		"read not positive":    {Props: map[string]string{"wechat.webhook": url, "wechat.readTimeoutMilliseconds": "0"}, Want: "The property `wechat.readTimeoutMilliseconds` should be positive."},
		"timeout not positive": {Props: map[string]string{"wechat.webhook": url, "alert.timeoutSeconds": "-1"}, Want: "The property `alert.timeoutSeconds` should be positive."},
	}, key)
}

func TestConform(t *testing.T) {
	t.Parallel()
	rc := alerttest.NewReceiver(t, alerttest.Always(alerttest.Response{Body: `{"errcode":0}`}))
	alerttest.Conform(t, wechat.New(alert.Options{Logger: &alerttest.Logger{}}), []map[string]string{
		{"wechat.webhook": rc.URL + "/send?key=k"},
		{"wechat.webhook": "http://127.0.0.1/x", "wechat.connectTimeoutMilliseconds": "1"},
	}, nil)
}
