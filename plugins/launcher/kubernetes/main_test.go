package kubernetes

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/ejob-io/ejob/plugins/launcher/kubernetes/internal/testcluster"
	"github.com/hashicorp/go-hclog"
	clientset "k8s.io/client-go/kubernetes"
)

// cluster is the control plane scripts/k8s.sh starts for this package's
// tests: one node "node-1" of 1 CPU; tests add the nodes they need.
var cluster struct {
	*testcluster.Cluster
	client clientset.Interface
}

func TestMain(m *testing.M) {
	os.Exit(testcluster.Main(m, "../../..", "kubernetes launcher tests", []string{"K8S_NODE_GRACE=8s"},
		[]string{"--nodes", "1", "--cpu", "1", "--memory", "2Gi"}, 100, func(c *testcluster.Cluster, client clientset.Interface) {
			cluster.Cluster, cluster.client = c, client
		}))
}

// newLauncher is a Launcher on the test cluster, or skips the test.
func newLauncher(t testing.TB) *Launcher {
	t.Helper()
	if cluster.Skip != "" {
		t.Skip(cluster.Skip)
	}
	l, err := NewWithClient(cluster.client, Config{Namespace: "default", Logger: hclog.New(&hclog.LoggerOptions{
		Name: t.Name(), Level: hclog.Info, Output: os.Stderr,
	})})
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// k8s runs scripts/k8s.sh with args against the test cluster.
func k8s(t *testing.T, args ...string) {
	t.Helper()
	if err := cluster.Run(nil, args...); err != nil {
		t.Fatal(err)
	}
}

// awaitDone polls the fire's status until every item is final, calling
// each (when not nil) with every status read.
func awaitDone(t testing.TB, l *Launcher, f Fire, within time.Duration, each func(FireStatus)) FireStatus {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), within)
	defer cancel()
	var last FireStatus
	for {
		st, err := l.Status(ctx, f.JobName, f.FireID)
		if err != nil && ctx.Err() == nil {
			t.Fatalf("status: %v", err)
		}
		if err == nil {
			last = st
			if each != nil {
				each(st)
			}
			if st.Done() {
				return st
			}
		}
		select {
		case <-ctx.Done():
			t.Fatalf("fire %s not done within %v; last status %+v", f.FireID, within, last)
		case <-time.After(150 * time.Millisecond):
		}
	}
}

// stopAtEnd stops the fire when the test ends, whatever happened.
func stopAtEnd(t *testing.T, l *Launcher, f Fire) {
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		if err := l.Stop(ctx, f.JobName, f.FireID); err != nil {
			t.Errorf("stop %s: %v", f.FireID, err)
		}
	})
}
