package main

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/ejob-io/ejob/sdk"
	"github.com/ejob-io/ejob/sdk/sdktest"
	"github.com/ejob-io/ejob/spi"
	"github.com/ejob-io/ejob/spi/spitest"
)

// receiver is a webhook endpoint that records what it is sent and answers
// with status.
type receiver struct {
	*httptest.Server
	status int

	mu    sync.Mutex
	posts []Failure
	types []string
}

func newReceiver(t *testing.T, status int) *receiver {
	r := &receiver{status: status}
	r.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		var f Failure
		body, _ := io.ReadAll(req.Body)
		if err := json.Unmarshal(body, &f); err != nil {
			t.Errorf("posted body %q is not a Failure: %v", body, err)
		}
		r.mu.Lock()
		r.posts = append(r.posts, f)
		r.types = append(r.types, req.Header.Get("Content-Type"))
		r.mu.Unlock()
		w.WriteHeader(r.status)
	}))
	t.Cleanup(r.Close)
	return r
}

func (r *receiver) received() ([]Failure, []string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Failure(nil), r.posts...), append([]string(nil), r.types...)
}

// conformance is what ejob's error-handler suite needs to know about
// WEBHOOK: props it accepts and refuses, and a failure to report (to a
// live endpoint) with the answer expected.
func conformance(endpoint string) *spitest.ErrorHandlerOptions {
	return &spitest.ErrorHandlerOptions{
		ValidProps: []map[string]string{
			{PropURL: endpoint},
			{PropURL: endpoint, PropTimeout: "2s", PropPropagate: "false"},
		},
		InvalidProps: map[string]map[string]string{
			"missing_url":    {},
			"not_http":       {PropURL: "ftp://example.com/hook"},
			"relative_url":   {PropURL: "/hook"},
			"bad_timeout":    {PropURL: endpoint, PropTimeout: "soon"},
			"zero_timeout":   {PropURL: endpoint, PropTimeout: "0s"},
			"bad_propagate":  {PropURL: endpoint, PropPropagate: "yes"},
			"unparsable_url": {PropURL: "http://[::1"},
		},
		Request: &spi.HandleErrorRequest{
			JobName: "orders", InstanceID: "10.0.0.1@-@100", TaskID: "orders@-@0@-@READY@-@10.0.0.1@-@100",
			ShardingItem: 0, Props: map[string]string{PropURL: endpoint, PropPropagate: "true"},
			Error: spi.JobError{Message: "item 0 failed", Detail: "exit status 3"},
		},
		Propagate: true,
	}
}

func TestConformanceInProcess(t *testing.T) {
	r := newReceiver(t, http.StatusNoContent)
	spitest.TestErrorHandler(t, Webhook{}, conformance(r.URL))
}

func TestConformanceOverGRPC(t *testing.T) {
	r := newReceiver(t, http.StatusNoContent)
	p := sdktest.Connect(t, sdk.Plugins{Version: "test", ErrorHandlers: map[string]spi.ErrorHandler{"WEBHOOK": Webhook{}}})
	spitest.TestErrorHandler(t, p.ErrorHandler("webhook"), conformance(r.URL))
}

// TestPostsTheFailure: the endpoint receives the failure as JSON, an item
// of -1 for a failure outside an execution.
func TestPostsTheFailure(t *testing.T) {
	r := newReceiver(t, http.StatusOK)
	req := spi.HandleErrorRequest{
		JobName: "orders", InstanceID: "10.0.0.1@-@100", ShardingItem: -1,
		Props: map[string]string{PropURL: r.URL + "/hook"},
		Error: spi.JobError{Message: "listener failed"},
	}
	resp, err := Webhook{}.HandleError(context.Background(), req)
	if err != nil || resp.Propagate {
		t.Fatalf("HandleError = %+v, %v; want no error and Propagate false (the default)", resp, err)
	}
	posts, types := r.received()
	want := Failure{Job: "orders", Instance: "10.0.0.1@-@100", Item: -1, Message: "listener failed"}
	if len(posts) != 1 || posts[0] != want || types[0] != "application/json" {
		t.Fatalf("received %+v (%v), want one %+v as application/json", posts, types, want)
	}
}

// TestEndpointFailureIsTheHandlersError: a post the endpoint refuses is
// the handler's own failure (the host logs it); the URL in it is masked.
func TestEndpointFailureIsTheHandlersError(t *testing.T) {
	r := newReceiver(t, http.StatusInternalServerError)
	req := spi.HandleErrorRequest{JobName: "orders", Props: map[string]string{PropURL: r.URL + "/hook?token=s3cret", PropPropagate: "true"}}
	resp, err := Webhook{}.HandleError(context.Background(), req)
	if err == nil || !strings.Contains(err.Error(), "500 Internal Server Error") {
		t.Fatalf("err = %v, want the endpoint's 500", err)
	}
	if strings.Contains(err.Error(), "s3cret") {
		t.Errorf("error shows the token: %v", err)
	}
	if errors.Is(err, spi.ErrInvalidConfig) {
		t.Errorf("a failed post reads as a config error: %v", err)
	}
	if !resp.Propagate {
		t.Error("the configured answer (Propagate) was lost with the error")
	}
}
