package kubernetes

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	clientset "k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
)

// testCluster is the control plane scripts/k8s.sh starts for this
// package's tests: one node "node-1" of 1 CPU; tests add nodes they need.
type testCluster struct {
	dir    string
	script string
	client clientset.Interface
	skip   string
}

var cluster testCluster

func TestMain(m *testing.M) {
	os.Exit(runTests(m))
}

func runTests(m *testing.M) int {
	root, err := filepath.Abs("../../..")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	cluster.script = filepath.Join(root, "scripts", "k8s.sh")
	if exec.Command("bash", cluster.script, "bin").Run() != nil && os.Getenv("EJOB_K8S_BUILD") == "" {
		cluster.skip = "the Kubernetes binaries are not cached (scripts/k8s.sh build, or set EJOB_K8S_BUILD=1 to build them now)"
		fmt.Fprintln(os.Stderr, "kubernetes launcher tests skipped: "+cluster.skip)
		return m.Run()
	}
	dir, err := os.MkdirTemp("", "ejob-k8s-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	cluster.dir = dir
	start := time.Now()
	cmd := exec.Command("bash", cluster.script, "start", dir, "--nodes", "1", "--cpu", "1", "--memory", "2Gi")
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	cmd.Env = append(os.Environ(), "EJOB_OWNER_PID="+strconv.Itoa(os.Getpid()), "K8S_NODE_GRACE=8s")
	defer func() {
		stop := exec.Command("bash", cluster.script, "stop", dir)
		stop.Stdout, stop.Stderr = os.Stderr, os.Stderr
		if err := stop.Run(); err != nil {
			fmt.Fprintln(os.Stderr, "k8s.sh stop:", err)
		}
		if os.Getenv("EJOB_K8S_KEEP") == "" {
			_ = os.RemoveAll(dir)
		}
	}()
	if err := cmd.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "k8s.sh start:", err)
		return 1
	}
	fmt.Fprintf(os.Stderr, "test cluster up in %.1f s (%s)\n", time.Since(start).Seconds(), dir)
	rc, err := clientcmd.BuildConfigFromFlags("", filepath.Join(dir, "kubeconfig"))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	rc.QPS, rc.Burst = 100, 200
	if cluster.client, err = clientset.NewForConfig(rc); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return m.Run()
}

// newLauncher is a Launcher on the test cluster, or skips the test.
func newLauncher(t *testing.T) *Launcher {
	t.Helper()
	if cluster.skip != "" {
		t.Skip(cluster.skip)
	}
	return NewWithClient(cluster.client, "default", "", hclog.New(&hclog.LoggerOptions{
		Name: t.Name(), Level: hclog.Info, Output: os.Stderr,
	}))
}

// k8s runs scripts/k8s.sh with args against the test cluster.
func k8s(t *testing.T, args ...string) {
	t.Helper()
	cmd := exec.Command("bash", append([]string{cluster.script}, args...)...)
	cmd.Env = append(os.Environ(), "EJOB_OWNER_PID="+strconv.Itoa(os.Getpid()))
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("k8s.sh %v: %v\n%s", args, err, out)
	}
}

// awaitDone polls the fire's status until every item is final, calling
// each (when not nil) with every status read.
func awaitDone(t *testing.T, l *Launcher, f Fire, within time.Duration, each func(FireStatus)) FireStatus {
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
