// Command nodeagent is a test-only Kubernetes node without containers: it
// registers a Node with the CPU and memory it is given, renews the node's
// Lease, and runs every pod the scheduler binds to it as host processes:
// the init containers' commands first, in order, then the containers'
// commands, each with the pod's environment (JOB_COMPLETION_INDEX included:
// field references to the pod's metadata are resolved). It reports the pod
// Running, then Succeeded or Failed with each container's real exit code,
// and stops a pod's processes when the pod is deleted.
//
// Images are not pulled and not used: a container must have a command, and
// it runs on the host. Each pod gets a directory of its own; an emptyDir
// volume is a subdirectory of it, a hostPath volume its path under the
// node's filesystem, -dir's host/ subdirectory (kept across pods, apart
// from other nodes'); a container's workingDir and every environment value
// that starts with a volume mount's path are rewritten to the volume's
// directory, so pods share files through $VAR/... paths. Each container's
// output goes to a file of the pod's directory, served as the kubelet
// serves it (pods/log, kubectl logs) on the Node's kubelet endpoint.
//
// Killing the agent with SIGKILL (together with its session, see
// scripts/k8s.sh kill-node) is a node's death: the Lease stops being
// renewed and the node lifecycle controller marks the node NotReady.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/hashicorp/go-hclog"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
)

func main() {
	var cfg agentConfig
	var cpu, memory string
	flag.StringVar(&cfg.kubeconfig, "kubeconfig", "", "kubeconfig of the cluster (required)")
	flag.StringVar(&cfg.name, "name", "", "node name (required)")
	flag.StringVar(&cpu, "cpu", "1", "CPU capacity of the node (a Kubernetes quantity)")
	flag.StringVar(&memory, "memory", "1Gi", "memory capacity of the node (a Kubernetes quantity)")
	flag.IntVar(&cfg.maxPods, "pods", 110, "pod capacity of the node")
	flag.StringVar(&cfg.dir, "dir", "", "directory for the pods' directories (required)")
	flag.DurationVar(&cfg.heartbeat, "heartbeat", 2*time.Second, "Lease renewal interval")
	flag.Parse()
	log := hclog.New(&hclog.LoggerOptions{Name: "nodeagent", Output: os.Stderr, Level: hclog.Info})
	if err := run(cfg, cpu, memory, log); err != nil {
		log.Error("node agent failed", "node", cfg.name, "error", err)
		os.Exit(1)
	}
}

func run(cfg agentConfig, cpu, memory string, log hclog.Logger) error {
	if cfg.kubeconfig == "" || cfg.name == "" || cfg.dir == "" {
		return fmt.Errorf("-kubeconfig, -name and -dir are required")
	}
	var err error
	if cfg.cpu, err = resource.ParseQuantity(cpu); err != nil {
		return fmt.Errorf("-cpu %q: %w", cpu, err)
	}
	if cfg.memory, err = resource.ParseQuantity(memory); err != nil {
		return fmt.Errorf("-memory %q: %w", memory, err)
	}
	if cfg.dir, err = filepath.Abs(cfg.dir); err != nil {
		return fmt.Errorf("-dir: %w", err)
	}
	rc, err := clientcmd.BuildConfigFromFlags("", cfg.kubeconfig)
	if err != nil {
		return fmt.Errorf("kubeconfig %s: %w", cfg.kubeconfig, err)
	}
	// client-go's default rate limit (5 requests/s) would queue the Lease
	// renewal behind the status updates of many pods, and a node whose
	// Lease is late is marked NotReady and its pods evicted.
	rc.QPS, rc.Burst = 500, 1000
	client, err := kubernetes.NewForConfig(rc)
	if err != nil {
		return fmt.Errorf("client for %s: %w", cfg.kubeconfig, err)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	a := newAgent(cfg, client, log.With("node", cfg.name))
	return a.run(ctx)
}
