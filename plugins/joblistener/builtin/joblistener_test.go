package joblistenerbuiltin_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	joblistenerbuiltin "github.com/ejob-io/ejob/plugins/joblistener/builtin"
	"github.com/ejob-io/ejob/sdk"
	"github.com/ejob-io/ejob/sdk/sdktest"
	"github.com/ejob-io/ejob/spi"
	"github.com/ejob-io/ejob/spi/spitest"
)

type recLogger struct {
	mu    sync.Mutex
	lines []string
}

func (r *recLogger) Info(msg string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.lines = append(r.lines, fmt.Sprintln(append([]any{msg}, args...)...))
}

func options(once bool) *spitest.JobListenerOptions {
	if !once {
		return &spitest.JobListenerOptions{
			ValidProps: []map[string]string{nil, {"unrelated": "x"}},
			Want:       &spi.ListenerDescription{Order: spi.DefaultListenerOrder},
		}
	}
	return &spitest.JobListenerOptions{
		ValidProps: []map[string]string{
			{joblistenerbuiltin.PropStartedTimeoutMillis: "1500", joblistenerbuiltin.PropCompletedTimeoutMillis: " 20 "},
			nil,
			{joblistenerbuiltin.PropStartedTimeoutMillis: "0", joblistenerbuiltin.PropCompletedTimeoutMillis: "-1"},
		},
		InvalidProps: map[string]map[string]string{
			"started_not_a_number":   {joblistenerbuiltin.PropStartedTimeoutMillis: "1s"},
			"completed_not_a_number": {joblistenerbuiltin.PropCompletedTimeoutMillis: "abc"},
		},
		Want: &spi.ListenerDescription{Order: spi.DefaultListenerOrder, DistributeOnce: true,
			StartedTimeout: 1500 * time.Millisecond, CompletedTimeout: 20 * time.Millisecond},
	}
}

func TestConformanceInProcess(t *testing.T) {
	t.Parallel()
	spitest.TestJobListener(t, joblistenerbuiltin.NewLog(&recLogger{}), options(false))
	spitest.TestJobListener(t, joblistenerbuiltin.NewLogOnce(&recLogger{}), options(true))
}

func TestConformanceOverGRPC(t *testing.T) {
	t.Parallel()
	p := sdktest.Connect(t, sdk.Plugins{Version: "test", JobListeners: joblistenerbuiltin.Listeners(&recLogger{})})
	spitest.TestJobListener(t, p.JobListener("log"), options(false))
	spitest.TestJobListener(t, p.JobListener("Log_Once"), options(true))
	err := p.JobListener("LOG_ONCE").BeforeJobExecuted(t.Context(), spi.ListenerRequest{})
	if err != nil {
		t.Fatal(err)
	}
	_, err = p.JobListener("LOG_ONCE").Describe(t.Context(), spi.ListenerDescribeRequest{Props: map[string]string{joblistenerbuiltin.PropStartedTimeoutMillis: "x"}})
	if !errors.Is(err, spi.ErrInvalidConfig) || !strings.Contains(err.Error(), joblistenerbuiltin.PropStartedTimeoutMillis) {
		t.Errorf("invalid prop over gRPC: %v", err)
	}
	if err := p.JobListener("NOPE").AfterJobExecuted(t.Context(), spi.ListenerRequest{}); !errors.Is(err, spi.ErrUnknownType) ||
		!strings.Contains(err.Error(), "LOG, LOG_ONCE") {
		t.Errorf("unknown type: %v", err)
	}
}

func TestLogLines(t *testing.T) {
	t.Parallel()
	var rec recLogger
	l := joblistenerbuiltin.NewLog(&rec)
	req := spi.ListenerRequest{JobName: "orders", Contexts: spi.ShardingContexts{
		TaskID: "orders@-@0,1@-@READY@-@10.0.0.1@-@7", JobName: "orders", ShardingTotalCount: 3, Items: []int{0, 1}}}
	ctx := context.Background()
	if err := l.BeforeJobExecuted(ctx, req); err != nil {
		t.Fatal(err)
	}
	if err := l.AfterJobExecuted(ctx, req); err != nil {
		t.Fatal(err)
	}
	want := []string{
		"Job 'orders' begin. job orders task_id orders@-@0,1@-@READY@-@10.0.0.1@-@7 items [0, 1] sharding_total_count 3\n",
		"Job 'orders' end. job orders task_id orders@-@0,1@-@READY@-@10.0.0.1@-@7 items [0, 1] sharding_total_count 3\n",
	}
	if fmt.Sprint(rec.lines) != fmt.Sprint(want) {
		t.Errorf("lines:\n got  %q\n want %q", rec.lines, want)
	}
}
