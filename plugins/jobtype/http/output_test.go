package httpjob_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	httpjob "github.com/ejob-io/ejob/plugins/jobtype/http"
	"github.com/ejob-io/ejob/sdk"
	"github.com/ejob-io/ejob/sdk/sdktest"
	"github.com/ejob-io/ejob/spi"
)

// TestOutputIsStatusAndBodyStart runs items against a real HTTP server:
// the output is the status line and the body as received, its start only
// for a long body, with the length of the rest, for a success and (through
// the plugin transport too) for a failure.
func TestOutputIsStatusAndBodyStart(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("x", httpjob.OutputBodyBytes) + strings.Repeat("y", 1000)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/fail" {
			w.WriteHeader(http.StatusServiceUnavailable)
			fmt.Fprint(w, long)
			return
		}
		fmt.Fprint(w, "done: 3 rows\nsecond line")
	}))
	t.Cleanup(srv.Close)
	remote := sdktest.Connect(t, sdk.Plugins{JobTypes: map[string]spi.JobExecutor{httpjob.TypeName: httpjob.New(&recLogger{})}})
	for name, e := range map[string]spi.JobExecutor{"in process": httpjob.New(&recLogger{}), "gRPC": remote.JobExecutor(httpjob.TypeName)} {
		t.Run(name, func(t *testing.T) {
			exec := func(path string) (spi.ExecuteResponse, error) {
				return e.Execute(t.Context(), spi.ExecuteRequest{Context: spi.ShardingContext{JobName: "h", ShardingTotalCount: 1},
					Props: map[string]string{httpjob.PropURI: srv.URL + path, httpjob.PropMethod: "GET"}})
			}
			resp, err := exec("/ok")
			if err != nil {
				t.Fatal(err)
			}
			if want := "HTTP/1.1 200 OK\ndone: 3 rows\nsecond line"; resp.Output != (spi.Output{Text: want}) {
				t.Errorf("output %+v, want %q", resp.Output, want)
			}
			resp, err = exec("/fail")
			if err == nil {
				t.Fatal("a 503 succeeded")
			}
			want := "HTTP/1.1 503 Service Unavailable\n" + long[:httpjob.OutputBodyBytes] + "\n[… 1000 more bytes of body]"
			if resp.Output.Text != want {
				t.Errorf("output of the failure: %d bytes ending %q, want %d bytes ending %q", len(resp.Output.Text),
					resp.Output.Text[max(0, len(resp.Output.Text)-40):], len(want), want[len(want)-40:])
			}
		})
	}
}
