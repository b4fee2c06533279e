package kubernetes

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	clientset "k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
)

// TestRBACManifestSuffices applies examples/cloud/rbac.yaml and runs the
// launcher as its service account (the admin impersonating it, so every
// call is authorized by that account's roles only): a TRANSIENT fire and
// a DAEMON job run in the manifest's namespace, are listed (a DAEMON
// item's fires read from its pod's log) and stopped.
// A verb the launcher uses and the manifest lacks fails this test.
func TestRBACManifestSuffices(t *testing.T) {
	if cluster.Skip != "" {
		t.Skip(cluster.Skip)
	}
	bin, err := exec.Command("bash", cluster.Script, "bin").Output()
	if err != nil {
		t.Fatalf("k8s.sh bin: %v", err)
	}
	kubectl := filepath.Join(strings.TrimSpace(string(bin)), "kubectl")
	manifest, err := filepath.Abs("../../../examples/cloud/rbac.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(kubectl, "--kubeconfig", cluster.Kubeconfig, "apply", "-f", manifest).CombinedOutput(); err != nil {
		t.Fatalf("kubectl apply: %v\n%s", err, out)
	}
	t.Cleanup(func() {
		_ = exec.Command(kubectl, "--kubeconfig", cluster.Kubeconfig, "delete", "--wait=false", "-f", manifest).Run()
	})
	rc, err := clientcmd.BuildConfigFromFlags("", cluster.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	rc.Impersonate.UserName = "system:serviceaccount:ejob-jobs:ejob-cloud"
	client, err := clientset.NewForConfig(rc)
	if err != nil {
		t.Fatal(err)
	}
	l, err := NewWithClient(client, Config{Namespace: "ejob-jobs", Logger: hclog.New(&hclog.LoggerOptions{Name: t.Name(), Output: os.Stderr})})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()

	// Pods need the namespace's default service account, which the
	// controller manager creates shortly after the namespace.
	out := t.TempDir()
	f := testFire(t, serveApp(t, appTarGz(t, recordScript)), out, 0, 2)
	deadline := time.Now().Add(60 * time.Second)
	for {
		_, err := l.Launch(ctx, f)
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("launch as the manifest's service account: %v", err)
		}
		time.Sleep(500 * time.Millisecond)
	}
	stopAtEnd(t, l, f)
	st := awaitDone(t, l, f, 90*time.Second, nil)
	for _, it := range st.Items {
		if it.State != Succeeded {
			t.Errorf("item %d: %s (%s)", it.Item, it.State, it.Reason)
		}
	}
	if listed, err := l.List(ctx, f.JobName); err != nil || len(listed) != 1 {
		t.Errorf("List = %+v, %v; want the fire", listed, err)
	}

	d := testFire(t, serveApp(t, appTarGz(t, recordScript)), t.TempDir(), 600, 1)
	d.JobName += "-daemon"
	if _, err := l.LaunchDaemon(ctx, d); err != nil {
		t.Fatalf("launch daemon: %v", err)
	}
	d.ShardingTotalCount = 2
	if _, err := l.LaunchDaemon(ctx, d); err != nil {
		t.Fatalf("reshard daemon: %v", err)
	}
	// A DAEMON item's fires are read from its pod's log (pods/log): an
	// item that reports no fire is idle only when that read works.
	await(t, 90*time.Second, "both daemon items running and reported idle", func() bool {
		items, err := l.ListItems(ctx, d.JobName)
		if err != nil {
			t.Fatalf("list daemon items: %v", err)
		}
		idle := 0
		for _, it := range items {
			if it.State == Running && it.Idle {
				idle++
			}
		}
		return idle == 2
	})
	if err := l.StopJob(ctx, d.JobName); err != nil {
		t.Fatalf("stop daemon: %v", err)
	}
	if err := l.Stop(ctx, f.JobName, f.FireID); err != nil {
		t.Fatalf("stop fire: %v", err)
	}
}
