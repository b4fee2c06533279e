package sdktest_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/ejob-io/ejob/core/tracing"
	"github.com/ejob-io/ejob/sdk"
	"github.com/ejob-io/ejob/sdk/sdktest"
	"github.com/ejob-io/ejob/spi"
)

// A tracer that keeps no statistics tables (not a spi.StatisticsStore)
// answers the statistics calls through the transport with an error
// wrapping ErrUnsupported.
func TestStatisticsUnsupportedOverGRPC(t *testing.T) {
	p := sdktest.Connect(t, sdk.Plugins{Version: "test", Tracing: map[string]spi.Tracer{"MEM": tracing.NewMemory(tracing.MemoryOptions{})}})
	st, ok := p.Tracer("MEM").(spi.StatisticsStore)
	if !ok {
		t.Fatal("the transport's tracer is not a StatisticsStore")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := st.QueryStatistics(ctx, spi.StatisticsQuery{Table: spi.TaskResultMinute}); !errors.Is(err, spi.ErrUnsupported) {
		t.Errorf("QueryStatistics = %v, want ErrUnsupported", err)
	}
	if _, err := st.AddStatistics(ctx, spi.StatisticsAddRequest{Table: spi.TaskResultMinute, Rows: []spi.StatisticsRow{{Count: 1}}}); !errors.Is(err, spi.ErrUnsupported) {
		t.Errorf("AddStatistics = %v, want ErrUnsupported", err)
	}
}
