package spitest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/ejob-io/ejob/spi"
)

// TestThreadPoolSizeProvider runs every check of ThreadPoolSizeProviderChecks
// against p, each as a subtest of t.
func TestThreadPoolSizeProvider(t *testing.T, p spi.ThreadPoolSizeProvider) {
	t.Helper()
	RunChecks(t, p, ThreadPoolSizeProviderChecks())
}

// poolCPUs are the AvailableCPUs values the thread-pool checks send,
// including values a confused caller might pass (0, negative).
func poolCPUs() []int { return []int{-1, 0, 1, 2, 3, 4, 8, 64, 1024} }

// ThreadPoolSizeProviderChecks returns the conformance checks of the
// spi.ThreadPoolSizeProvider contract:
//
//   - size_at_least_one: Size >= 1 for AvailableCPUs from -1 to 1024;
//   - deterministic: the same request twice gives the same size;
//   - concurrent_calls: many goroutines calling at once get the lone
//     caller's answers.
func ThreadPoolSizeProviderChecks() []Check[spi.ThreadPoolSizeProvider] {
	return []Check[spi.ThreadPoolSizeProvider]{
		{Name: "size_at_least_one", Run: func(ctx context.Context, p spi.ThreadPoolSizeProvider) error {
			for _, cpus := range poolCPUs() {
				name := fmt.Sprintf("cpus=%d", cpus)
				resp, err := p.PoolSize(ctx, spi.PoolSizeRequest{JobName: "test_job", AvailableCPUs: cpus})
				if err != nil {
					return caseErr(name, "PoolSize returned error: %v", err)
				}
				if resp.Size < 1 {
					return caseErr(name, "PoolSize answered Size=%d, want >= 1", resp.Size)
				}
			}
			return nil
		}},
		{Name: "deterministic", Run: func(ctx context.Context, p spi.ThreadPoolSizeProvider) error {
			for _, cpus := range poolCPUs() {
				name := fmt.Sprintf("cpus=%d", cpus)
				req := spi.PoolSizeRequest{JobName: "test_job", AvailableCPUs: cpus}
				a, err1 := p.PoolSize(ctx, req)
				b, err2 := p.PoolSize(ctx, req)
				if err1 != nil || err2 != nil {
					return caseErr(name, "PoolSize returned errors %v, %v", err1, err2)
				}
				if a != b {
					return caseErr(name, "two calls with the same request answered %d and %d", a.Size, b.Size)
				}
			}
			return nil
		}},
		{Name: "concurrent_calls", Run: func(ctx context.Context, p spi.ThreadPoolSizeProvider) error {
			cpus := poolCPUs()
			want := make([]int, len(cpus))
			for i, c := range cpus {
				resp, err := p.PoolSize(ctx, spi.PoolSizeRequest{JobName: "test_job", AvailableCPUs: c})
				if err != nil {
					return caseErr(fmt.Sprintf("cpus=%d", c), "PoolSize returned error: %v", err)
				}
				want[i] = resp.Size
			}
			errs := make([]error, concurrency)
			var wg sync.WaitGroup
			for g := range concurrency {
				wg.Go(func() {
					for k := range cpus {
						i := (k + g) % len(cpus)
						name := fmt.Sprintf("cpus=%d/goroutine=%d", cpus[i], g)
						resp, err := p.PoolSize(ctx, spi.PoolSizeRequest{JobName: "test_job", AvailableCPUs: cpus[i]})
						if err != nil {
							errs[g] = caseErr(name, "PoolSize returned error: %v", err)
							return
						}
						if resp.Size != want[i] {
							errs[g] = caseErr(name, "concurrent answer %d differs from the lone caller's %d", resp.Size, want[i])
							return
						}
					}
				})
			}
			wg.Wait()
			return errors.Join(errs...)
		}},
	}
}
