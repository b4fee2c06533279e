package dingtalk_test

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ejob-io/ejob/plugins/errorhandler/alert"
	"github.com/ejob-io/ejob/plugins/errorhandler/alert/alerttest"
	"github.com/ejob-io/ejob/plugins/errorhandler/dingtalk"
	"github.com/ejob-io/ejob/spi"
)

const (
	token  = "0123456789abcdef-access-token"
	secret = "SEC-mocked-dingtalk-secret-0001"
)

// TestSignVector is DingTalk's documented signing example.
func TestSignVector(t *testing.T) {
	t.Parallel()
	if got, want := dingtalk.Sign("mocked_secret", 1700000000000), "WXHf7JYFeYGoLy9GNKGBbO5xkO549s2AEq7MjeJHUDg%3D"; got != want {
		t.Errorf("Sign = %s, want %s", got, want)
	}
	for in, want := range map[string]string{
		"https://oapi.dingtalk.com/robot/send?access_token=x": "https://oapi.dingtalk.com/robot/send?access_token=x&timestamp=1700000000000&sign=WXHf7JYFeYGoLy9GNKGBbO5xkO549s2AEq7MjeJHUDg%3D",
		"http://127.0.0.1/robot":                              "http://127.0.0.1/robot?timestamp=1700000000000&sign=WXHf7JYFeYGoLy9GNKGBbO5xkO549s2AEq7MjeJHUDg%3D",
	} {
		if got := dingtalk.SignedURL(in, "mocked_secret", 1700000000000); got != want {
			t.Errorf("SignedURL(%s) = %s, want %s", in, got, want)
		}
	}
}

// wantBody is upstream's payload for alerttest.Failure: keyword, then the
// text, Gson-escaped.
const wantBody = `{"msgtype":"text","text":{"content":"[ejob alert] Job \u0027orders\u0027 exception occur in job processing, caused by exit status 3 \u003cdisk \u0026 full\u003e \u0027y\u0027 \u003d z\n\n` +
	`Job:      orders\nInstance: 10.0.0.5@-@4242\nItem:     2\nTask:     orders@-@0,1,2@-@READY@-@10.0.0.5@-@4242\nTime:     2026-11-23T10:00:00Z\n\n` +
	`caused by *exec.ExitError: exit status 3\n"}}`

// checkSign verifies a request's timestamp and sign as DingTalk does,
// computed here from DingTalk's formula.
func checkSign(t *testing.T, r alerttest.Request) {
	t.Helper()
	q := r.URL.Query()
	ts := q.Get("timestamp")
	if ts != strconv.FormatInt(alerttest.Now().UnixMilli(), 10) {
		t.Errorf("timestamp %q, want the send time in ms", ts)
	}
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write([]byte(ts + "\n" + secret))
	if want := base64.StdEncoding.EncodeToString(mac.Sum(nil)); q.Get("sign") != want {
		t.Errorf("sign %q, want %q", q.Get("sign"), want)
	}
	if q.Get("access_token") != token {
		t.Errorf("access_token %q", q.Get("access_token"))
	}
}

