package httpjob_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	httpjob "github.com/ejob-io/ejob/plugins/jobtype/http"
	"github.com/ejob-io/ejob/spi"
)

func props(kv ...string) map[string]string {
	m := map[string]string{httpjob.PropURI: "http://127.0.0.1:8080/job", httpjob.PropMethod: "GET"}
	for i := 0; i+1 < len(kv); i += 2 {
		if kv[i+1] == "<delete>" {
			delete(m, kv[i])
			continue
		}
		m[kv[i]] = kv[i+1]
	}
	return m
}

// TestParsePropsDefaults is upstream's HttpParamTest.assertNew.
func TestParsePropsDefaults(t *testing.T) {
	t.Parallel()
	p, err := httpjob.ParseProps(props(httpjob.PropData, "a=1"))
	if err != nil {
		t.Fatal(err)
	}
	if p.URL.String() != "http://127.0.0.1:8080/job" || p.Method != "GET" || p.Data != "a=1" ||
		p.ConnectTimeout != 3000*time.Millisecond || p.ReadTimeout != 5000*time.Millisecond || p.ContentType != "" {
		t.Errorf("ParseProps = %+v", p)
	}
}

func TestParseProps(t *testing.T) {
	t.Parallel()
	tests := map[string]struct {
		props   map[string]string
		check   func(httpjob.Params) bool
		mention string // non-empty: an error mentioning this
	}{
		"timeouts set": {
			props: props(httpjob.PropConnectTimeout, "+100", httpjob.PropReadTimeout, "2147483647"),
			check: func(p httpjob.Params) bool {
				return p.ConnectTimeout == 100*time.Millisecond && p.ReadTimeout == 2147483647*time.Millisecond
			},
		},
		"zero timeouts mean none": {
			props: props(httpjob.PropConnectTimeout, "0", httpjob.PropReadTimeout, "0"),
			check: func(p httpjob.Params) bool { return p.ConnectTimeout == 0 && p.ReadTimeout == 0 },
		},
		"https and content type": {
			props: props(httpjob.PropURI, "HTTPS://example.com:8443/x?y=1", httpjob.PropContentType, "application/json; charset=utf-8"),
			check: func(p httpjob.Params) bool {
				return p.URL.Host == "example.com:8443" && p.ContentType == "application/json; charset=utf-8"
			},
		},
		"missing uri":         {props: props(httpjob.PropURI, "<delete>"), mention: "Cannot find HTTP URL, job is not executed."},
		"empty uri":           {props: props(httpjob.PropURI, ""), mention: "Cannot find HTTP URL, job is not executed."},
		"missing method":      {props: props(httpjob.PropMethod, "<delete>"), mention: "Cannot find HTTP method, job is not executed."},
		"empty method":        {props: props(httpjob.PropMethod, ""), mention: "Cannot find HTTP method, job is not executed."},
		"lower-case method":   {props: props(httpjob.PropMethod, "post"), mention: "`http.method`"},
		"PATCH":               {props: props(httpjob.PropMethod, "PATCH"), mention: "`http.method`"},
		"relative uri":        {props: props(httpjob.PropURI, "/job"), mention: "`http.uri`"},
		"ftp uri":             {props: props(httpjob.PropURI, "ftp://example.com/x"), mention: "`http.uri`"},
		"no host":             {props: props(httpjob.PropURI, "http:///x"), mention: "`http.uri`"},
		"unparsable uri":      {props: props(httpjob.PropURI, "http://[::1"), mention: "`http.uri`"},
		"connect not int":     {props: props(httpjob.PropConnectTimeout, "3s"), mention: "`http.connect.timeout.milliseconds`"},
		"connect empty":       {props: props(httpjob.PropConnectTimeout, ""), mention: "`http.connect.timeout.milliseconds`"},
		"connect space":       {props: props(httpjob.PropConnectTimeout, " 100"), mention: "`http.connect.timeout.milliseconds`"},
		"read negative":       {props: props(httpjob.PropReadTimeout, "-1"), mention: "`http.read.timeout.milliseconds`"},
		"read over int32":     {props: props(httpjob.PropReadTimeout, "2147483648"), mention: "`http.read.timeout.milliseconds`"},
		"content type CRLF":   {props: props(httpjob.PropContentType, "text/plain\r\nX-Evil: 1"), mention: "`http.content.type`"},
		"content type DEL":    {props: props(httpjob.PropContentType, "text/plain\x7f"), mention: "`http.content.type`"},
		"every method is ok":  {props: props(httpjob.PropMethod, "TRACE"), check: func(p httpjob.Params) bool { return p.Method == "TRACE" }},
		"data on GET is kept": {props: props(httpjob.PropData, "x"), check: func(p httpjob.Params) bool { return p.Data == "x" && !p.WriteMethod() }},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			p, err := httpjob.ParseProps(tc.props)
			if tc.mention != "" {
				if !errors.Is(err, spi.ErrInvalidConfig) || !strings.Contains(err.Error(), tc.mention) {
					t.Fatalf("ParseProps = %+v, %v; want spi.ErrInvalidConfig mentioning %q", p, err, tc.mention)
				}
				return
			}
			if err != nil || !tc.check(p) {
				t.Errorf("ParseProps = %+v, %v", p, err)
			}
		})
	}
}

// TestWriteMethod is upstream's HttpParamTest.assertIsWriteMethodWith*.
func TestWriteMethod(t *testing.T) {
	t.Parallel()
	for _, m := range httpjob.Methods() {
		want := m == "POST" || m == "PUT" || m == "DELETE"
		if got := (httpjob.Params{Method: m}).WriteMethod(); got != want {
			t.Errorf("WriteMethod(%s) = %v, want %v", m, got, want)
		}
	}
}
