package transport_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/ejob-io/ejob/internal/transport"
	"github.com/ejob-io/ejob/spi"
)

// latencies collects per-op durations and reports their p50 and p99.
type latencies []time.Duration

func (l latencies) report(b *testing.B, unit string) {
	if len(l) == 0 {
		return
	}
	slices.Sort(l)
	div := map[string]float64{"ms": float64(time.Millisecond), "µs": float64(time.Microsecond)}[unit]
	b.ReportMetric(float64(l[len(l)/2])/div, "p50-"+unit)
	b.ReportMetric(float64(l[(len(l)*99)/100])/div, "p99-"+unit)
}

// BenchmarkStart measures spawn + AutoMTLS handshake + Info.
func BenchmarkStart(b *testing.B) {
	var lat latencies
	for b.Loop() {
		start := time.Now()
		p, err := transport.Launch(context.Background(), transport.LaunchConfig{Path: bins.plugin})
		if err != nil {
			b.Fatal(err)
		}
		lat = append(lat, time.Since(start))
		b.StopTimer()
		p.Kill()
		b.StartTimer()
	}
	lat.report(b, "ms")
}

type directPool struct{}

func (directPool) PoolSize(_ context.Context, req spi.PoolSizeRequest) (spi.PoolSizeResponse, error) {
	return spi.PoolSizeResponse{Size: req.AvailableCPUs * 2}, nil
}

// BenchmarkPoolSize compares a small call out of process with a direct call.
func BenchmarkPoolSize(b *testing.B) {
	run := func(b *testing.B, pool spi.ThreadPoolSizeProvider) {
		ctx := context.Background()
		req := spi.PoolSizeRequest{JobName: "bench", AvailableCPUs: 2}
		lat := make(latencies, 0, 1<<16)
		for b.Loop() {
			start := time.Now()
			if _, err := pool.PoolSize(ctx, req); err != nil {
				b.Fatal(err)
			}
			lat = append(lat, time.Since(start))
		}
		lat.report(b, "µs")
	}
	b.Run("out-of-process", func(b *testing.B) {
		p, _ := launch(b, bins.plugin)
		run(b, p.Conn().ThreadPoolSizeProvider("TEST_POOL"))
	})
	b.Run("in-process", func(b *testing.B) {
		run(b, directPool{})
	})
}

// BenchmarkSharding1000x10000 shards 10,000 items over 1,000 instances out
// of process (request and response each cross the wire once).
func BenchmarkSharding1000x10000(b *testing.B) {
	p, _ := launch(b, bins.plugin)
	s := p.Conn().ShardingStrategy("TEST_AVG")
	instances := make([]string, 1000)
	for i := range instances {
		instances[i] = fmt.Sprintf("192.168.%d.%d@-@%d", i/250, i%250, 10000+i)
	}
	req := spi.ShardingRequest{JobName: "bench", Instances: instances, ShardingTotalCount: 10000}
	ctx := context.Background()
	var lat latencies
	for b.Loop() {
		start := time.Now()
		resp, err := s.Sharding(ctx, req)
		if err != nil {
			b.Fatal(err)
		}
		lat = append(lat, time.Since(start))
		if len(resp.Assignments) != 1000 {
			b.Fatalf("%d assignments", len(resp.Assignments))
		}
	}
	lat.report(b, "ms")
}
