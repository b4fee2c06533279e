package kwoktest

import (
	"context"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	kubernetes "github.com/ejob-io/ejob/plugins/launcher/kubernetes"
	"github.com/ejob-io/ejob/plugins/launcher/kubernetes/internal/testcluster"
	"github.com/hashicorp/go-hclog"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clientset "k8s.io/client-go/kubernetes"
)

// kwokNodes and kwokCPU are the cluster's fake nodes: 3 of 2 CPUs.
const (
	kwokNodes = 3
	kwokCPU   = 2
)

// cluster is the control plane of this package's tests, with kwok nodes
// only.
var cluster struct {
	*testcluster.Cluster
	client clientset.Interface
}

func TestMain(m *testing.M) {
	os.Exit(testcluster.Main(m, "../../../..", "kwok tests", nil,
		[]string{"--nodes", "0", "--kwok-nodes", strconv.Itoa(kwokNodes), "--cpu", strconv.Itoa(kwokCPU), "--memory", "8Gi"},
		200, func(c *testcluster.Cluster, client clientset.Interface) {
			cluster.Cluster, cluster.client = c, client
		}))
}

// newLauncher is a Launcher on the kwok cluster, or skips the test.
func newLauncher(t testing.TB) *kubernetes.Launcher {
	t.Helper()
	if cluster.Skip != "" {
		t.Skip(cluster.Skip)
	}
	l, err := kubernetes.NewWithClient(cluster.client, kubernetes.Config{Namespace: "default",
		Logger: hclog.New(&hclog.LoggerOptions{Name: t.Name(), Level: hclog.Warn, Output: os.Stderr})})
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// kwokFire is a fire of items of cpu each; its image is never pulled.
func kwokFire(t testing.TB, items int, cpu float64) kubernetes.Fire {
	return kubernetes.Fire{
		App:                kubernetes.App{Name: "kwok-app", Image: "example.invalid/app:1", BootstrapScript: "true"},
		JobName:            strings.ToLower(strings.ReplaceAll(t.Name(), "/", "-")),
		FireID:             strconv.FormatInt(time.Now().UnixNano(), 36),
		ShardingTotalCount: items,
		CPUCount:           cpu,
		MemoryMB:           8,
	}
}

// await polls cond every 100 ms for up to within.
func await(t testing.TB, within time.Duration, what string, cond func() (bool, string)) {
	t.Helper()
	last := ""
	for deadline := time.Now().Add(within); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		ok, state := cond()
		if ok {
			return
		}
		last = state
	}
	t.Fatalf("timed out after %v waiting for %s; last: %s", within, what, last)
}

// objects counts the Jobs, StatefulSets and pods of job on the cluster.
func objects(t testing.TB, job string) (jobs, sets, pods int) {
	t.Helper()
	ctx := context.Background()
	sel := metav1.ListOptions{LabelSelector: kubernetes.LabelJob + "=" + job}
	js, err := cluster.client.BatchV1().Jobs("default").List(ctx, sel)
	if err != nil {
		t.Fatal(err)
	}
	ss, err := cluster.client.AppsV1().StatefulSets("default").List(ctx, sel)
	if err != nil {
		t.Fatal(err)
	}
	ps, err := cluster.client.CoreV1().Pods("default").List(ctx, sel)
	if err != nil {
		t.Fatal(err)
	}
	return len(js.Items), len(ss.Items), len(ps.Items)
}
