package zktest

import (
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ejob-io/ejob/internal/testkit"
)

// KDC is a running MIT Kerberos KDC started by scripts/kdc.sh, for
// Kerberos (SASL GSSAPI) tests: a realm of its own on a free port of
// 127.0.0.1, its principals and keytabs in a temporary directory.
type KDC struct {
	script string
	dir    string
	conf   string
	realm  string
}

// StartKDC starts a KDC for t (realm EJOB.TEST) and stops it when t ends.
// It skips t when Debian's Kerberos packages cannot be installed here,
// saying why, and fails t on any other problem.
func StartKDC(t testing.TB) *KDC {
	t.Helper()
	script, err := testkit.Script("kdc.sh", "EJOB_KDC_SCRIPT")
	if err != nil {
		t.Fatalf("zktest: %v", err)
	}
	k := &KDC{script: script, dir: t.TempDir(), realm: "EJOB.TEST"}
	out, err := k.run("start", k.dir, "--realm", k.realm)
	var ee *exec.ExitError
	if errors.As(err, &ee) && ee.ExitCode() == 3 {
		t.Skipf("zktest: no KDC: the Kerberos packages cannot be installed here: %v", err)
	}
	if err != nil {
		t.Fatalf("zktest: %v", err)
	}
	k.conf = out
	t.Cleanup(func() { _, _ = k.run("stop", k.dir) })
	return k
}

// Realm is the KDC's realm.
func (k *KDC) Realm() string { return k.realm }

// Krb5Conf is the path of a Kerberos configuration for clients and
// servers of the realm.
func (k *KDC) Krb5Conf() string { return k.conf }

// AddPrincipal creates principal (name or name@REALM; name may be
// service/host) with a random key and returns the path of a keytab
// holding it.
func (k *KDC) AddPrincipal(t testing.TB, principal string) string {
	t.Helper()
	kt := filepath.Join(k.dir, strings.NewReplacer("/", "_", "@", "_").Replace(principal)+".keytab")
	if _, err := k.run("addprinc", k.dir, principal, kt); err != nil {
		t.Fatalf("zktest: %v", err)
	}
	return kt
}

// Kinit logs principal in with its keytab (kinit -k) and returns the path
// of the new credential cache.
func (k *KDC) Kinit(t testing.TB, principal, keytab string) string {
	t.Helper()
	cc := filepath.Join(t.TempDir(), "krb5cc")
	if _, err := k.run("kinit", k.dir, principal, keytab, cc); err != nil {
		t.Fatalf("zktest: %v", err)
	}
	return cc
}

// ServerJAAS returns a JAAS Server section with which ZooKeeper accepts
// Kerberos clients as principal (zookeeper/HOST@REALM), whose keys are in
// keytab (Options.JAAS, with Options.Krb5Conf = Krb5Conf()).
func (k *KDC) ServerJAAS(principal, keytab string) string {
	return fmt.Sprintf(`Server {
  com.sun.security.auth.module.Krb5LoginModule required
  useKeyTab=true
  keyTab=%q
  storeKey=true
  useTicketCache=false
  principal=%q;
};
`, keytab, principal)
}

func (k *KDC) run(args ...string) (string, error) { return testkit.RunScript(k.script, args...) }
