package shardingbuiltin_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	shardingbuiltin "github.com/ejob-io/ejob/plugins/sharding/builtin"
	"github.com/ejob-io/ejob/spi"
	"github.com/ejob-io/ejob/spi/spitest"
)

// hosts are upstream's test instances host0@-@0, host1@-@0, ... in list order.
func hosts(n int) []string {
	ids := make([]string, n)
	for i := range ids {
		ids[i] = fmt.Sprintf("host%d@-@0", i)
	}
	return ids
}

// runtimeIDs is the ZooKeeper order of the runtime examples (descending
// string order, so 1.10 comes last).
var runtimeIDs = []string{"1.2@-@200", "1.1@-@100", "1.10@-@50"}

type vector struct {
	strategy  spi.ShardingStrategy
	jobName   string
	instances []string
	total     int
	// want lists each instance's items in request order.
	want [][]int
}

// TestUpstreamVectors checks every vector of the strategies: the upstream
// unit tests and the runtime examples.
func TestUpstreamVectors(t *testing.T) {
	t.Parallel()
	avg, odd, rr := shardingbuiltin.NewAverageAllocation(), shardingbuiltin.NewOdevity(), shardingbuiltin.NewRoundRobin()
	tests := map[string]vector{
		// AverageAllocationJobShardingStrategyTest
		"avg/empty":           {avg, "test_job", nil, 3, [][]int{}},
		"avg/one_instance":    {avg, "test_job", hosts(1), 3, [][]int{{0, 1, 2}}},
		"avg/fewer_items":     {avg, "test_job", hosts(3), 2, [][]int{{0}, {1}, {}}},
		"avg/divisible":       {avg, "test_job", hosts(3), 9, [][]int{{0, 1, 2}, {3, 4, 5}, {6, 7, 8}}},
		"avg/not_divisible_8": {avg, "test_job", hosts(3), 8, [][]int{{0, 1, 6}, {2, 3, 7}, {4, 5}}},
		"avg/not_divisible_10": {avg, "test_job", hosts(3), 10,
			[][]int{{0, 1, 2, 9}, {3, 4, 5}, {6, 7, 8}}},
		"avg/runtime_order": {avg, "test_job", runtimeIDs, 10, [][]int{{0, 1, 2, 9}, {3, 4, 5}, {6, 7, 8}}},

		// OdevitySortByNameJobShardingStrategyTest
		"odevity/asc_odd_hash_1":   {odd, "1", hosts(3), 2, [][]int{{0}, {1}, {}}},
		"odevity/desc_even_hash_0": {odd, "0", hosts(3), 2, [][]int{{}, {1}, {0}}},
		"odevity/runtime_test_job": {odd, "test_job", runtimeIDs, 2, [][]int{{}, {1}, {0}}},
		"odevity/runtime_myJob":    {odd, "myJob", runtimeIDs, 2, [][]int{{0}, {1}, {}}},

		// RotateServerByNameJobShardingStrategyTest
		"round_robin/offset_1":              {rr, "1", hosts(3), 2, [][]int{{}, {0}, {1}}},
		"round_robin/offset_2":              {rr, "2", hosts(3), 2, [][]int{{1}, {}, {0}}},
		"round_robin/offset_0":              {rr, "3", hosts(3), 2, [][]int{{0}, {1}, {}}},
		"round_robin/runtime_javaSimpleJob": {rr, "javaSimpleJob", runtimeIDs, 2, [][]int{{1}, {}, {0}}},

		// MinInt32 hash: upstream throws with n=3; the fix uses offset 1.
		"round_robin/min_int32_n3": {rr, "polygenelubricants", hosts(3), 2, [][]int{{}, {0}, {1}}},
		// With n a power of two upstream's offset is 0, and so is ours.
		"round_robin/min_int32_n4": {rr, "polygenelubricants", hosts(4), 4, [][]int{{0}, {1}, {2}, {3}}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			req := spi.ShardingRequest{JobName: tc.jobName, Instances: slices.Clone(tc.instances), ShardingTotalCount: tc.total}
			resp, err := tc.strategy.Sharding(t.Context(), req)
			if err != nil {
				t.Fatalf("Sharding: %v", err)
			}
			if diff := diffAssignments(tc.instances, tc.want, resp.Assignments); diff != "" {
				t.Errorf("Sharding(job=%q, instances=%q, total=%d):\n%s", tc.jobName, tc.instances, tc.total, diff)
			}
		})
	}
}

