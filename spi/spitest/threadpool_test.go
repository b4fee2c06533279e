package spitest_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ejob-io/ejob/spi"
	"github.com/ejob-io/ejob/spi/spitest"
)

// funcPool adapts a function to spi.ThreadPoolSizeProvider.
type funcPool func(req spi.PoolSizeRequest) int

func (f funcPool) PoolSize(ctx context.Context, req spi.PoolSizeRequest) (spi.PoolSizeResponse, error) {
	return spi.PoolSizeResponse{Size: f(req)}, nil
}

func TestThreadPoolSuitePassesReference(t *testing.T) {
	t.Parallel()
	ref := funcPool(func(req spi.PoolSizeRequest) int { return max(req.AvailableCPUs, 1) * 2 })
	spitest.TestThreadPoolSizeProvider(t, ref)
	expectAllChecksPass[spi.ThreadPoolSizeProvider](t, ref, spitest.ThreadPoolSizeProviderChecks())
}

func TestThreadPoolChecksCatchBrokenImplementations(t *testing.T) {
	t.Parallel()
	var counter, inflight atomic.Int64
	tests := map[string]struct {
		impl      spi.ThreadPoolSizeProvider
		wantFails string
	}{
		"zero_for_zero_cpus": {
			impl:      funcPool(func(req spi.PoolSizeRequest) int { return req.AvailableCPUs * 2 }),
			wantFails: "size_at_least_one",
		},
		"nondeterministic": {
			impl:      funcPool(func(req spi.PoolSizeRequest) int { return 1 + int(counter.Add(1)%2) }),
			wantFails: "deterministic",
		},
		"wrong_under_concurrency": {
			impl: funcPool(func(req spi.PoolSizeRequest) int {
				n := inflight.Add(1)
				defer inflight.Add(-1)
				time.Sleep(time.Millisecond) // widen the window in which calls overlap
				if n > 1 || inflight.Load() > 1 {
					return 7
				}
				return 1
			}),
			wantFails: "concurrent_calls",
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			expectCheckFails(t, tc.impl, spitest.ThreadPoolSizeProviderChecks(), tc.wantFails)
		})
	}
}
