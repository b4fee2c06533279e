package cli_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"golang.org/x/crypto/bcrypt"

	"github.com/ejob-io/ejob/core/node"
	"github.com/ejob-io/ejob/core/reg"
	"github.com/ejob-io/ejob/core/reg/zktest"
	"github.com/ejob-io/ejob/core/reg/zookeeper"
	"github.com/ejob-io/ejob/host/cli"
	"github.com/ejob-io/ejob/internal/testkit"
)

// apiClient calls an ejob serve's REST API as one user.
type apiClient struct {
	t     *testing.T
	base  string
	token string
}

func (a *apiClient) call(method, path string, body any) (int, map[string]any) {
	a.t.Helper()
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, _ := http.NewRequest(method, a.base+path, rd)
	req.Header.Set("Content-Type", "application/json")
	if a.token != "" {
		req.Header.Set("Access-Token", a.token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		a.t.Fatal(err)
	}
	defer resp.Body.Close()
	var env map[string]any
	data, _ := io.ReadAll(resp.Body)
	if err := json.Unmarshal(data, &env); err != nil {
		a.t.Fatalf("%s %s: %s: %s", method, path, resp.Status, data)
	}
	return testkit.APIStatus(resp.StatusCode, data), env
}

func login(t *testing.T, base, user, pw string) *apiClient {
	t.Helper()
	a := &apiClient{t: t, base: base}
	st, env := a.call("POST", "/api/login", map[string]string{"username": user, "password": pw})
	if st != http.StatusOK {
		t.Fatalf("login %s: %d %v", user, st, env)
	}
	a.token = env["model"].(map[string]any)["accessToken"].(string)
	return a
}

// jobNames is the namespace's job list as the API answers it.
func (a *apiClient) jobNames() string {
	a.t.Helper()
	st, env := a.call("GET", "/api/jobs/getAllJobsBriefInfo", nil)
	if st != http.StatusOK {
		a.t.Fatalf("jobs: %d %v", st, env)
	}
	var names []string
	for _, j := range env["model"].([]any) {
		names = append(names, j.(map[string]any)["jobName"].(string))
	}
	return strings.Join(names, ",")
}

// TestServeSwitchesNamespaces: ejob serve, started on one namespace of a
// real ZooKeeper, adds a second in its namespaces file (0600, digest
// masked when listed), switches to it without a restart (reads from its
// registry, writes to it), refuses a guest's writes and
// an unreachable registry, and switches back.
func TestServeSwitchesNamespaces(t *testing.T) {
	zk := zktest.Start(t, zktest.Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	clients := map[string]reg.Client{}
	for _, ns := range []string{"ns-a", "ns-b"} {
		cfg := zookeeper.DefaultConfig(zk.Addr(), ns)
		cfg.Logger = hclog.NewNullLogger()
		c, err := zookeeper.Connect(ctx, cfg)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = c.Close() })
		clients[ns] = c
	}
	inst := "10.0.0.1@-@100"
	writeJob(t, clients["ns-a"], "alpha", "0 0/5 * * * ?", 1, map[string]string{inst: "10.0.0.1"}, map[int]string{0: inst})
	writeJob(t, clients["ns-b"], "beta", "0 0/5 * * * ?", 1, map[string]string{inst: "10.0.0.1"}, map[int]string{0: inst})

	dir := t.TempDir()
	hash, _ := bcrypt.GenerateFromPassword([]byte("pw"), bcrypt.DefaultCost)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	conf := filepath.Join(dir, "ejob.yaml")
	if err := os.WriteFile(conf, fmt.Appendf(nil, `elasticjob:
  regCenter: {serverLists: '%s', namespace: ns-a}
  jobs:
    alpha: {elasticJobType: SCRIPT, cron: '0 0/5 * * * ?', shardingTotalCount: 1, props: {script.command.line: 'true'}}
ejob:
  http:
    listen: %s
    users:
      - {name: admin, passwordHash: '%s', role: admin}
      - {name: viewer, passwordHash: '%s', role: guest}
`, zk.Addr(), addr, hash, hash), 0o600); err != nil {
		t.Fatal(err)
	}
	store := filepath.Join(dir, "cfg", "ejob", "namespaces.json")
	sctx, stop := context.WithCancel(ctx)
	var out, errb syncBuffer
	done := make(chan int, 1)
	go func() { done <- cli.Main(sctx, []string{"serve", "-c", conf, "--namespaces-file", store}, &out, &errb) }()
	t.Cleanup(func() {
		stop()
		if code := <-done; code != cli.ExitOK {
			t.Errorf("serve exited %d: %s", code, errb.String())
		}
	})
	base := "http://" + addr
	waitFor(t, 20*time.Second, func() bool {
		select {
		case code := <-done:
			done <- code
			t.Fatalf("serve exited %d: %s", code, errb.String())
		default:
		}
		resp, err := http.Get(base + "/healthz")
		if err == nil {
			resp.Body.Close()
		}
		return err == nil
	}, func() string { return "serve did not answer: " + errb.String() })

	admin, viewer := login(t, base, "admin", "pw"), login(t, base, "viewer", "pw")
	if got := admin.jobNames(); got != "alpha" {
		t.Fatalf("jobs before the switch: %q", got)
	}
	if st, env := viewer.call("POST", "/api/registry-center/add", map[string]string{"name": "b", "zkAddressList": zk.Addr(), "namespace": "ns-b"}); st != http.StatusForbidden {
		t.Errorf("guest add: %d %v", st, env)
	}
	if st, env := admin.call("POST", "/api/registry-center/add", map[string]string{"name": "b", "zkAddressList": zk.Addr(), "namespace": "ns-b", "digest": "ops:s3cret"}); st != http.StatusOK {
		t.Fatalf("add: %d %v", st, env)
	}
	if st, env := admin.call("POST", "/api/registry-center/add", map[string]string{"name": "down", "zkAddressList": "127.0.0.1:1", "namespace": "ns-b"}); st != http.StatusOK {
		t.Fatalf("add: %d %v", st, env)
	}
	fi, err := os.Stat(store)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("store file: %v %v", fi, err)
	}
	if data, _ := os.ReadFile(store); !strings.Contains(string(data), `"digest": "ops:s3cret"`) {
		t.Errorf("store file lacks the digest:\n%s", data)
	}
	_, env := admin.call("GET", "/api/registry-center/load", nil)
	if b, _ := json.Marshal(env["model"]); string(b) != `[{"activated":true,"digest":"","name":"ns-a","namespace":"ns-a","zkAddressList":"`+zk.Addr()+`"},`+
		`{"activated":false,"digest":"***","name":"b","namespace":"ns-b","zkAddressList":"`+zk.Addr()+`"},`+
		`{"activated":false,"digest":"","name":"down","namespace":"ns-b","zkAddressList":"127.0.0.1:1"}]` {
		t.Errorf("load: %s", b)
	}
	// The digest of b is wrong for nothing: ns-b has no ACL. Give the
	// real one (none) back, keeping the masked value unchanged first.
	if st, env := admin.call("PUT", "/api/registry-center/b", map[string]string{"name": "b", "zkAddressList": zk.Addr(), "namespace": "ns-b", "digest": "***"}); st != http.StatusOK {
		t.Fatalf("edit: %d %v", st, env)
	}
	if data, _ := os.ReadFile(store); !strings.Contains(string(data), `"digest": "ops:s3cret"`) {
		t.Errorf("a masked digest sent back changed the stored one:\n%s", data)
	}

	if st, env := viewer.call("POST", "/api/registry-center/connect", map[string]string{"name": "b"}); st != http.StatusForbidden {
		t.Errorf("guest connect: %d %v", st, env)
	}
	if st, env := admin.call("POST", "/api/registry-center/connect", map[string]string{"name": "down"}); st != http.StatusBadGateway {
		t.Errorf("connect to an unreachable registry: %d %v", st, env)
	}
	if got := admin.jobNames(); got != "alpha" {
		t.Errorf("jobs after a failed switch: %q, want still alpha", got)
	}
	if st, env := admin.call("POST", "/api/registry-center/connect", map[string]string{"name": "b"}); st != http.StatusOK {
		t.Fatalf("connect b: %d %v", st, env)
	}
	if got := admin.jobNames(); got != "beta" {
		t.Errorf("jobs after the switch: %q, want beta", got)
	}
	// Reads and writes go to ns-b.
	writeJob(t, clients["ns-b"], "gamma", "0 0/5 * * * ?", 1, map[string]string{inst: "10.0.0.1"}, map[int]string{0: inst})
	waitFor(t, 10*time.Second, func() bool { return admin.jobNames() == "beta,gamma" }, func() string { return "jobs: " + admin.jobNames() })
	if st, env := admin.call("POST", "/api/jobs/beta/disable", nil); st != http.StatusOK {
		t.Fatalf("disable beta: %d %v", st, env)
	}
	if v, _ := value(t, clients["ns-b"], node.New("beta").Server("10.0.0.1")); v != "DISABLED" {
		t.Errorf("ns-b beta server = %q, want DISABLED", v)
	}
	if st, env := admin.call("DELETE", "/api/registry-center", map[string]string{"name": "b"}); st != http.StatusBadRequest {
		t.Errorf("remove the registry in use: %d %v", st, env)
	}
	_, env = admin.call("GET", "/api/registry-center/activated", nil)
	if m := env["model"].(map[string]any); m["name"] != "b" || m["digest"] != "***" {
		t.Errorf("activated: %v", m)
	}

	if st, env := admin.call("POST", "/api/registry-center/connect", map[string]string{"name": "ns-a"}); st != http.StatusOK {
		t.Fatalf("connect back: %d %v", st, env)
	}
	if got := admin.jobNames(); got != "alpha" {
		t.Errorf("jobs after switching back: %q", got)
	}
	if st, env := admin.call("DELETE", "/api/registry-center/b", nil); st != http.StatusOK {
		t.Errorf("remove b: %d %v", st, env)
	}
	if !strings.Contains(errb.String(), "audit") || !strings.Contains(errb.String(), "registry-center connect") {
		t.Errorf("no audit line for the switch in the log:\n%s", errb.String())
	}
}

func waitFor(t *testing.T, d time.Duration, cond func() bool, why func() string) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal(why())
		}
		time.Sleep(20 * time.Millisecond)
	}
}
