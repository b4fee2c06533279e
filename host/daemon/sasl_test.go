package daemon_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ejob-io/ejob/core/reg/zktest"
	"github.com/ejob-io/ejob/core/reg/zookeeper"
	"github.com/ejob-io/ejob/internal/testkit"
)

// saslHostConfig writes a host config with one SCRIPT job firing every
// second into out, on srv with the given regCenter.sasl section (YAML
// lines, indented for it).
func saslHostConfig(t *testing.T, srv *zktest.Server, ns, sasl, out string) string {
	t.Helper()
	dir := t.TempDir()
	script := recordScript(t, dir, out)
	cfg := filepath.Join(dir, "ejob.yaml")
	body := fmt.Sprintf(`elasticjob:
  regCenter:
    serverLists: %s
    namespace: %s
    sessionTimeoutMilliseconds: 2000
    connectionTimeoutMilliseconds: 3000
    sasl:
%s
  jobs:
    secured:
      elasticJobType: SCRIPT
      cron: "* * * * * ?"
      shardingTotalCount: 1
      props:
        script.command.line: "%s"
ejob:
  drainTimeout: 5s
`, srv.Addr(), ns, sasl, script)
	if err := os.WriteFile(cfg, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return cfg
}

// waitMoreRuns waits until out holds at least n more item runs than
// before, and returns the new count.
func waitMoreRuns(t *testing.T, h *host, out string, before, n int, what string) int {
	t.Helper()
	got := before
	if !testkit.Poll(30*time.Second, func() bool { got = len(readRecords(t, out)); return got >= before+n }) {
		t.Fatalf("%s: %d runs, want %d more than %d; host output:\n%s", what, got, n, before, h.logs)
	}
	return got
}

// instances counts the job's instances nodes, through a client that
// authenticates with s.
func instances(t *testing.T, srv *zktest.Server, ns string, s zookeeper.SASL) int {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cfg := zookeeper.DefaultConfig(srv.Addr(), ns)
	cfg.SASL = s
	cfg.MaxRetries = 1
	c, err := zookeeper.Connect(ctx, cfg)
	if err != nil {
		t.Fatalf("observer: %v", err)
	}
	defer c.Close()
	kids, err := c.Children(ctx, "/secured/instances")
	if err != nil {
		return 0
	}
	return len(kids)
}

// securedHostScenario runs a host on a ZooKeeper that requires SASL: its
// job fires; after its session expired (the host stopped with SIGSTOP
// longer than the session timeout) and after a ZooKeeper restart, the
// host authenticates again by itself and the job fires again. observer
// authenticates the test's own look at the tree. secret must never show
// in the host's output.
func securedHostScenario(t *testing.T, srv *zktest.Server, ns, sasl string, env []string, observer zookeeper.SASL, secret string) {
	out := filepath.Join(t.TempDir(), "runs.txt")
	cfg := saslHostConfig(t, srv, ns, sasl, out)
	h := runHost(t, env, "run", "-c", cfg)
	h.waitLog("host started")
	runs := waitMoreRuns(t, h, out, 0, 2, "first fires")

	// Session expiry: the server drops the stopped host's session.
	h.signal(syscall.SIGSTOP)
	testkit.Eventually(t, 30*time.Second, "the stopped host's instance node to go", func() bool {
		return instances(t, srv, ns, observer) == 0
	})
	h.signal(syscall.SIGCONT)
	runs = waitMoreRuns(t, h, out, len(readRecords(t, out)), 2, "fires after the session expired")
	testkit.Eventually(t, 30*time.Second, "the host's instance node back", func() bool {
		return instances(t, srv, ns, observer) == 1
	})

	// ZooKeeper restart.
	if err := srv.Restart(); err != nil {
		t.Fatal(err)
	}
	waitMoreRuns(t, h, out, runs, 2, "fires after the ZooKeeper restart")

	h.signal(syscall.SIGTERM)
	logs := h.waitExit(30 * time.Second)
	if secret != "" && strings.Contains(logs, secret) {
		t.Errorf("the host's output shows the secret %q", secret)
	}
}

// refusedHost runs a host whose SASL login the server refuses: it must
// exit with status 1, naming the mechanism and the server's answer,
// without ever reporting itself started.
func refusedHost(t *testing.T, srv *zktest.Server, ns, sasl string, env []string, wants ...string) string {
	t.Helper()
	cfg := saslHostConfig(t, srv, ns, sasl, filepath.Join(t.TempDir(), "runs.txt"))
	h := runHost(t, env, "run", "-c", cfg)
	select {
	case err := <-h.exited:
		if h.cmd.ProcessState.ExitCode() != 1 {
			t.Fatalf("ejob run: %v, want exit status 1:\n%s", err, h.logs)
		}
	case <-time.After(60 * time.Second):
		t.Fatalf("the host did not exit after its login was refused:\n%s", h.logs)
	}
	logs := h.logs.String()
	for _, want := range wants {
		if !strings.Contains(logs, want) {
			t.Errorf("output lacks %q:\n%s", want, logs)
		}
	}
	if strings.Contains(logs, "host started") {
		t.Errorf("the host reported itself started:\n%s", logs)
	}
	return logs
}

// TestSASLDigestHost: a host with regCenter.sasl DIGEST-MD5 runs its job
// on a ZooKeeper that requires SASL, through an expiry and a restart; with
// a wrong password it exits non-zero at once.
func TestSASLDigestHost(t *testing.T) {
	srv := zktest.Start(t, zktest.Options{JAAS: zktest.DigestJAAS(map[string]string{"bob": "s3cret-pw"}), RequireSASL: true})
	sasl := "      mechanism: DIGEST-MD5\n      username: bob\n      password: ${ZK_SASL_PASSWORD}\n      acl: true"
	bob := zookeeper.SASL{Mechanism: "DIGEST-MD5", Username: "bob", Password: "s3cret-pw"}
	t.Run("right password", func(t *testing.T) {
		env := append(os.Environ(), "ZK_SASL_PASSWORD=s3cret-pw")
		securedHostScenario(t, srv, "digest", sasl, env, bob, "s3cret-pw")
	})
	t.Run("password changed while running", func(t *testing.T) {
		// The server forgets bob's password at a restart: the running
		// host's reconnection is refused, and it stops with status 1.
		srv := zktest.Start(t, zktest.Options{JAAS: zktest.DigestJAAS(map[string]string{"bob": "s3cret-pw"}), RequireSASL: true})
		out := filepath.Join(t.TempDir(), "runs.txt")
		h := runHost(t, append(os.Environ(), "ZK_SASL_PASSWORD=s3cret-pw"), "run", "-c", saslHostConfig(t, srv, "rotated", sasl, out))
		waitMoreRuns(t, h, out, 0, 1, "first fires")
		if err := srv.Stop(); err != nil {
			t.Fatal(err)
		}
		rotated := zktest.DigestJAAS(map[string]string{"bob": "rotated-pw"})
		if err := os.WriteFile(filepath.Join(srv.Dir(), "jaas.conf"), []byte(rotated), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := srv.StartAgain(); err != nil {
			t.Fatal(err)
		}
		select {
		case <-h.exited:
		case <-time.After(60 * time.Second):
			t.Fatalf("the host runs on after the server refused its password:\n%s", h.logs)
		}
		logs := h.logs.String()
		if code := h.cmd.ProcessState.ExitCode(); code != 1 {
			t.Errorf("exit status %d, want 1:\n%s", code, logs)
		}
		for _, want := range []string{"the registry refused this host's authentication: stopping", "ejob: registry: SASL DIGEST-MD5 authentication as \"bob\"", "SESSIONCLOSEDREQUIRESASLAUTH"} {
			if !strings.Contains(logs, want) {
				t.Errorf("output lacks %q:\n%s", want, logs)
			}
		}
	})
	t.Run("wrong password", func(t *testing.T) {
		env := append(os.Environ(), "ZK_SASL_PASSWORD=wrong-pw")
		logs := refusedHost(t, srv, "digest-wrong", sasl, env,
			"SASL DIGEST-MD5 authentication as \\\"bob\\\"", "SESSIONCLOSEDREQUIRESASLAUTH")
		if strings.Contains(logs, "wrong-pw") {
			t.Errorf("the host's output shows the password:\n%s", logs)
		}
	})
}

// TestSASLKerberosHost: a host with regCenter.sasl GSSAPI and a keytab
// runs its job on a ZooKeeper that requires Kerberos (a real KDC), through
// an expiry and a restart; an unknown principal exits non-zero at once.
func TestSASLKerberosHost(t *testing.T) {
	kdc := zktest.StartKDC(t)
	zkKeytab := kdc.AddPrincipal(t, "zookeeper/127.0.0.1")
	ejobKeytab := kdc.AddPrincipal(t, "ejob")
	srv := zktest.Start(t, zktest.Options{
		JAAS:        kdc.ServerJAAS("zookeeper/127.0.0.1@"+kdc.Realm(), zkKeytab),
		RequireSASL: true,
		Krb5Conf:    kdc.Krb5Conf(),
	})
	sasl := func(principal string) string {
		return fmt.Sprintf("      mechanism: GSSAPI\n      principal: %s\n      keytab: %s\n      krb5Conf: %s\n      acl: true",
			principal, ejobKeytab, kdc.Krb5Conf())
	}
	t.Run("keytab", func(t *testing.T) {
		observer := zookeeper.SASL{Mechanism: "GSSAPI", Principal: "ejob@EJOB.TEST", Keytab: ejobKeytab, Krb5Conf: kdc.Krb5Conf()}
		securedHostScenario(t, srv, "krb", sasl("ejob@EJOB.TEST"), os.Environ(), observer, "")
	})
	t.Run("unknown principal", func(t *testing.T) {
		refusedHost(t, srv, "krb-wrong", sasl("nobody@EJOB.TEST"), os.Environ(),
			"SASL GSSAPI authentication as \\\"nobody@EJOB.TEST\\\"", "KDC_ERR_C_PRINCIPAL_UNKNOWN")
	})
}
