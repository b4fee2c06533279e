package sasl

import (
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/jcmturner/gokrb5/v8/keytab"
)

// TestKerberosErrors: what retrying cannot mend is final (ErrCredentials);
// a KDC out of reach is not.
func TestKerberosErrors(t *testing.T) {
	dir := t.TempDir()
	ln, err := net.Listen("tcp", "127.0.0.1:0") // a port nothing listens on once closed
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	conf := filepath.Join(dir, "krb5.conf")
	text := fmt.Sprintf("[libdefaults]\n  default_realm = R.TEST\n  udp_preference_limit = 1\n[realms]\n  R.TEST = {\n    kdc = 127.0.0.1:%d\n  }\n", port)
	if err := os.WriteFile(conf, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	kt := keytab.New()
	if err := kt.AddEntry("ejob", "R.TEST", "pw", time.Now(), 1, 18); err != nil {
		t.Fatal(err)
	}
	b, err := kt.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	ktPath := filepath.Join(dir, "ejob.keytab")
	if err := os.WriteFile(ktPath, b, 0o600); err != nil {
		t.Fatal(err)
	}

	t.Run("KDC out of reach", func(t *testing.T) {
		k, err := NewKerberos(KerberosConfig{Principal: "ejob@R.TEST", Keytab: ktPath, Krb5Conf: conf})
		if err != nil {
			t.Fatal(err)
		}
		defer k.Close()
		_, err = k.GSSAPI("zookeeper", "h").Start()
		if err == nil || errors.Is(err, ErrCredentials) {
			t.Errorf("Start = %v, want a non-final error", err)
		}
	})
	for name, cfg := range map[string]KerberosConfig{
		"no krb5.conf":    {Principal: "ejob@R.TEST", Keytab: ktPath, Krb5Conf: filepath.Join(dir, "none.conf")},
		"no keytab":       {Principal: "ejob@R.TEST", Keytab: filepath.Join(dir, "none.keytab"), Krb5Conf: conf},
		"no realm":        {Principal: "ejob", Keytab: ktPath, Krb5Conf: conf},
		"no ticket cache": {TicketCache: filepath.Join(dir, "none.cc"), Krb5Conf: conf},
		"not a keytab":    {Principal: "ejob@R.TEST", Keytab: conf, Krb5Conf: conf},
	} {
		t.Run(name, func(t *testing.T) {
			if _, err := NewKerberos(cfg); !errors.Is(err, ErrCredentials) {
				t.Errorf("NewKerberos = %v, want ErrCredentials", err)
			}
		})
	}
}

// TestGSSAPIRefusesWhatIsNoAPRep: an empty answer (a server without SASL)
// and an answer that is no Kerberos token are refused.
func TestGSSAPIRefusesWhatIsNoAPRep(t *testing.T) {
	g := &GSSAPI{spn: "zookeeper/h"}
	if _, err := g.Step(nil); !errors.Is(err, ErrNoChallenge) {
		t.Errorf("empty answer: %v, want ErrNoChallenge", err)
	}
	if _, err := g.Step([]byte("realm=\"zk-sasl-md5\",nonce=\"x\"")); !errors.Is(err, ErrRejected) {
		t.Errorf("a DIGEST-MD5 challenge: %v, want ErrRejected", err)
	}
}
