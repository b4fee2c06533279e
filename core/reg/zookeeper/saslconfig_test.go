package zookeeper

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestSASLValidate(t *testing.T) {
	dir := t.TempDir()
	jaas := func(body string) string {
		p := filepath.Join(dir, fmt.Sprintf("jaas%d.conf", len(body)))
		os.WriteFile(p, []byte(body), 0o600)
		return p
	}
	digestJAAS := jaas("Client {\n org.apache.zookeeper.server.auth.DigestLoginModule required\n username=\"bob\" password=\"pw\";\n};\n")
	for name, tc := range map[string]struct {
		s    SASL
		want string // "" valid; else every "field: reason" fragment, joined by |
	}{
		"digest":            {SASL{Mechanism: "digest-md5", Username: "u", Password: "p", ACL: true}, ""},
		"gssapi keytab":     {SASL{Mechanism: "GSSAPI", Principal: "ejob@R", Keytab: "/k"}, ""},
		"gssapi cache":      {SASL{Mechanism: "gssapi"}, ""},
		"jaas digest":       {SASL{JAASFile: digestJAAS}, ""},
		"no mechanism":      {SASL{Username: "u"}, "sasl.mechanism: required"},
		"bad mechanism":     {SASL{Mechanism: "PLAIN"}, `sasl.mechanism: "PLAIN" is not`},
		"digest no creds":   {SASL{Mechanism: "DIGEST-MD5"}, "sasl.username: DIGEST-MD5 needs|sasl.password: DIGEST-MD5 needs"},
		"digest with krb":   {SASL{Mechanism: "DIGEST-MD5", Username: "u", Password: "p", Keytab: "/k", ServiceName: "zk"}, "sasl.keytab: is a GSSAPI setting|sasl.serviceName: is a GSSAPI setting"},
		"gssapi with pass":  {SASL{Mechanism: "GSSAPI", Username: "u", Password: "p"}, "sasl.username: is a DIGEST-MD5|sasl.password: is a DIGEST-MD5"},
		"keytab no princ":   {SASL{Mechanism: "GSSAPI", Keytab: "/k"}, "sasl.principal: GSSAPI with a keytab needs"},
		"keytab and cache":  {SASL{Mechanism: "GSSAPI", Principal: "a@R", Keytab: "/k", TicketCache: "/c"}, "sasl.ticketCache: must not be set with keytab"},
		"principal realm":   {SASL{Mechanism: "GSSAPI", Principal: "ejob"}, "sasl.principal: \"ejob\" has no realm"},
		"jaas and keys":     {SASL{JAASFile: digestJAAS, Username: "u", Password: "p"}, "sasl.username: must not be set with jaasFile|sasl.password: must not be set with jaasFile"},
		"jaas digest + krb": {SASL{JAASFile: digestJAAS, Krb5Conf: "/etc/krb5.conf"}, "sasl.krb5Conf: is a GSSAPI setting"},
		"jaas missing":      {SASL{JAASFile: filepath.Join(dir, "none")}, "sasl.jaasFile: read JAAS file"},
	} {
		t.Run(name, func(t *testing.T) {
			var got []string
			tc.s.validate(func(field, format string, a ...any) { got = append(got, field+": "+fmt.Sprintf(format, a...)) })
			if tc.want == "" {
				if len(got) > 0 {
					t.Errorf("problems %q, want none", got)
				}
				return
			}
			wants := strings.Split(tc.want, "|")
			if len(got) != len(wants) {
				t.Fatalf("problems %q, want %q", got, wants)
			}
			for i, w := range wants {
				if !strings.HasPrefix(got[i], w) {
					t.Errorf("problem %q, want %q...", got[i], w)
				}
			}
		})
	}
}

