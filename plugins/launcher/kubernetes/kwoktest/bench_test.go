package kwoktest

import (
	"context"
	"strconv"
	"testing"
	"time"

	kubernetes "github.com/ejob-io/ejob/plugins/launcher/kubernetes"
)

// BenchmarkFire100ItemsKwok measures a fire of 100 items of 0.01 CPU from
// Launch to every item succeeded on kwok's nodes, where nothing runs: the
// control plane's own cost (Job controller, scheduler, status updates)
// and the launcher's reads, reported as ms/fire.
func BenchmarkFire100ItemsKwok(b *testing.B) {
	l := newLauncher(b)
	ctx := context.Background()
	var total time.Duration
	for i := 0; i < b.N; i++ {
		f := kwokFire(b, 100, 0.01)
		f.JobName = "bench-kwok-100"
		f.FireID = "f" + strconv.Itoa(i) + "-" + f.FireID
		began := time.Now()
		if _, err := l.Launch(ctx, f); err != nil {
			b.Fatal(err)
		}
		for {
			st, err := l.Status(ctx, f.JobName, f.FireID)
			if err != nil {
				b.Fatal(err)
			}
			if st.Done() {
				for _, it := range st.Items {
					if it.State != kubernetes.Succeeded {
						b.Fatalf("item %d: %s (%s)", it.Item, it.State, it.Reason)
					}
				}
				break
			}
			time.Sleep(20 * time.Millisecond)
		}
		total += time.Since(began)
		if err := l.Stop(ctx, f.JobName, f.FireID); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(total.Milliseconds())/float64(b.N), "ms/fire")
}