func TestSend(t *testing.T) {
	t.Parallel()
	tests := map[string]struct {
		resp     alerttest.Response
		props    map[string]string
		wantErr  string
		unsigned bool
	}{
		"signed, errcode 0": {resp: alerttest.Response{Body: `{"errcode":0,"errmsg":"ok"}`}},
		"unsigned":          {resp: alerttest.Response{Body: `{"errcode":0,"errmsg":"ok"}`}, props: map[string]string{"dingtalk.secret": ""}, unsigned: true},
		"keyword missing":   {resp: alerttest.Response{Body: `{"errcode":310000,"errmsg":"keywords not in content"}`}, wantErr: "errcode 310000: keywords not in content"},
		"non-200":           {resp: alerttest.Response{Status: 403, Body: "forbidden"}, wantErr: "unexpected http response status: 403 Forbidden: forbidden"},
		"not JSON":          {resp: alerttest.Response{Body: "oops"}, wantErr: "response is not a JSON object: oops"},
		"send too fast":     {resp: alerttest.Response{Body: `{"errcode":130101,"errmsg":"send too fast"}`}, props: map[string]string{"alert.timeoutSeconds": "2"}, wantErr: "errcode 130101: send too fast"},
		"slow": {resp: alerttest.Response{Delay: time.Minute}, props: map[string]string{"dingtalk.readTimeoutMilliseconds": "200", "alert.timeoutSeconds": "1"},
			wantErr: "timeout awaiting response headers"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			rc := alerttest.NewReceiver(t, alerttest.Always(tc.resp))
			log := &alerttest.Logger{}
			h := dingtalk.New(alert.Options{Logger: log, Now: alerttest.Now})
			props := map[string]string{"dingtalk.webhook": rc.URL + "/robot/send?access_token=" + token, "dingtalk.keyword": "[ejob alert] ",
				"dingtalk.secret": secret, "alert.suppressSeconds": "0"}
			for k, v := range tc.props {
				props[k] = v
			}
			alerttest.Send(t, h, alerttest.Failure(props))
			reqs := rc.Requests()
			if len(reqs) == 0 {
				t.Fatalf("no request; log:\n%s", log.Text())
			}
			r := reqs[0]
			if string(r.Body) != wantBody {
				t.Errorf("body\n%s\nwant\n%s", r.Body, wantBody)
			}
			if tc.unsigned {
				if r.URL.RawQuery != "access_token="+token {
					t.Errorf("unsigned query %q", r.URL.RawQuery)
				}
			} else {
				checkSign(t, r)
			}
			out := log.Text()
			if tc.wantErr == "" && !strings.Contains(out, "INFO An exception has occurred in Job 'orders', a dingtalk message has been sent successfully.") ||
				tc.wantErr != "" && (!strings.Contains(out, "ERROR An exception has occurred in Job 'orders' but failed to send dingtalk message") || !strings.Contains(out, tc.wantErr)) {
				t.Errorf("log, want %q:\n%s", tc.wantErr, out)
			}
			for _, s := range []string{token, secret} {
				if strings.Contains(out, s) {
					t.Errorf("%q is in the log:\n%s", s, out)
				}
			}
		})
	}
}

func TestValidate(t *testing.T) {
	t.Parallel()
	h := dingtalk.New(alert.Options{Logger: &alerttest.Logger{}})
	url := "https://oapi.dingtalk.com/robot/send?access_token=" + token
	alerttest.CheckInvalid(t, h, map[string]alerttest.Invalid{
		"no webhook":         {Props: map[string]string{"dingtalk.secret": secret}, Want: "The property `dingtalk.webhook` is required."},
		"webhook not a URL":  {Props: map[string]string{"dingtalk.webhook": "ftp://x/?access_token=" + token}, Want: "The property `dingtalk.webhook` should be an absolute http or https URL."},
		"connect not number": {Props: map[string]string{"dingtalk.webhook": url, "dingtalk.connectTimeoutMilliseconds": "x"}, Want: "The property `dingtalk.connectTimeoutMilliseconds` should be integer."},
		"read negative":      {Props: map[string]string{"dingtalk.webhook": url, "dingtalk.readTimeoutMilliseconds": "-5"}, Want: "The property `dingtalk.readTimeoutMilliseconds` should be positive."},
	}, token)
	if err := h.Validate(t.Context(), spi.ValidatePropsRequest{Props: map[string]string{"dingtalk.webhook": url}}); err != nil {
		t.Errorf("Validate(webhook only) = %v", err)
	}
}

func TestConform(t *testing.T) {
	t.Parallel()
	rc := alerttest.NewReceiver(t, alerttest.Always(alerttest.Response{Body: `{"errcode":0}`}))
	alerttest.Conform(t, dingtalk.New(alert.Options{Logger: &alerttest.Logger{}}), []map[string]string{
		{"dingtalk.webhook": rc.URL + "/robot/send?access_token=" + token, "dingtalk.secret": secret},
		{"dingtalk.webhook": "http://127.0.0.1/robot/send", "dingtalk.keyword": "[ejob]"},
	}, nil)
}
