package zookeeper_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ejob-io/ejob/core/reg"
	"github.com/ejob-io/ejob/core/reg/zktest"
	"github.com/ejob-io/ejob/core/reg/zookeeper"
)

// TestSASLKerberos runs the client against a ZooKeeper that requires SASL
// GSSAPI, with a real KDC: a keytab, a ticket cache and a JAAS file log
// in; sasl ACLs refuse another principal; the session is authenticated
// again after an expiry and a server restart; an unknown principal and a
// wrong server principal fail for good, at once.
func TestSASLKerberos(t *testing.T) {
	kdc := zktest.StartKDC(t)
	zkKeytab := kdc.AddPrincipal(t, "zookeeper/127.0.0.1")
	ejobKeytab := kdc.AddPrincipal(t, "ejob")
	otherKeytab := kdc.AddPrincipal(t, "other")
	srv := zktest.Start(t, zktest.Options{
		JAAS:        kdc.ServerJAAS("zookeeper/127.0.0.1@"+kdc.Realm(), zkKeytab),
		RequireSASL: true,
		Krb5Conf:    kdc.Krb5Conf(),
	})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	krb := func(principal, keytab string) zookeeper.SASL {
		return zookeeper.SASL{Mechanism: "GSSAPI", Principal: principal, Keytab: keytab, Krb5Conf: kdc.Krb5Conf()}
	}

	cfg := testConfig(t, srv.Addr(), "krb")
	cfg.SASL = krb("ejob@EJOB.TEST", ejobKeytab)
	cfg.SASL.ACL = true
	ejob := connect(t, cfg)
	if _, err := ejob.Create(ctx, "/owned", []byte("ejob's"), reg.Persistent); err != nil {
		t.Fatal(err)
	}

	t.Run("ticket cache", func(t *testing.T) {
		cfg := testConfig(t, srv.Addr(), "krb")
		cfg.SASL = zookeeper.SASL{Mechanism: "GSSAPI", TicketCache: kdc.Kinit(t, "ejob", ejobKeytab), Krb5Conf: kdc.Krb5Conf()}
		c := connect(t, cfg)
		if _, err := c.Set(ctx, "/owned", []byte("ejob via its ticket cache"), reg.AnyVersion); err != nil {
			t.Errorf("Set as ejob through the ticket cache: %v", err)
		}
	})

	t.Run("JAAS file", func(t *testing.T) {
		jaas := filepath.Join(t.TempDir(), "jaas.conf")
		os.WriteFile(jaas, []byte(`Client {
  com.sun.security.auth.module.Krb5LoginModule required
  useKeyTab=true
  keyTab="`+ejobKeytab+`"
  storeKey=true
  useTicketCache=false
  principal="ejob@EJOB.TEST";
};
`), 0o600)
		cfg := testConfig(t, srv.Addr(), "krb")
		cfg.SASL = zookeeper.SASL{JAASFile: jaas, Krb5Conf: kdc.Krb5Conf()}
		c := connect(t, cfg)
		if _, err := c.Set(ctx, "/owned", []byte("ejob via JAAS"), reg.AnyVersion); err != nil {
			t.Errorf("Set as ejob through the JAAS file: %v", err)
		}
	})

	t.Run("sasl ACL refuses another principal", func(t *testing.T) {
		cfg := testConfig(t, srv.Addr(), "krb")
		cfg.SASL = krb("other@EJOB.TEST", otherKeytab)
		other := connect(t, cfg)
		if _, err := other.Set(ctx, "/owned", []byte("other's"), reg.AnyVersion); !errors.Is(err, reg.ErrNoAuth) {
			t.Errorf("other's Set = %v, want ErrNoAuth", err)
		}
	})

	for name, tc := range map[string]struct {
		mut  func(*zookeeper.SASL)
		want []string
	}{
		"unknown principal": {func(s *zookeeper.SASL) { s.Principal = "nobody@EJOB.TEST" },
			[]string{"GSSAPI", `"nobody@EJOB.TEST"`, "KDC_ERR_C_PRINCIPAL_UNKNOWN"}},
		"keytab without the principal's key": {func(s *zookeeper.SASL) { s.Keytab = otherKeytab },
			[]string{"GSSAPI", `"ejob@EJOB.TEST"`, "keytab"}},
		"wrong server principal": {func(s *zookeeper.SASL) { s.ServiceHost = "zk.nowhere" },
			[]string{"GSSAPI", "zookeeper/zk.nowhere", "KDC_ERR_S_PRINCIPAL_UNKNOWN"}},
	} {
		t.Run(name, func(t *testing.T) {
			cfg := testConfig(t, srv.Addr(), "krb")
			cfg.SASL = krb("ejob@EJOB.TEST", ejobKeytab)
			tc.mut(&cfg.SASL)
			refusedAtOnce(ctx, t, cfg, tc.want...)
		})
	}

	t.Run("server must prove itself", func(t *testing.T) {
		// The AP-REP (the second frame) tampered with: mutual
		// authentication fails.
		cfg := testConfig(t, srv.Addr(), "krb")
		cfg.SASL = krb("ejob@EJOB.TEST", ejobKeytab)
		cfg.Dialer = tamperingDialer(2)
		_, err := zookeeper.Connect(ctx, cfg)
		if !errors.Is(err, zookeeper.ErrAuthFailed) || !strings.Contains(err.Error(), "AP-REP") {
			t.Errorf("Connect = %v, want a final failure on the server's AP-REP", err)
		}
	})

	t.Run("expiry authenticates the new session", func(t *testing.T) {
		old := ejob.Session()
		if err := ejob.Expire(ctx); err != nil {
			t.Fatal(err)
		}
		waitNewSession(t, ejob, old)
		if _, err := ejob.Set(ctx, "/owned", []byte("after expiry"), reg.AnyVersion); err != nil {
			t.Errorf("Set after the expiry: %v", err)
		}
	})

	t.Run("restart authenticates the reconnection", func(t *testing.T) {
		if err := srv.Restart(); err != nil {
			t.Fatal(err)
		}
		if _, err := ejob.Set(ctx, "/owned", []byte("after restart"), reg.AnyVersion); err != nil {
			t.Errorf("Set after the restart: %v", err)
		}
	})
}
