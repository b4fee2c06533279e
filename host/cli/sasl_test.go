package cli_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ejob-io/ejob/core/reg/zktest"
)

// TestOperatorCommandWithJAAS: --jaas logs an operator command in with
// SASL on a ZooKeeper that requires it; a refused login says so.
func TestOperatorCommandWithJAAS(t *testing.T) {
	srv := zktest.Start(t, zktest.Options{JAAS: zktest.DigestJAAS(map[string]string{"bob": "secret"}), RequireSASL: true})
	dir := t.TempDir()
	jaas := func(name, password string) string {
		p := filepath.Join(dir, name)
		body := "Client {\n  org.apache.zookeeper.server.auth.DigestLoginModule required\n  username=\"bob\"\n  password=\"" + password + "\";\n};\n"
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	code, _, stderr := run(t, "trigger", "nojob", "--zk", srv.Addr(), "--namespace", "ops", "--jaas", jaas("good.conf", "secret"))
	if code != 3 || !strings.Contains(stderr, `job not found: "nojob" in namespace "ops"`) {
		t.Errorf("trigger with the right password: exit %d, stderr %q; want the registry reached (job not found, exit 3)", code, stderr)
	}
	code, _, stderr = run(t, "trigger", "nojob", "--zk", srv.Addr(), "--namespace", "ops", "--jaas", jaas("bad.conf", "wrong"))
	if code == 0 || !strings.Contains(stderr, "SASL DIGEST-MD5 authentication as \"bob\"") || strings.Contains(stderr, "wrong") {
		t.Errorf("trigger with a wrong password: exit %d, stderr %q; want the SASL refusal, without the password", code, stderr)
	}
}
