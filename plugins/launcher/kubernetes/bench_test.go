package kubernetes

import (
	"context"
	"strconv"
	"testing"
	"time"
)

// BenchmarkFireToProcess measures a 1-item fire of an appURL app from
// Launch to the item's process starting on a test node (the fetch init
// container included), reported as ms/fire.
func BenchmarkFireToProcess(b *testing.B) {
	benchFire(b, 1)
}

// BenchmarkFire100Items measures a fire of 100 items of 0.01 CPU from
// Launch to every item succeeded, reported as ms/fire.
func BenchmarkFire100Items(b *testing.B) {
	benchFire(b, 100)
}

func benchFire(b *testing.B, items int) {
	l := newLauncher(b)
	url := serveApp(b, appTarGz(b, recordScript))
	var total time.Duration
	for i := 0; i < b.N; i++ {
		out := b.TempDir()
		f := testFire(b, url, out, 0, items)
		f.JobName = "bench-" + strconv.Itoa(items)
		f.CPUCount, f.MemoryMB = 0.01, 8
		began := time.Now()
		if _, err := l.Launch(context.Background(), f); err != nil {
			b.Fatal(err)
		}
		if items == 1 {
			for len(runs(b, out)) == 0 {
				time.Sleep(20 * time.Millisecond)
			}
			total += time.Duration(runs(b, out)[0].start - began.UnixNano())
		} else {
			st := awaitDone(b, l, f, 5*time.Minute, nil)
			total += time.Since(began)
			for _, it := range st.Items {
				if it.State != Succeeded {
					b.Fatalf("item %d: %s (%s)", it.Item, it.State, it.Reason)
				}
			}
		}
		if err := l.Stop(context.Background(), f.JobName, f.FireID); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(total.Milliseconds())/float64(b.N), "ms/fire")
}
