package threadpoolbuiltin_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	threadpoolbuiltin "github.com/ejob-io/ejob/plugins/threadpool/builtin"
	"github.com/ejob-io/ejob/spi"
	"github.com/ejob-io/ejob/spi/spitest"
)

func TestPoolSize(t *testing.T) {
	t.Parallel()
	cpu, single := threadpoolbuiltin.NewCPU(), threadpoolbuiltin.NewSingleThread()
	tests := map[string]struct {
		p    spi.ThreadPoolSizeProvider
		cpus int
		want int
	}{
		"cpu/1":             {cpu, 1, 2},
		"cpu/4":             {cpu, 4, 8},
		"cpu/48":            {cpu, 48, 96},
		"cpu/0_counts_as_1": {cpu, 0, 2},
		"cpu/negative":      {cpu, -3, 2},
		"single/1":          {single, 1, 1},
		"single/64":         {single, 64, 1},
		"single/0":          {single, 0, 1},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			resp, err := tc.p.PoolSize(t.Context(), spi.PoolSizeRequest{JobName: "test_job", AvailableCPUs: tc.cpus})
			if err != nil {
				t.Fatalf("PoolSize: %v", err)
			}
			if resp.Size != tc.want {
				t.Errorf("PoolSize(cpus=%d) = %d, want %d", tc.cpus, resp.Size, tc.want)
			}
		})
	}
}

func TestCancelled(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	for name, p := range threadpoolbuiltin.Providers() {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			if _, err := p.PoolSize(ctx, spi.PoolSizeRequest{AvailableCPUs: 2}); !errors.Is(err, context.Canceled) {
				t.Errorf("got %v, want context.Canceled", err)
			}
		})
	}
}

func TestProvidersConform(t *testing.T) {
	t.Parallel()
	providers := threadpoolbuiltin.Providers()
	if len(providers) != 2 || providers["CPU"] == nil || providers["SINGLE_THREAD"] == nil {
		t.Fatalf("Providers() = %v, want CPU and SINGLE_THREAD", providers)
	}
	for name, p := range providers {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			spitest.TestThreadPoolSizeProvider(t, p)
		})
	}
}

func ExampleCPU() {
	resp, _ := threadpoolbuiltin.NewCPU().PoolSize(context.Background(), spi.PoolSizeRequest{JobName: "test_job", AvailableCPUs: 4})
	fmt.Println(resp.Size)
	// Output: 8
}
