package pluginhost_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/ejob-io/ejob/host/pluginhost"
	"github.com/ejob-io/ejob/spi"
)

// TestCatalogServesJobListeners indexes the built-in job listeners of the
// ejob binary under their kind and calls them out of process.
func TestCatalogServesJobListeners(t *testing.T) {
	cat, _ := open(t, "", func(c *pluginhost.Config) {
		c.Builtin.Types = append(c.Builtin.Types,
			spi.TypeKey{Kind: spi.KindJobListener, Type: "LOG"}, spi.TypeKey{Kind: spi.KindJobListener, Type: "LOG_ONCE"})
	})
	if got := strings.Join(cat.Types(spi.KindJobListener), ","); got != "LOG,LOG_ONCE" {
		t.Fatalf("job listener types = %s", got)
	}
	l, err := spi.Resolve[spi.JobListener](cat, "log_once")
	if err != nil {
		t.Fatal(err)
	}
	desc, err := l.Describe(ctxT(t, 20*time.Second), spi.ListenerDescribeRequest{JobName: "j",
		Props: map[string]string{"listener.log-once.started-timeout-milliseconds": "250"}})
	if err != nil {
		t.Fatal(err)
	}
	if want := (spi.ListenerDescription{Order: spi.DefaultListenerOrder, DistributeOnce: true, StartedTimeout: 250 * time.Millisecond}); desc != want {
		t.Fatalf("describe = %+v, want %+v", desc, want)
	}
	req := spi.ListenerRequest{JobName: "j", Contexts: spi.ShardingContexts{TaskID: "j@-@0@-@READY@-@1.2.3.4@-@5", JobName: "j", ShardingTotalCount: 1, Items: []int{0}}}
	if err := l.BeforeJobExecuted(ctxT(t, 20*time.Second), req); err != nil {
		t.Fatal(err)
	}
	// The sharding strategy LOG does not exist: kinds are separate.
	if _, err := spi.Resolve[spi.ShardingStrategy](cat, "LOG"); !errors.Is(err, spi.ErrUnknownType) {
		t.Errorf("sharding LOG: %v", err)
	}
	_, err = spi.Resolve[spi.JobListener](cat, "NOPE")
	if !errors.Is(err, spi.ErrUnknownType) || !strings.Contains(err.Error(), "LOG, LOG_ONCE") || !strings.Contains(err.Error(), "joblistener") {
		t.Errorf("unknown listener: %v", err)
	}
}
