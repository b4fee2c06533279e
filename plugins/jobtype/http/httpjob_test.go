package httpjob_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	httpjob "github.com/ejob-io/ejob/plugins/jobtype/http"
	"github.com/ejob-io/ejob/sdk"
	"github.com/ejob-io/ejob/sdk/sdktest"
	"github.com/ejob-io/ejob/spi"
	"github.com/ejob-io/ejob/spi/spitest"
)

func ptr(s string) *string { return &s }

// record is one logged line.
type record struct {
	level, msg string
	fields     map[string]any
}

// recLogger records what it is given; safe for concurrent use.
type recLogger struct {
	mu      sync.Mutex
	records []record
}

func (l *recLogger) add(level, msg string, args []any) {
	f := map[string]any{}
	for i := 0; i+1 < len(args); i += 2 {
		f[fmt.Sprint(args[i])] = args[i+1]
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.records = append(l.records, record{level: level, msg: msg, fields: f})
}

func (l *recLogger) Debug(msg string, args ...any) { l.add("debug", msg, args) }
func (l *recLogger) Warn(msg string, args ...any)  { l.add("warn", msg, args) }

func (l *recLogger) all() []record {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.records)
}

// seen is what a test server recorded of one request.
type seen struct {
	method, path, body, contentType, shardingContext string
	contentLength                                    int64
	hasContentType                                   bool
}

// recorder is a test server that records every request and answers with
// the handler's status and body.
type recorder struct {
	mu   sync.Mutex
	reqs []seen
}

func (r *recorder) handler(status int, body string) http.HandlerFunc {
	return func(w http.ResponseWriter, req *http.Request) {
		b, _ := io.ReadAll(req.Body)
		_, hasCT := req.Header["Content-Type"]
		r.mu.Lock()
		r.reqs = append(r.reqs, seen{
			method: req.Method, path: req.URL.Path, body: string(b), contentType: req.Header.Get("Content-Type"),
			shardingContext: req.Header.Get(httpjob.HeaderShardingContext), contentLength: req.ContentLength, hasContentType: hasCT,
		})
		r.mu.Unlock()
		w.WriteHeader(status)
		_, _ = io.WriteString(w, body)
	}
}

func (r *recorder) all() []seen {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.reqs)
}

var testContext = spi.ShardingContext{
	JobName: "myJob", TaskID: "myJob@-@1@-@READY@-@192.168.1.10@-@12345",
	ShardingTotalCount: 3, JobParameter: "k=v&x='y' <z>", ShardingItem: 1,
}

// testContextJSON is what upstream's Gson (2.10.1, a default GsonBuilder)
// writes for testContext: HTML-safe escapes, no null shardingParameter.
const testContextJSON = `{"jobName":"myJob","taskId":"myJob@-@1@-@READY@-@192.168.1.10@-@12345","shardingTotalCount":3,"jobParameter":"k\u003dv\u0026x\u003d\u0027y\u0027 \u003cz\u003e","shardingItem":1}`

func execute(ctx context.Context, e *httpjob.Executor, sc spi.ShardingContext, p map[string]string) error {
	_, err := e.Execute(ctx, spi.ExecuteRequest{Context: sc, Props: p})
	return err
}

