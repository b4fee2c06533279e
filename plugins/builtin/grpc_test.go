package builtin_test

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ejob-io/ejob/plugins/builtin"
	"github.com/ejob-io/ejob/sdk"
	"github.com/ejob-io/ejob/sdk/sdktest"
	"github.com/ejob-io/ejob/spi"
	"github.com/ejob-io/ejob/spi/spitest"
)

// TestNewConformOverGRPC serves every built-in from one plugin,
// as the ejob binary does, through the real gRPC transport (sdktest), and
// runs each through its spitest suite; type names are looked up in lower
// case to exercise case-insensitive matching.
func TestNewConformOverGRPC(t *testing.T) {
	t.Parallel()
	set := builtin.New(builtin.Options{Logger: discard{}})
	waitForAlerts(t, set)
	p := sdktest.Connect(t, set)

	info, err := p.Info(t.Context())
	if err != nil {
		t.Fatalf("Info: %v", err)
	}
	if info.PluginVersion != builtin.Version || info.APIVersion != spi.APIVersion || len(info.Types) != len(set.Types()) {
		t.Errorf("Info = %+v, want version %s, API %d and the %d built-in types", info, builtin.Version, spi.APIVersion, len(set.Types()))
	}

	for _, k := range set.Types() {
		name := string(k.Kind) + "/" + k.Type
		lower := strings.ToLower(k.Type)
		switch k.Kind {
		case spi.KindSharding:
			t.Run(name, func(t *testing.T) { t.Parallel(); spitest.TestShardingStrategy(t, p.ShardingStrategy(lower)) })
		case spi.KindErrorHandler:
			t.Run(name, func(t *testing.T) {
				t.Parallel()
				spitest.TestErrorHandler(t, p.ErrorHandler(lower), errorHandlerOptions(t, k.Type))
			})
		case spi.KindThreadPool:
			t.Run(name, func(t *testing.T) {
				t.Parallel()
				spitest.TestThreadPoolSizeProvider(t, p.ThreadPoolSizeProvider(lower))
			})
		case spi.KindJobType:
			t.Run(name, func(t *testing.T) { t.Parallel(); spitest.TestJobExecutor(t, p.JobExecutor(lower), nil) })
		case spi.KindJobListener:
			t.Run(name, func(t *testing.T) { t.Parallel(); spitest.TestJobListener(t, p.JobListener(lower), nil) })
		case spi.KindTracing:
			t.Run(name, func(t *testing.T) {
				t.Parallel()
				tr := p.Tracer(lower)
				cfg := map[string]string{"driver": "sqlite", "url": filepath.Join(t.TempDir(), "trace.db")}
				ev := spi.ExecutionEvent{ID: "e", JobName: "j", TaskID: "t", Hostname: "h", IP: "1.2.3.4", Source: "NORMAL_TRIGGER", StartTime: time.Now()}
				if _, err := tr.Write(t.Context(), spi.TraceWriteRequest{Config: cfg, Executions: []spi.ExecutionEvent{ev}}); err != nil {
					t.Fatal(err)
				}
				page, err := tr.QueryExecutions(t.Context(), spi.ExecutionQuery{Config: cfg, JobName: "j"})
				if err != nil || len(page.Executions) != 1 || page.Executions[0].ID != "e" {
					t.Fatalf("query = %+v, %v", page, err)
				}
			})
		}
	}
}

// TestRuntimeVectorsOverGRPC checks that the strategies' runtime examples
// survive the transport: request order kept, empty item lists present.
func TestRuntimeVectorsOverGRPC(t *testing.T) {
	t.Parallel()
	set := builtin.New(builtin.Options{})
	p := sdktest.Connect(t, sdk.Plugins{Version: builtin.Version, Sharding: set.Sharding})
	instances := []string{"1.2@-@200", "1.1@-@100", "1.10@-@50"}
	tests := map[string]struct {
		typ   string
		job   string
		total int
		want  [][]int
	}{
		"avg":                {"Avg_Allocation", "test_job", 10, [][]int{{0, 1, 2, 9}, {3, 4, 5}, {6, 7, 8}}},
		"odevity_even":       {"odevity", "test_job", 2, [][]int{{}, {1}, {0}}},
		"odevity_odd":        {"ODEVITY", "myJob", 2, [][]int{{0}, {1}, {}}},
		"round_robin":        {"round_robin", "javaSimpleJob", 2, [][]int{{1}, {}, {0}}},
		"round_robin_minint": {"ROUND_ROBIN", "polygenelubricants", 2, [][]int{{}, {0}, {1}}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			resp, err := p.ShardingStrategy(tc.typ).Sharding(t.Context(), spi.ShardingRequest{JobName: tc.job, Instances: instances, ShardingTotalCount: tc.total})
			if err != nil {
				t.Fatalf("Sharding: %v", err)
			}
			if len(resp.Assignments) != len(instances) {
				t.Fatalf("got %d assignments %v, want %d", len(resp.Assignments), resp.Assignments, len(instances))
			}
			for i, a := range resp.Assignments {
				if a.InstanceID != instances[i] || !slices.Equal(a.Items, tc.want[i]) {
					t.Errorf("assignment %d = %s=%v, want %s=%v", i, a.InstanceID, a.Items, instances[i], tc.want[i])
				}
			}
		})
	}
}
