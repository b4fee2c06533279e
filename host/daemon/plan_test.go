package daemon

import (
	"net/netip"
	"reflect"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/ejob-io/ejob/core/reg/embedded"
	"github.com/ejob-io/ejob/host/hostconfig"
	"github.com/ejob-io/ejob/host/metrics"
)

// TestEveryHostSettingIsConsumed fails when a field of the host settings
// (the file's ejob: section) is parsed but changes nothing the host does:
// each field, set alone, must change the host's plan. host/hostconfig's
// TestEveryHostSettingIsParsed checks the other half (each field is read
// from the file).
func TestEveryHostSettingIsConsumed(t *testing.T) {
	t.Parallel()
	opts := Options{Getenv: func(string) (string, bool) { return "", false }}
	base := newPlan(hostconfig.HostSettings{}, opts)
	// A value the plan can tell from the zero value, where "x" is not
	// one.
	port := 9888
	samples := map[string]any{"LogLevel": "warn", "DumpPort": &port, "JavaPeers": hostconfig.JavaPeersStrict,
		"HTTP": &hostconfig.HTTPSettings{Listen: "127.0.0.1:8088"}}
	typ := reflect.TypeFor[hostconfig.HostSettings]()
	for i := range typ.NumField() {
		f := typ.Field(i)
		t.Run(f.Name, func(t *testing.T) {
			var h hostconfig.HostSettings
			v := reflect.ValueOf(&h).Elem().Field(i)
			switch {
			case samples[f.Name] != nil:
				v.Set(reflect.ValueOf(samples[f.Name]))
			case v.Type() == reflect.TypeFor[time.Duration]():
				v.SetInt(int64(7 * time.Second))
			case v.Kind() == reflect.String:
				v.SetString("x")
			default:
				t.Fatalf("give HostSettings.%s (%s) a sample value in this test", f.Name, v.Type())
			}
			if reflect.DeepEqual(newPlan(h, opts), base) {
				t.Errorf("HostSettings.%s is parsed but never consumed: the host's plan does not depend on it", f.Name)
			}
		})
	}
}

// TestCommandLineOverridesTheFile: --plugins-dir and --lock-file (or
// EJOB_PLUGINS_DIR) win over the file, and a level chosen on the command
// line or in the environment over ejob.logLevel.
func TestCommandLineOverridesTheFile(t *testing.T) {
	t.Parallel()
	h := hostconfig.HostSettings{PluginsDir: "/file/plugins", LockFile: "/file/lock", LogLevel: "error"}
	p := newPlan(h, Options{PluginsDir: "/flag/plugins", LockFile: "/flag/lock", LogLevelFixed: true})
	if p.catalog.Dir != "/flag/plugins" || p.catalog.LockFile != "/flag/lock" || p.level != hclog.NoLevel {
		t.Errorf("plan = %+v, want the command line's directory and lock file, and the logger's level kept", p)
	}
	p = newPlan(h, Options{})
	if p.catalog.Dir != "/file/plugins" || p.catalog.LockFile != "/file/lock" || p.level != hclog.Error {
		t.Errorf("plan = %+v, want the file's directory, lock file and level", p)
	}
}

// TestEveryHTTPSettingIsConsumed: each field of ejob.http, set alone, must
// change the operations server's options (TestEveryHostSettingIsConsumed
// sees ejob.http as one setting).
func TestEveryHTTPSettingIsConsumed(t *testing.T) {
	t.Parallel()
	c, err := embedded.NewServer().Connect("ns")
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	mx := metrics.New()
	// What HTTPOptions derives from the settings (its funcs and handlers
	// cannot be compared).
	view := func(h hostconfig.HTTPSettings) any {
		o := HTTPOptions(h, nil, c, mx, hclog.NewNullLogger())
		return []any{o.Listen, o.Users, o.SessionIdle, o.SessionMaxAge, o.OIDC, o.TLS, o.TrustedProxies, o.AllowInsecureHTTP, o.AuditLog}
	}
	base := view(hostconfig.HTTPSettings{})
	samples := map[string]any{
		"Listen":             "127.0.0.1:8088",
		"Users":              []hostconfig.HTTPUser{{Name: "ops", PasswordHash: "$2a$10$x", Role: "admin"}},
		"SessionIdleTimeout": 7 * time.Minute,
		"SessionMaxAge":      7 * time.Hour,
		"OIDC":               &hostconfig.OIDCSettings{Issuer: "https://sso.example.com"},
		"TLS":                &hostconfig.TLSFiles{CertFile: "cert.pem", KeyFile: "key.pem"},
		"TrustedProxies":     []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8")},
		"AllowInsecureHTTP":  true,
		"AuditLog":           "audit.log",
	}
	typ := reflect.TypeFor[hostconfig.HTTPSettings]()
	for i := range typ.NumField() {
		f := typ.Field(i)
		t.Run(f.Name, func(t *testing.T) {
			s, ok := samples[f.Name]
			if !ok {
				t.Fatalf("give HTTPSettings.%s (%s) a sample value in this test", f.Name, f.Type)
			}
			var h hostconfig.HTTPSettings
			reflect.ValueOf(&h).Elem().Field(i).Set(reflect.ValueOf(s))
			if reflect.DeepEqual(view(h), base) {
				t.Errorf("ejob.http's %s is parsed but never reaches the operations server", f.Name)
			}
		})
	}
}
