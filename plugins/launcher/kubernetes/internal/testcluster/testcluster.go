// Package testcluster starts the test Kubernetes control plane of
// scripts/k8s.sh for a test binary's TestMain: etcd, the API server, the
// controller manager, the scheduler and test nodes, stopped again when the
// tests end (and, through EJOB_OWNER_PID, when the test binary dies).
package testcluster

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"time"

	clientset "k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
)

// Cluster is a running test cluster, or the reason there is none.
type Cluster struct {
	// Script is scripts/k8s.sh; Dir holds the cluster's files and
	// Kubeconfig its admin kubeconfig.
	Script, Dir, Kubeconfig string
	// Skip, when not empty, says why no cluster is there: the binaries
	// (or kwok, for a cluster with kwok nodes) are not cached and
	// EJOB_K8S_BUILD is unset.
	Skip string
}

// Start starts a cluster with k8s.sh start's args (--nodes, --cpu,
// --memory, --kwok-nodes); root is the repository's top directory. stop
// stops it and removes its directory (kept when EJOB_K8S_KEEP is set); it
// is never nil.
func Start(root string, env []string, args ...string) (c *Cluster, stop func(), err error) {
	c = &Cluster{Script: filepath.Join(root, "scripts", "k8s.sh")}
	stop = func() {}
	if exec.Command("bash", c.Script, "bin").Run() != nil && os.Getenv("EJOB_K8S_BUILD") == "" {
		c.Skip = "the Kubernetes binaries are not cached (scripts/k8s.sh build, or set EJOB_K8S_BUILD=1 to build them now)"
		return c, stop, nil
	}
	if slices.Contains(args, "--kwok-nodes") && exec.Command("bash", c.Script, "kwok-bin").Run() != nil && os.Getenv("EJOB_K8S_BUILD") == "" {
		c.Skip = "kwok is not cached (scripts/k8s.sh build, or set EJOB_K8S_BUILD=1 to build it now)"
		return c, stop, nil
	}
	if c.Dir, err = os.MkdirTemp("", "ejob-k8s-test-"); err != nil {
		return nil, stop, err
	}
	stop = func() {
		if err := c.Run(os.Stderr, "stop", c.Dir); err != nil {
			fmt.Fprintln(os.Stderr, "k8s.sh stop:", err)
		}
		if os.Getenv("EJOB_K8S_KEEP") == "" {
			_ = os.RemoveAll(c.Dir)
		}
	}
	began := time.Now()
	cmd := c.command(append([]string{"start", c.Dir}, args...)...)
	cmd.Env = append(cmd.Env, env...)
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		return c, stop, fmt.Errorf("k8s.sh start: %w", err)
	}
	fmt.Fprintf(os.Stderr, "test cluster up in %.1f s (%s)\n", time.Since(began).Seconds(), c.Dir)
	c.Kubeconfig = filepath.Join(c.Dir, "kubeconfig")
	return c, stop, nil
}

func (c *Cluster) command(args ...string) *exec.Cmd {
	cmd := exec.Command("bash", append([]string{c.Script}, args...)...)
	cmd.Env = append(os.Environ(), "EJOB_OWNER_PID="+strconv.Itoa(os.Getpid()))
	return cmd
}

// Run runs k8s.sh with args, its output to out (its error carries the
// output when out is nil).
func (c *Cluster) Run(out *os.File, args ...string) error {
	cmd := c.command(args...)
	if out != nil {
		cmd.Stdout, cmd.Stderr = out, out
		return cmd.Run()
	}
	if b, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("k8s.sh %v: %w\n%s", args, err, b)
	}
	return nil
}

// Client is an admin client of the cluster, rate-limited to qps requests
// a second (burst twice that) instead of client-go's 5, so that tests that
// poll many objects are not held back.
func (c *Cluster) Client(qps float32) (clientset.Interface, error) {
	rc, err := clientcmd.BuildConfigFromFlags("", c.Kubeconfig)
	if err != nil {
		return nil, fmt.Errorf("kubeconfig %s: %w", c.Kubeconfig, err)
	}
	rc.QPS, rc.Burst = qps, int(2*qps)
	cs, err := clientset.NewForConfig(rc)
	if err != nil {
		return nil, fmt.Errorf("client of %s: %w", c.Kubeconfig, err)
	}
	return cs, nil
}

// Main is a TestMain's body: it starts a cluster (Start's env and args;
// root is the repository's top directory), hands it and a client of qps
// requests a second to use, runs the tests and stops the cluster. When
// the binaries are not cached the tests run with c.Skip set and a nil
// client (what names the tests in the message saying so). It returns the
// exit code.
func Main(m *testing.M, root, what string, env []string, args []string, qps float32, use func(*Cluster, clientset.Interface)) int {
	root, err := filepath.Abs(root)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	c, stop, err := Start(root, env, args...)
	defer stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if c.Skip != "" {
		fmt.Fprintln(os.Stderr, what+" skipped: "+c.Skip)
		use(c, nil)
		return m.Run()
	}
	client, err := c.Client(qps)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	use(c, client)
	return m.Run()
}
