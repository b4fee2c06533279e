package builtin_test

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"sync"
	"testing"

	"github.com/ejob-io/ejob/plugins/builtin"
	"github.com/ejob-io/ejob/spi"
	"github.com/ejob-io/ejob/spi/spitest"
)

func TestNewTypes(t *testing.T) {
	t.Parallel()
	got := builtin.New(builtin.Options{}).Types()
	want := []spi.TypeKey{
		{Kind: spi.KindSharding, Type: "AVG_ALLOCATION"},
		{Kind: spi.KindSharding, Type: "ODEVITY"},
		{Kind: spi.KindSharding, Type: "ROUND_ROBIN"},
		{Kind: spi.KindErrorHandler, Type: "DINGTALK"},
		{Kind: spi.KindErrorHandler, Type: "EMAIL"},
		{Kind: spi.KindErrorHandler, Type: "IGNORE"},
		{Kind: spi.KindErrorHandler, Type: "LOG"},
		{Kind: spi.KindErrorHandler, Type: "SLACK"},
		{Kind: spi.KindErrorHandler, Type: "THROW"},
		{Kind: spi.KindErrorHandler, Type: "WEBHOOK"},
		{Kind: spi.KindErrorHandler, Type: "WECHAT"},
		{Kind: spi.KindJobType, Type: "HTTP"},
		{Kind: spi.KindJobType, Type: "SCRIPT"},
		{Kind: spi.KindThreadPool, Type: "CPU"},
		{Kind: spi.KindThreadPool, Type: "SINGLE_THREAD"},
		{Kind: spi.KindJobListener, Type: "LOG"},
		{Kind: spi.KindJobListener, Type: "LOG_ONCE"},
		{Kind: spi.KindTracing, Type: "RDB"},
	}
	if !slices.Equal(got, want) {
		t.Errorf("Types() = %v\nwant %v", got, want)
	}
	for _, k := range got {
		if spi.NormalizeType(k.Type) != k.Type {
			t.Errorf("type name %q is not normalised", k.Type)
		}
	}
}

func TestNewAreFresh(t *testing.T) {
	t.Parallel()
	a, b := builtin.New(builtin.Options{}), builtin.New(builtin.Options{})
	delete(a.Sharding, "ODEVITY")
	if b.Sharding["ODEVITY"] == nil {
		t.Error("maps are shared between calls")
	}
}

// TestNewConform runs every built-in through its spitest suite.
func TestNewConform(t *testing.T) {
	t.Parallel()
	set := builtin.New(builtin.Options{Logger: discard{}})
	waitForAlerts(t, set)
	for name, s := range set.Sharding {
		t.Run("sharding/"+name, func(t *testing.T) {
			t.Parallel()
			spitest.TestShardingStrategy(t, s)
		})
	}
	for name, h := range set.ErrorHandlers {
		t.Run("errorhandler/"+name, func(t *testing.T) {
			t.Parallel()
			spitest.TestErrorHandler(t, h, errorHandlerOptions(t, name))
		})
	}
	for name, p := range set.ThreadPools {
		t.Run("threadpool/"+name, func(t *testing.T) {
			t.Parallel()
			spitest.TestThreadPoolSizeProvider(t, p)
		})
	}
}

func ExampleNew() {
	set := builtin.New(builtin.Options{})
	for _, k := range set.Types() {
		fmt.Println(k.Kind, k.Type)
	}
	// Output:
	// sharding AVG_ALLOCATION
	// sharding ODEVITY
	// sharding ROUND_ROBIN
	// errorhandler DINGTALK
	// errorhandler EMAIL
	// errorhandler IGNORE
	// errorhandler LOG
	// errorhandler SLACK
	// errorhandler THROW
	// errorhandler WEBHOOK
	// errorhandler WECHAT
	// jobtype HTTP
	// jobtype SCRIPT
	// threadpool CPU
	// threadpool SINGLE_THREAD
	// joblistener LOG
	// joblistener LOG_ONCE
	// tracing RDB
}