// TestRequest checks method, body, Content-Type and the shardingContext
// header for each method (upstream's assertProcessHeader and
// assertProcessWithPost, plus the JDK's default form content type).
func TestRequest(t *testing.T) {
	t.Parallel()
	tests := map[string]struct {
		method, data, contentType string
		want                      seen
	}{
		"GET never sends data":      {method: "GET", data: "a=1", want: seen{method: "GET"}},
		"POST form as upstream":     {method: "POST", data: "a=1&b=2", contentType: "application/x-www-form-urlencoded", want: seen{method: "POST", body: "a=1&b=2", contentType: "application/x-www-form-urlencoded", hasContentType: true, contentLength: 7}},
		"POST json":                 {method: "POST", data: `{"x":"作业"}`, contentType: "application/json", want: seen{method: "POST", body: `{"x":"作业"}`, contentType: "application/json", hasContentType: true, contentLength: 14}},
		"POST body, JDK default CT": {method: "POST", data: "a=1", want: seen{method: "POST", body: "a=1", contentType: httpjob.FormContentType, hasContentType: true, contentLength: 3}},
		"DELETE body, JDK default":  {method: "DELETE", data: "a=1", want: seen{method: "DELETE", body: "a=1", contentType: httpjob.FormContentType, hasContentType: true, contentLength: 3}},
		"PUT body, no default CT":   {method: "PUT", data: "a=1", want: seen{method: "PUT", body: "a=1", contentLength: 3}},
		"POST without data":         {method: "POST", want: seen{method: "POST"}},
		"GET with content type":     {method: "GET", contentType: "text/plain", want: seen{method: "GET", contentType: "text/plain", hasContentType: true}},
		"HEAD":                      {method: "HEAD", data: "x", want: seen{method: "HEAD"}},
		"OPTIONS":                   {method: "OPTIONS", want: seen{method: "OPTIONS"}},
		"TRACE":                     {method: "TRACE", want: seen{method: "TRACE"}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			rec := &recorder{}
			srv := httptest.NewServer(rec.handler(http.StatusOK, "done"))
			defer srv.Close()
			p := map[string]string{httpjob.PropURI: srv.URL + "/job", httpjob.PropMethod: tc.method}
			if tc.data != "" {
				p[httpjob.PropData] = tc.data
			}
			if tc.contentType != "" {
				p[httpjob.PropContentType] = tc.contentType
			}
			if err := execute(t.Context(), httpjob.New(&recLogger{}), testContext, p); err != nil {
				t.Fatalf("Execute: %v", err)
			}
			got := rec.all()
			want := tc.want
			want.path, want.shardingContext = "/job", testContextJSON
			if len(got) != 1 || got[0] != want {
				t.Errorf("server saw %+v\nwant [%+v]", got, want)
			}
		})
	}
}

// TestHeaderSpellingOnWire reads the raw request: the header name is sent
// as upstream spells it (shardingContext, not Shardingcontext), the value
// is the Gson JSON byte for byte, and no body follows a GET.
func TestHeaderSpellingOnWire(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	head := make(chan string, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			head <- err.Error()
			return
		}
		defer c.Close()
		r := bufio.NewReader(c)
		var b strings.Builder
		for {
			line, err := r.ReadString('\n')
			b.WriteString(line)
			if err != nil || line == "\r\n" {
				break
			}
		}
		head <- b.String()
		_, _ = io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
	}()
	err = execute(t.Context(), httpjob.New(&recLogger{}), testContext, map[string]string{
		httpjob.PropURI: "http://" + ln.Addr().String() + "/x?y=1", httpjob.PropMethod: "GET", httpjob.PropData: "ignored",
	})
	if err != nil {
		t.Fatal(err)
	}
	h := <-head
	if !strings.HasPrefix(h, "GET /x?y=1 HTTP/1.1\r\n") || !strings.Contains(h, "\r\nshardingContext: "+testContextJSON+"\r\n") {
		t.Errorf("request head:\n%s", h)
	}
	if strings.Contains(strings.ToLower(h), "content-length") || strings.Contains(strings.ToLower(h), "content-type") {
		t.Errorf("a GET carries body headers:\n%s", h)
	}
}

// TestStatus: 2xx succeeds and logs the body at debug; anything else
// fails with a StatusError and logs at warn (upstream only logs; 404 is
// its assertProcessWithoutSuccessCode).
func TestStatus(t *testing.T) {
	t.Parallel()
	tests := map[string]struct {
		status   int
		body     string
		wantBody string
	}{
		"200":            {status: 200, body: "ok\r\nfine\n", wantBody: "okfine"},
		"204":            {status: 204},
		"404":            {status: 404, body: "not\nhere", wantBody: "nothere"},
		"500":            {status: 500, body: "boom"},
		"503 large body": {status: 503, body: strings.Repeat("x", 100<<10), wantBody: strings.Repeat("x", 4<<10)},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			srv := httptest.NewServer((&recorder{}).handler(tc.status, tc.body))
			defer srv.Close()
			logger := &recLogger{}
			err := execute(t.Context(), httpjob.New(logger), testContext, map[string]string{httpjob.PropURI: srv.URL, httpjob.PropMethod: "GET"})
			wantBody := tc.wantBody
			if wantBody == "" {
				wantBody = tc.body
			}
			logs := logger.all()
			if len(logs) != 1 || logs[0].fields["job"] != "myJob" || logs[0].fields["item"] != 1 ||
				logs[0].fields["status"] != tc.status || logs[0].fields["body"] != wantBody {
				t.Errorf("logged %+v", logs)
			}
			if tc.status < 300 {
				if err != nil || logs[0].level != "debug" {
					t.Errorf("Execute = %v (log level %s), want success logged at debug", err, logs[0].level)
				}
				return
			}
			var se *httpjob.StatusError
			if !errors.As(err, &se) || se.Code != tc.status || se.Body != wantBody {
				t.Fatalf("Execute = %v, want a StatusError %d", err, tc.status)
			}
			// The host names the job and the item when it wraps the error;
			// the plugin saying them too would repeat them in every line.
			if !strings.Contains(err.Error(), strconv.Itoa(tc.status)) || strings.Contains(err.Error(), "myJob") {
				t.Errorf("error %q does not name the status, or repeats the job the host names", err)
			}
			if logs[0].level != "warn" || logs[0].msg != "HTTP job executed with response code "+strconv.Itoa(tc.status) {
				t.Errorf("logged %+v, want warn", logs[0])
			}
		})
	}
}

