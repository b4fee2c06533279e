package kernel_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/ejob-io/ejob/core/config"
	"github.com/ejob-io/ejob/core/executor"
	"github.com/ejob-io/ejob/core/kernel"
	"github.com/ejob-io/ejob/core/reg"
	"github.com/ejob-io/ejob/core/reg/embedded"
	"github.com/ejob-io/ejob/internal/proctest"
	"github.com/ejob-io/ejob/internal/testkit"
	"github.com/ejob-io/ejob/spi"
)

// javaWrittenConfig is a config node as a Java instance with its own
// plugins writes it: a listener, an error handler, a thread pool and a
// sharding strategy that ejob does not serve, and one listener it does.
const javaWrittenConfig = `description: ''
disabled: false
failover: false
jobErrorHandlerType: wechatWorkHandler
jobExecutorServiceHandlerType: BOUNDED
jobListenerTypes:
- auditListener
- REC
jobName: foreign
jobParameter: ''
jobShardingStrategyType: HASH_RING
maxTimeDiffSeconds: -1
misfire: false
monitorExecution: true
overwrite: false
reconcileIntervalMinutes: 10
shardingItemParameters: ''
shardingTotalCount: 2
staticSharding: false
`

// countingListener counts its before-calls.
type countingListener struct {
	mu     sync.Mutex
	before int
}

func (l *countingListener) Describe(context.Context, spi.ListenerDescribeRequest) (spi.ListenerDescription, error) {
	return spi.ListenerDescription{Order: spi.DefaultListenerOrder}, nil
}

func (l *countingListener) BeforeJobExecuted(context.Context, spi.ListenerRequest) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.before++
	return nil
}

func (l *countingListener) AfterJobExecuted(context.Context, spi.ListenerRequest) error { return nil }

func (l *countingListener) calls() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.before
}

// TestForeignConfigWithTypesNotServedHere: a job whose config node (written
// by a Java instance with its own plugins) names types this host does not
// serve runs with that config (overwrite off): each unknown type is
// reported once at WARN, naming the type, the job and what ejob does
// instead (shards with AVG_ALLOCATION, logs failures as LOG does, sizes the
// pool as CPU does, runs without the listener), and the listener it does
// serve, named only by the registry's config, is called.
func TestForeignConfigWithTypesNotServedHere(t *testing.T) {
	srv := embedded.NewServer()
	admin, err := srv.Connect("foreign")
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	ctx := context.Background()
	if _, err := admin.Create(ctx, "/foreign/config", []byte(javaWrittenConfig), reg.Persistent, reg.WithParents()); err != nil {
		t.Fatal(err)
	}
	client, err := srv.Connect("foreign")
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	rec := &countingListener{}
	plugins := plugins()
	plugins.JobListeners["REC"] = rec
	var logs proctest.Buffer
	s, err := kernel.New(kernel.Options{
		Client: client, InstanceID: "127.0.0.1@-@1", ServerIP: "127.0.0.1", Plugins: plugins,
		Logger: hclog.New(&hclog.LoggerOptions{Name: "i1", Level: hclog.Warn, Output: &logs}),
	})
	if err != nil {
		t.Fatal(err)
	}
	ran := make(chan int, 16)
	local := config.New("foreign", 2) // the local config names none of them
	if err := s.Add(ctx, kernel.Job{Config: local, Runner: executor.SimpleFunc(func(_ context.Context, sc spi.ShardingContext) error {
		ran <- sc.ShardingItem
		return errors.New("item failed")
	})}); err != nil {
		t.Fatal(err)
	}
	rctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- s.Run(rctx) }()
	defer func() {
		cancel()
		<-done
	}()
	wctx, wcancel := context.WithTimeout(ctx, 20*time.Second)
	defer wcancel()
	if err := s.Ready(wctx); err != nil {
		t.Fatal(err)
	}
	items := map[int]bool{}
	for trig := 0; trig < 2; trig++ { // twice: each type is reported once
		// A trigger that comes while the previous execution is still
		// finishing (after its items ran) is dropped, as the config has
		// misfire off: it is sent again until an execution begins.
		var sent time.Time
		testkit.Eventually(t, 10*time.Second, "both items run", func() bool {
			if rec.calls() == trig && time.Since(sent) > 200*time.Millisecond {
				if err := s.Trigger("foreign"); err != nil {
					t.Fatal(err)
				}
				sent = time.Now()
			}
			for {
				select {
				case i := <-ran:
					items[i] = true
				default:
					return len(items) == 2 && rec.calls() > trig
				}
			}
		})
		clear(items)
	}
	out := logs.String()
	for typ, instead := range map[string]string{
		"HASH_RING":         "sharding with AVG_ALLOCATION instead",
		"WECHATWORKHANDLER": "failures are logged as the LOG handler logs them",
		"BOUNDED":           "the pool is sized as CPU sizes it",
		"auditListener":     "the job runs without it",
	} {
		var lines []string
		for _, l := range strings.Split(out, "\n") {
			if strings.Contains(l, "[WARN]") && strings.Contains(l, "type="+typ) {
				lines = append(lines, l)
			}
		}
		if len(lines) != 1 {
			t.Errorf("type %s: want one WARN, got %d:\n%s", typ, len(lines), out)
			continue
		}
		for _, w := range []string{instead, "job=foreign", "does not serve"} {
			if !strings.Contains(lines[0], w) {
				t.Errorf("type %s: WARN lacks %q:\n%s", typ, w, lines[0])
			}
		}
	}
	if !strings.Contains(out, "Job 'foreign' exception occur in job processing") {
		t.Errorf("item failures not logged as LOG logs them:\n%s", out)
	}
}