// diffAssignments compares got with want (items per instance, request
// order) and describes every difference.
func diffAssignments(instances []string, want [][]int, got []spi.Assignment) string {
	var b strings.Builder
	if len(got) != len(want) {
		fmt.Fprintf(&b, "got %d assignments, want %d\n", len(got), len(want))
	}
	for i := range min(len(got), len(want)) {
		if got[i].InstanceID != instances[i] {
			fmt.Fprintf(&b, "assignment %d: instance %q, want %q (request order)\n", i, got[i].InstanceID, instances[i])
		}
		if !slices.Equal(got[i].Items, want[i]) {
			fmt.Fprintf(&b, "%s: items %v, want %v\n", instances[i], got[i].Items, want[i])
		}
	}
	return b.String()
}

func TestStrategiesConform(t *testing.T) {
	t.Parallel()
	for name, s := range shardingbuiltin.Strategies() {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			spitest.TestShardingStrategy(t, s)
		})
	}
}

func TestStrategiesKeyedByNormalizedType(t *testing.T) {
	t.Parallel()
	got := shardingbuiltin.Strategies()
	for _, name := range []string{"AVG_ALLOCATION", "ODEVITY", "ROUND_ROBIN"} {
		if got[name] == nil {
			t.Errorf("Strategies() lacks %s", name)
		}
	}
	for name := range got {
		if spi.NormalizeType(name) != name {
			t.Errorf("key %q is not in normalised form", name)
		}
	}
	if len(got) != 3 {
		t.Errorf("Strategies() has %d entries, want 3", len(got))
	}
}

func TestInvalidRequests(t *testing.T) {
	t.Parallel()
	cancelled, cancel := context.WithCancel(t.Context())
	cancel()
	tests := map[string]struct {
		ctx     context.Context
		req     spi.ShardingRequest
		wantErr error
		wantMsg string
	}{
		"zero_total": {
			req:     spi.ShardingRequest{JobName: "j", Instances: hosts(2), ShardingTotalCount: 0},
			wantErr: spi.ErrInvalidConfig, wantMsg: `job "j": shardingTotalCount is 0, must be positive`,
		},
		"negative_total_no_instances": {
			req:     spi.ShardingRequest{JobName: "j", ShardingTotalCount: -3},
			wantErr: spi.ErrInvalidConfig, wantMsg: "shardingTotalCount is -3",
		},
		"duplicate_instance": {
			req:     spi.ShardingRequest{JobName: "j", Instances: []string{"a@-@1", "b@-@2", "a@-@1"}, ShardingTotalCount: 3},
			wantErr: spi.ErrInvalidConfig, wantMsg: `instance id "a@-@1" appears twice (positions 0 and 2)`,
		},
		"cancelled": {
			ctx:     cancelled,
			req:     spi.ShardingRequest{JobName: "j", Instances: hosts(2), ShardingTotalCount: 3},
			wantErr: context.Canceled,
		},
	}
	for name, tc := range tests {
		for typ, s := range shardingbuiltin.Strategies() {
			t.Run(name+"/"+typ, func(t *testing.T) {
				t.Parallel()
				ctx := tc.ctx
				if ctx == nil {
					ctx = t.Context()
				}
				_, err := s.Sharding(ctx, tc.req)
				if !errors.Is(err, tc.wantErr) {
					t.Fatalf("got error %v, want one wrapping %v", err, tc.wantErr)
				}
				if !strings.Contains(err.Error(), tc.wantMsg) {
					t.Errorf("error %q does not say %q", err, tc.wantMsg)
				}
				if tc.wantErr == spi.ErrInvalidConfig && !strings.HasPrefix(err.Error(), typ+" sharding") {
					t.Errorf("error %q does not name the strategy %s", err, typ)
				}
			})
		}
	}
}

func TestEmptyInstances(t *testing.T) {
	t.Parallel()
	for typ, s := range shardingbuiltin.Strategies() {
		t.Run(typ, func(t *testing.T) {
			t.Parallel()
			resp, err := s.Sharding(t.Context(), spi.ShardingRequest{JobName: "j", ShardingTotalCount: 5})
			if err != nil || len(resp.Assignments) != 0 {
				t.Errorf("got %v, %v; want an empty response", resp, err)
			}
		})
	}
}