func TestRedirects(t *testing.T) {
	t.Parallel()
	rec := &recorder{}
	mux := http.NewServeMux()
	mux.HandleFunc("/found", func(w http.ResponseWriter, r *http.Request) { http.Redirect(w, r, "/final", http.StatusFound) })
	mux.HandleFunc("/temporary", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "/final", http.StatusTemporaryRedirect)
	})
	mux.HandleFunc("/loop", func(w http.ResponseWriter, r *http.Request) { http.Redirect(w, r, "/loop", http.StatusFound) })
	mux.HandleFunc("/to-https", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "https://127.0.0.1:1/final", http.StatusMovedPermanently)
	})
	mux.HandleFunc("/final", rec.handler(200, "ok"))
	srv := httptest.NewServer(mux)
	defer srv.Close()
	run := func(path, method string) error {
		return execute(t.Context(), httpjob.New(&recLogger{}), testContext, map[string]string{
			httpjob.PropURI: srv.URL + path, httpjob.PropMethod: method, httpjob.PropData: "a=1",
		})
	}

	t.Run("302 followed", func(t *testing.T) {
		if err := run("/found", "GET"); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("302 after POST becomes GET", func(t *testing.T) {
		if err := run("/found", "POST"); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("307 keeps POST and body", func(t *testing.T) {
		if err := run("/temporary", "POST"); err != nil {
			t.Fatal(err)
		}
	})
	got := rec.all()
	want := []seen{
		{method: "GET", path: "/final", shardingContext: testContextJSON},
		{method: "GET", path: "/final", shardingContext: testContextJSON},
		{method: "POST", path: "/final", body: "a=1", contentLength: 3, contentType: httpjob.FormContentType, hasContentType: true, shardingContext: testContextJSON},
	}
	if !slices.Equal(got, want) {
		t.Errorf("final handler saw\n%+v\nwant\n%+v", got, want)
	}

	t.Run("loop stops after 20", func(t *testing.T) {
		err := run("/loop", "GET")
		if err == nil || !strings.Contains(err.Error(), "stopped after 20 redirects") {
			t.Errorf("Execute = %v", err)
		}
	})
	t.Run("other protocol not followed", func(t *testing.T) {
		err := run("/to-https", "GET")
		var se *httpjob.StatusError
		if !errors.As(err, &se) || se.Code != 301 || se.Location != "https://127.0.0.1:1/final" {
			t.Errorf("Execute = %v, want a StatusError 301 with the Location", err)
		}
	})
}

func TestConnectRefused(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	err = execute(t.Context(), httpjob.New(&recLogger{}), testContext, map[string]string{httpjob.PropURI: "http://" + addr, httpjob.PropMethod: "GET"})
	if err == nil || !strings.Contains(err.Error(), "connect failed") || errors.Is(err, spi.ErrInvalidConfig) {
		t.Errorf("Execute = %v, want a connect failure", err)
	}
}

// TestSecretsStayOut: the URL's user info and query values (tokens,
// signatures) appear in no error and no log line, whether the request
// failed to connect, got an error status or a redirect to elsewhere.
func TestSecretsStayOut(t *testing.T) {
	t.Parallel()
	const secret = "S3CR3T"
	mux := http.NewServeMux()
	mux.HandleFunc("/fail", func(w http.ResponseWriter, _ *http.Request) { http.Error(w, "no", http.StatusInternalServerError) })
	mux.HandleFunc("/away", func(w http.ResponseWriter, _ *http.Request) {
		http.Redirect(w, nil, "https://elsewhere.example/cb?access_token="+secret, http.StatusFound)
	})
	srv := httptest.NewServer(mux)
	defer srv.Close()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := ln.Addr().String()
	ln.Close()
	host := strings.TrimPrefix(srv.URL, "http://")
	for _, uri := range []string{
		"http://u:" + secret + "@" + closed + "/x?token=" + secret,
		"http://" + host + "/fail?access_token=" + secret + "&sign=" + secret,
		"http://" + secret + "@" + host + "/away?key=" + secret,
	} {
		log := &recLogger{}
		err := execute(t.Context(), httpjob.New(log), testContext, map[string]string{httpjob.PropURI: uri, httpjob.PropMethod: "GET"})
		if err == nil {
			t.Fatalf("%s: succeeded", uri)
		}
		if strings.Contains(err.Error(), secret) {
			t.Errorf("the error shows the secret: %v", err)
		}
		if !strings.Contains(err.Error(), "***") {
			t.Errorf("the error does not show where the masked URL is: %v", err)
		}
		for _, r := range log.all() {
			if line := fmt.Sprint(r); strings.Contains(line, secret) {
				t.Errorf("a log line shows the secret: %s", line)
			}
		}
	}
}

// TestReadTimeout: the read timeout ends a request whose server does not
// answer (upstream's assertProcessWithIOException) or stalls in the body,
// while a slow body whose every chunk arrives within the timeout
// succeeds, as with the JDK's per-read timeout.
func TestReadTimeout(t *testing.T) {
	t.Parallel()
	mux := http.NewServeMux()
	mux.HandleFunc("/silent", func(w http.ResponseWriter, r *http.Request) { <-r.Context().Done() })
	mux.HandleFunc("/stall", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", "100")
		_, _ = io.WriteString(w, "partial")
		w.(http.Flusher).Flush()
		<-r.Context().Done()
	})
	mux.HandleFunc("/trickle", func(w http.ResponseWriter, r *http.Request) {
		for range 5 {
			_, _ = io.WriteString(w, "chunk")
			w.(http.Flusher).Flush()
			time.Sleep(100 * time.Millisecond) // a slow server, not synchronisation
		}
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	for path, wantErr := range map[string]bool{"/silent": true, "/stall": true, "/trickle": false} {
		t.Run(path, func(t *testing.T) {
			t.Parallel()
			start := time.Now()
			err := execute(t.Context(), httpjob.New(&recLogger{}), testContext, map[string]string{
				httpjob.PropURI: srv.URL + path, httpjob.PropMethod: "GET", httpjob.PropReadTimeout: "300",
			})
			took := time.Since(start)
			if !wantErr {
				if err != nil {
					t.Errorf("Execute = %v after %v", err, took)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), "read timed out after 300ms (http.read.timeout.milliseconds)") {
				t.Errorf("Execute = %v, want a read timeout", err)
			}
			if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
				t.Errorf("a read timeout is not the job's context ending: %v", err)
			}
			if took > 5*time.Second {
				t.Errorf("took %v", took)
			}
		})
	}
}

func TestPrecancelledSendsNothing(t *testing.T) {
	t.Parallel()
	rec := &recorder{}
	srv := httptest.NewServer(rec.handler(200, ""))
	defer srv.Close()
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	err := execute(ctx, httpjob.New(&recLogger{}), testContext, map[string]string{httpjob.PropURI: srv.URL, httpjob.PropMethod: "POST", httpjob.PropData: "x"})
	if !errors.Is(err, context.Canceled) || len(rec.all()) != 0 {
		t.Errorf("Execute = %v, server saw %d requests; want context.Canceled and none", err, len(rec.all()))
	}
}

// TestUnsendableHeader: Gson leaves DEL (0x7f) raw, and Go refuses it in a
// header value; the item fails with a clear error instead of sending.
func TestUnsendableHeader(t *testing.T) {
	t.Parallel()
	rec := &recorder{}
	srv := httptest.NewServer(rec.handler(200, ""))
	defer srv.Close()
	sc := testContext
	sc.ShardingParameter = ptr("a\x7fb")
	err := execute(t.Context(), httpjob.New(&recLogger{}), sc, map[string]string{httpjob.PropURI: srv.URL, httpjob.PropMethod: "GET"})
	if err == nil || !strings.Contains(err.Error(), "shardingContext") || len(rec.all()) != 0 {
		t.Errorf("Execute = %v, server saw %d requests", err, len(rec.all()))
	}
}

// conformance returns the suite's options against a fresh server.
func conformance(t *testing.T) *spitest.JobExecutorOptions {
	mux := http.NewServeMux()
	mux.HandleFunc("/ok", (&recorder{}).handler(200, "ok"))
	mux.HandleFunc("/fail", (&recorder{}).handler(500, "boom"))
	mux.HandleFunc("/block", func(w http.ResponseWriter, r *http.Request) {
		// The server notices the client going away only once the body is
		// consumed; then the request's context ends.
		_, _ = io.ReadAll(r.Body)
		<-r.Context().Done()
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	req := func(path string) *spi.ExecuteRequest {
		return &spi.ExecuteRequest{
			Context: spi.ShardingContext{JobName: "http_job", TaskID: "t", ShardingTotalCount: 3, ShardingParameter: ptr("A")},
			Props: map[string]string{
				httpjob.PropURI: srv.URL + path, httpjob.PropMethod: "POST", httpjob.PropData: "a=1",
				httpjob.PropReadTimeout: "60000",
			},
		}
	}
	return &spitest.JobExecutorOptions{
		ValidProps: []map[string]string{
			{httpjob.PropURI: "http://example.com/x", httpjob.PropMethod: "GET"},
			{httpjob.PropURI: "https://example.com", httpjob.PropMethod: "DELETE", httpjob.PropData: "d",
				httpjob.PropConnectTimeout: "1", httpjob.PropReadTimeout: "0", httpjob.PropContentType: "text/plain"},
		},
		InvalidProps: map[string]map[string]string{
			"missing_uri":      {httpjob.PropMethod: "GET"},
			"missing_method":   {httpjob.PropURI: "http://example.com"},
			"lowercase_method": {httpjob.PropURI: "http://example.com", httpjob.PropMethod: "get"},
			"relative_uri":     {httpjob.PropURI: "example.com/x", httpjob.PropMethod: "GET"},
			"bad_timeout":      {httpjob.PropURI: "http://example.com", httpjob.PropMethod: "GET", httpjob.PropReadTimeout: "5s"},
		},
		Succeed:  req("/ok"),
		Fail:     req("/fail"),
		Blocking: req("/block"),
	}
}

func TestConformance(t *testing.T) {
	t.Parallel()
	spitest.TestJobExecutor(t, httpjob.New(&recLogger{}), conformance(t))
}

func TestConformanceOverGRPC(t *testing.T) {
	t.Parallel()
	p := sdktest.Connect(t, sdk.Plugins{JobTypes: map[string]spi.JobExecutor{httpjob.TypeName: httpjob.New(&recLogger{})}})
	spitest.TestJobExecutor(t, p.JobExecutor("http"), conformance(t))
}

// TestFencingTokenHeader: the item's fencing token travels in
// X-Ejob-Fencing-Token and in the shardingContext JSON; a run without one
// sends neither.
func TestFencingTokenHeader(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var got []http.Header
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		got = append(got, r.Header.Clone())
		mu.Unlock()
	}))
	defer srv.Close()
	p := map[string]string{httpjob.PropURI: srv.URL, httpjob.PropMethod: "POST"}
	fenced := testContext
	fenced.FencingToken = 4294967397
	for _, sc := range []spi.ShardingContext{fenced, testContext} {
		if err := execute(t.Context(), httpjob.New(&recLogger{}), sc, p); err != nil {
			t.Fatal(err)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if len(got) != 2 {
		t.Fatalf("%d requests, want 2", len(got))
	}
	if v := got[0].Values(httpjob.HeaderFencingToken); len(v) != 1 || v[0] != "4294967397" {
		t.Errorf("%s = %q, want [4294967397]", httpjob.HeaderFencingToken, v)
	}
	if sc := got[0].Get(httpjob.HeaderShardingContext); !strings.HasSuffix(sc, `,"fencingToken":4294967397}`) {
		t.Errorf("shardingContext = %s, want the token last", sc)
	}
	if v, ok := got[1][httpjob.HeaderFencingToken]; ok {
		t.Errorf("a run without a token sent %s: %q", httpjob.HeaderFencingToken, v)
	}
	if sc := got[1].Get(httpjob.HeaderShardingContext); sc != testContextJSON {
		t.Errorf("shardingContext without a token = %s, want upstream's %s", sc, testContextJSON)
	}
}