// discard is a Logger that drops every line.
type discard struct{}

func (discard) Debug(string, ...any) {}
func (discard) Info(string, ...any)  {}
func (discard) Warn(string, ...any)  {}
func (discard) Error(string, ...any) {}

// errorHandlerOptions returns the conformance options of the built-in
// error handler typ. LOG, THROW and IGNORE accept any props. The alerting
// handlers need their receiver's props: WECHAT, DINGTALK, SLACK and
// WEBHOOK get a local server that answers as a WeCom robot does (which
// each of them takes as success); EMAIL gets a port nobody listens on, so
// its sends fail in the background and are logged, as the contract allows.
func errorHandlerOptions(t *testing.T, typ string) *spitest.ErrorHandlerOptions {
	t.Helper()
	req := spi.HandleErrorRequest{JobName: "test_job", InstanceID: "192.168.1.1@-@1", TaskID: "t", Error: spi.JobError{Message: "boom", Detail: "d"}}
	opts := &spitest.ErrorHandlerOptions{ValidProps: []map[string]string{nil, {"k": "v"}}, Request: &req, Propagate: typ == "THROW"}
	var props map[string]string
	switch typ {
	case "LOG", "THROW", "IGNORE":
		return opts
	case "EMAIL":
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		port := strconv.Itoa(l.Addr().(*net.TCPAddr).Port)
		l.Close()
		props = map[string]string{"email.host": "127.0.0.1", "email.port": port, "email.username": "u", "email.password": "p",
			"email.from": "ejob@example.com", "email.to": "ops@example.com", "email.useSsl": "false"}
	default:
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			io.Copy(io.Discard, r.Body)
			io.WriteString(w, `{"errcode":0,"errmsg":"ok"}`)
		}))
		t.Cleanup(srv.Close)
		key := map[string]string{"WECHAT": "wechat.webhook", "DINGTALK": "dingtalk.webhook", "SLACK": "slack.webhook", "WEBHOOK": "webhook.url"}[typ]
		props = map[string]string{key: srv.URL + "/send?token=secret"}
	}
	props["alert.timeoutSeconds"] = "2"
	req.Props = props
	opts.ValidProps = []map[string]string{props}
	opts.InvalidProps = map[string]map[string]string{"no props": nil}
	return opts
}

// waitForAlerts waits, at the end of the test, until the alerting handlers
// of set have nothing left to send.
func waitForAlerts(t *testing.T, set spi.Plugins) {
	t.Cleanup(func() {
		for _, h := range set.ErrorHandlers {
			if w, ok := h.(interface{ Wait(context.Context) error }); ok {
				if err := w.Wait(context.Background()); err != nil {
					t.Error(err)
				}
			}
		}
	})
}

// lineLogger records Info lines; it has every method of hclog.Logger and
// *slog.Logger that the built-ins use.
type lineLogger struct {
	discard
	mu    sync.Mutex
	lines []string
}

func (l *lineLogger) Debug(string, ...any) {}
func (l *lineLogger) Warn(string, ...any)  {}
func (l *lineLogger) Info(msg string, _ ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.lines = append(l.lines, msg)
}

// TestJobTypesLogThroughOptionsLogger: a Logger that can also Debug, Info
// and Warn receives the SCRIPT job type's output lines.
func TestJobTypesLogThroughOptionsLogger(t *testing.T) {
	t.Parallel()
	logger := &lineLogger{}
	set := builtin.New(builtin.Options{Logger: logger})
	_, err := set.JobTypes["SCRIPT"].Execute(t.Context(), spi.ExecuteRequest{
		Context: spi.ShardingContext{JobName: "j"},
		Props:   map[string]string{"script.command.line": "/bin/sh -c 'echo from-script'"},
	})
	if err != nil {
		t.Fatal(err)
	}
	logger.mu.Lock()
	defer logger.mu.Unlock()
	if !slices.Equal(logger.lines, []string{"from-script"}) {
		t.Errorf("logged %q, want the script's line", logger.lines)
	}
}
