package console

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/ejob-io/ejob/internal/browsertest"
)

// TestElasticJobUIRequestPath drives `ejob serve`'s REST API the way
// ElasticJob-UI 3.0.2's frontend does (testdata/elasticjob-ui: the real
// axios it depends on, served with /api/ proxied to ejob as the UI's own
// server does): a login stores the token sent as Access-Token, the Job
// trace page's first requests (every filter "") answer, an error shows
// ejob's exact errorMsg, and a dead token (one the server does not
// know, as after its restart or the token's expiry) sends the user to
// #/login. ejob once answered /api/* errors with HTTP status = errorCode,
// which axios rejects before the envelope is read: the UI showed "Error:
// Request failed with status code 400" and never went back to the login.
func TestElasticJobUIRequestPath(t *testing.T) {
	e := NewEnv(t, Options{Elasticjob: tracing(t)})
	backend, err := url.Parse(e.Base)
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.Handle("/api/", httputil.NewSingleHostReverseProxy(backend))
	mux.Handle("/", http.FileServer(http.Dir("testdata/elasticjob-ui")))
	mux.HandleFunc("/favicon.ico", func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusNoContent) })
	ui := httptest.NewServer(mux)
	t.Cleanup(ui.Close)

	b := browsertest.Start(t)
	tab := b.NewTab(t)
	tab.Run("open the UI", chromedp.Navigate(ui.URL+"/index.html#/login"), chromedp.WaitReady(chromedp.CSS("#message")))
	browsertest.Eval[any](tab, fmt.Sprintf(`ui.login(%q, %q)`, AdminUser, AdminPW))
	tab.Eventually(15*time.Second, "the login to store the token and open #/jobs",
		`location.hash === '#/jobs' && (localStorage.getItem('Access-Token') || '').length > 20`)

	// A success: the envelope's model.
	browsertest.Eval[any](tab, `ui.call('get', '/api/jobs/getAllJobsBriefInfo')`)
	tab.Eventually(15*time.Second, "the jobs list", `document.querySelector('#model').textContent.startsWith('[')`)

	// The Job trace page as it opens (every filter empty) and its
	// job-name completion with nothing typed.
	for _, c := range []struct{ method, path, body, want string }{
		{"post", "/api/event-trace/execution", `{"jobName":"","ip":"","isSuccess":"","startTime":"","endTime":"","pageSize":10,"pageNumber":1}`, `{"total":0,"rows":[]}`},
		{"post", "/api/event-trace/status", `{"jobName":"","source":"","executionType":"","state":"","pageSize":10,"pageNumber":1}`, `{"total":0,"rows":[]}`},
		{"get", "/api/event-trace/execution/jobNames/", "undefined", `[]`},
	} {
		browsertest.Eval[any](tab, fmt.Sprintf(`ui.call(%q, %q, %s)`, c.method, c.path, c.body))
		tab.Eventually(15*time.Second, c.method+" "+c.path+" to answer "+c.want,
			fmt.Sprintf(`document.querySelector('#model').textContent === %q`, c.want))
	}

	// Errors show ejob's own message, whatever their errorCode.
	token := apiLogin(t, e.Base)
	for _, c := range []struct{ method, path, body string }{
		{"get", "/api/jobs/config/nosuch", ""},                                                       // 404
		{"put", "/api/jobs/config", `{"jobName":"a/b","cron":"0 0 0 * * ?","shardingTotalCount":1}`}, // 400
		{"post", "/api/data-source/connect", `{"name":"nosuch"}`},                                    // 404, ejob serve's store
	} {
		want := apiError(t, e.Base, token, c.method, c.path, c.body)
		data := "undefined"
		if c.body != "" {
			data = c.body
		}
		browsertest.Eval[any](tab, fmt.Sprintf(`ui.call(%q, %q, %s)`, c.method, c.path, data))
		tab.Eventually(15*time.Second, c.method+" "+c.path+" to show "+want,
			fmt.Sprintf(`document.querySelector('#message').textContent === %q`, want))
		if location := browsertest.Eval[string](tab, `location.hash`); location != "#/jobs" {
			t.Errorf("%s %s: the UI went to %s", c.method, c.path, location)
		}
	}

	// A dead token: errorCode 403 clears it and opens the login.
	browsertest.Eval[any](tab, `localStorage.setItem('Access-Token', 'a-token-from-before-a-restart')`)
	browsertest.Eval[any](tab, `ui.call('get', '/api/jobs/getAllJobsBriefInfo')`)
	tab.Eventually(15*time.Second, "a dead token to lead to #/login",
		`location.hash === '#/login' && localStorage.getItem('Access-Token') === null`)
	if msg := tab.Text("#message"); msg != "" {
		t.Errorf("a dead token showed %q, want the login page only", msg)
	}
}

// apiLogin logs in as the admin at base's /api/login: the token.
func apiLogin(t *testing.T, base string) string {
	t.Helper()
	env := apiCall(t, base, "", "POST", "/api/login", fmt.Sprintf(`{"username":%q,"password":%q}`, AdminUser, AdminPW))
	var m struct {
		AccessToken string `json:"accessToken"`
	}
	if err := json.Unmarshal(env.Model, &m); err != nil || m.AccessToken == "" {
		t.Fatalf("login: %s (%v)", env.Model, err)
	}
	return m.AccessToken
}

// apiError sends a request that must fail and returns its errorMsg.
func apiError(t *testing.T, base, token, method, path, body string) string {
	t.Helper()
	env := apiCall(t, base, token, strings.ToUpper(method), path, body)
	if env.Success || env.ErrorMsg == "" {
		t.Fatalf("%s %s: %+v, want an error", method, path, env)
	}
	return env.ErrorMsg
}

type envelope struct {
	Success   bool            `json:"success"`
	ErrorCode int             `json:"errorCode"`
	ErrorMsg  string          `json:"errorMsg"`
	Model     json.RawMessage `json:"model"`
}

func apiCall(t *testing.T, base, token, method, path, body string) envelope {
	t.Helper()
	req, err := http.NewRequest(method, base+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	if token != "" {
		req.Header.Set("Access-Token", token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	var env envelope
	if err := json.Unmarshal(data, &env); err != nil {
		t.Fatalf("%s %s: %d %s", method, path, resp.StatusCode, data)
	}
	return env
}