func TestSASLStringMasksThePassword(t *testing.T) {
	s := SASL{Mechanism: "DIGEST-MD5", Username: "bob", Password: "hunter2"}
	cfg := Config{ServerLists: "h:1", SASL: s}
	for _, out := range []string{s.String(), fmt.Sprintf("%v", cfg), fmt.Sprintf("%+v", cfg), fmt.Sprintf("%#v", cfg)} {
		if strings.Contains(out, "hunter2") || !strings.Contains(out, "bob") {
			t.Errorf("printed %q: want the username and not the password", out)
		}
	}
}

func TestParseJAASClient(t *testing.T) {
	for name, tc := range map[string]struct {
		text string
		want jaasClient
		err  string
	}{
		"digest": {text: `
// zkCli's file
Server {
  org.apache.zookeeper.server.auth.DigestLoginModule required
  user_bob="secret";
};
Client {
  org.apache.zookeeper.server.auth.DigestLoginModule required
  username="bob"
  password="se\"cret";
};`, want: jaasClient{mechanism: "DIGEST-MD5", username: "bob", password: `se"cret`}},
		"keytab": {text: `Client {
  com.sun.security.auth.module.Krb5LoginModule required
  useKeyTab=true keyTab="/etc/ejob/ejob.keytab" storeKey=true
  useTicketCache=false principal="ejob/host1@EXAMPLE.COM";
};`, want: jaasClient{mechanism: "GSSAPI", principal: "ejob/host1@EXAMPLE.COM", keytab: "/etc/ejob/ejob.keytab"}},
		"ticket cache": {text: "/* kinit first */ Client { com.sun.security.auth.module.Krb5LoginModule required useTicketCache=true; };",
			want: jaasClient{mechanism: "GSSAPI"}},
		"no client":      {text: "Server { org.apache.zookeeper.server.auth.DigestLoginModule required user_a=\"b\"; };", err: "f.conf: no Client section"},
		"two modules":    {text: "Client {\n a.B required;\n c.D optional;\n};", err: "f.conf:2: the Client section has 2 login modules"},
		"other module":   {text: "Client {\n  org.example.Plain required;\n};", err: "f.conf:2: login module org.example.Plain is not supported"},
		"unknown option": {text: "Client {\n com.sun.security.auth.module.Krb5LoginModule required\n useTicketCache=true\n  principalx=\"a\";\n};", err: "f.conf:4: Krb5LoginModule option principalx is not supported"},
		"no keytab":      {text: "Client {\n com.sun.security.auth.module.Krb5LoginModule required\n  useKeyTab=true;\n};", err: "f.conf:3: useKeyTab=true needs keyTab"},
		"prompt":         {text: "Client {\n com.sun.security.auth.module.Krb5LoginModule required;\n};", err: "f.conf:2: Krb5LoginModule needs useKeyTab=true"},
		"no password":    {text: "Client {\n org.apache.zookeeper.server.auth.DigestLoginModule required username=\"bob\";\n};", err: "f.conf:2: DigestLoginModule needs username and password"},
		"no flag":        {text: "Client {\n org.apache.zookeeper.server.auth.DigestLoginModule username=\"bob\";\n};", err: "f.conf:2: want a control flag"},
		"unclosed":       {text: "Client {\n org.apache.zookeeper.server.auth.DigestLoginModule required username=\"bob\";\n", err: "f.conf:2: section Client is not closed"},
		"open quote":     {text: "Client {\n x required a=\"b;\n};", err: "f.conf:2: unterminated quoted value"},
		"open comment":   {text: "\n/* Client {", err: "f.conf:2: unterminated /* comment"},
	} {
		t.Run(name, func(t *testing.T) {
			got, err := parseJAASClient("f.conf", tc.text)
			if tc.err != "" {
				if err == nil || !strings.HasPrefix(err.Error(), tc.err) {
					t.Fatalf("error %v, want %q...", err, tc.err)
				}
				if strings.Contains(err.Error(), "secret") {
					t.Errorf("error %q shows a password", err)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Errorf("got %+v, %v; want %+v", got, err, tc.want)
			}
		})
	}
}
