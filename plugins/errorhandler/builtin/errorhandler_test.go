package errorhandlerbuiltin_test

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"os"
	"reflect"
	"strings"
	"sync"
	"testing"

	errorhandlerbuiltin "github.com/ejob-io/ejob/plugins/errorhandler/builtin"
	"github.com/ejob-io/ejob/spi"
	"github.com/ejob-io/ejob/spi/spitest"
)

// recorder is a Logger that collects its lines.
type recorder struct {
	mu    sync.Mutex
	lines []line
}

type line struct {
	msg  string
	args []any
}

func (r *recorder) Error(msg string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.lines = append(r.lines, line{msg, args})
}

func sampleRequest() spi.HandleErrorRequest {
	return spi.HandleErrorRequest{
		JobName:      "test_job",
		InstanceID:   "192.168.1.1@-@100",
		TaskID:       "test_job@-@0,1@-@READY@-@192.168.1.1@-@100",
		ShardingItem: 1,
		Props:        map[string]string{"secret": "not logged"},
		Error:        spi.JobError{Message: "boom", Detail: "goroutine 1 [running]: ..."},
	}
}

func TestHandleError(t *testing.T) {
	t.Parallel()
	tests := map[string]struct {
		typ           string
		wantPropagate bool
		wantLines     []line
	}{
		"LOG": {typ: "LOG", wantLines: []line{{
			msg: "Job 'test_job' exception occur in job processing",
			args: []any{"job", "test_job", "instance_id", "192.168.1.1@-@100",
				"task_id", "test_job@-@0,1@-@READY@-@192.168.1.1@-@100", "item", 1,
				"error", "boom", "detail", "goroutine 1 [running]: ..."},
		}}},
		"THROW":  {typ: "THROW", wantPropagate: true},
		"IGNORE": {typ: "IGNORE"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			var rec recorder
			h := errorhandlerbuiltin.Handlers(&rec)[tc.typ]
			resp, err := h.HandleError(t.Context(), sampleRequest())
			if err != nil {
				t.Fatalf("HandleError: %v", err)
			}
			if resp.Propagate != tc.wantPropagate {
				t.Errorf("Propagate = %t, want %t", resp.Propagate, tc.wantPropagate)
			}
			if !reflect.DeepEqual(rec.lines, tc.wantLines) {
				t.Errorf("logged %#v\nwant %#v", rec.lines, tc.wantLines)
			}
		})
	}
}

func TestLogOmitsEmptyDetail(t *testing.T) {
	t.Parallel()
	var rec recorder
	req := sampleRequest()
	req.Error.Detail, req.TaskID, req.ShardingItem = "", "", -1
	if _, err := errorhandlerbuiltin.NewLog(&rec).HandleError(t.Context(), req); err != nil {
		t.Fatal(err)
	}
	want := []any{"job", "test_job", "instance_id", "192.168.1.1@-@100", "task_id", "", "item", -1, "error", "boom"}
	if len(rec.lines) != 1 || !reflect.DeepEqual(rec.lines[0].args, want) {
		t.Errorf("logged %#v, want one line with args %#v", rec.lines, want)
	}
}

func TestLogWithSlog(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	logger := slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{
		ReplaceAttr: func(groups []string, a slog.Attr) slog.Attr {
			if a.Key == slog.TimeKey {
				return slog.Attr{}
			}
			return a
		},
	}))
	if _, err := errorhandlerbuiltin.NewLog(logger).HandleError(t.Context(), sampleRequest()); err != nil {
		t.Fatal(err)
	}
	got := buf.String()
	for _, want := range []string{`level=ERROR`, `msg="Job 'test_job' exception occur in job processing"`, `job=test_job`, `item=1`, `error=boom`} {
		if !strings.Contains(got, want) {
			t.Errorf("slog line %q lacks %q", got, want)
		}
	}
	if strings.Contains(got, "not logged") {
		t.Errorf("slog line %q leaks props", got)
	}
}

func TestHandlersConform(t *testing.T) {
	t.Parallel()
	var rec recorder
	handlers := errorhandlerbuiltin.Handlers(&rec)
	if len(handlers) != 3 {
		t.Fatalf("Handlers() has %d entries, want LOG, THROW, IGNORE", len(handlers))
	}
	for name, h := range handlers {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			req := sampleRequest()
			spitest.TestErrorHandler(t, h, &spitest.ErrorHandlerOptions{
				ValidProps: []map[string]string{nil, {}, {"anything": "goes"}, {"email.host": ""}},
				Request:    &req,
				Propagate:  name == "THROW",
			})
		})
	}
}

func ExampleLog() {
	logger := slog.New(slog.NewTextHandler(os.Stdout, &slog.HandlerOptions{
		ReplaceAttr: func(groups []string, a slog.Attr) slog.Attr {
			if a.Key == slog.TimeKey {
				return slog.Attr{} // stable output
			}
			return a
		},
	}))
	h := errorhandlerbuiltin.NewLog(logger)
	resp, err := h.HandleError(context.Background(), spi.HandleErrorRequest{
		JobName: "myJob", InstanceID: "192.168.1.1@-@100", TaskID: "t1", ShardingItem: 0,
		Error: spi.JobError{Message: "boom"},
	})
	fmt.Println(resp.Propagate, err)
	// Output:
	// level=ERROR msg="Job 'myJob' exception occur in job processing" job=myJob instance_id=192.168.1.1@-@100 task_id=t1 item=0 error=boom
	// false <nil>
}
