package httpapi

import (
	"context"
	"errors"
	"net/http"
	"net/netip"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestLoginGuardBackoff: after FreeLoginFailures wrong passwords a user
// name waits (a *RateLimitError with the wait), from any client; parallel
// attempts cannot get past the free failures at once; a success ends the
// user's failures.
func TestLoginGuardBackoff(t *testing.T) {
	t.Parallel()
	g := newLoginGuard()
	for i := range FreeLoginFailures {
		a, err := g.begin("ops", "c1")
		if err != nil {
			t.Fatalf("attempt %d: %v", i, err)
		}
		a.done(failed)
	}
	_, err := g.begin("ops", "c2")
	rl, ok := errors.AsType[*RateLimitError](err)
	if !ok || rl.Why != "user" || rl.RetryAfter <= 0 || rl.RetryAfter > LoginBackoffBase {
		t.Fatalf("after %d failures: %v, want a user rate limit of at most %v", FreeLoginFailures, err, LoginBackoffBase)
	}
	if _, err := g.begin("other", "c1"); err == nil {
		t.Errorf("client c1 after %d failures: admitted", FreeLoginFailures)
	}
	// In flight: at most the free failures at once.
	g2 := newLoginGuard()
	admitted := 0
	for range 3 * FreeLoginFailures {
		if _, err := g2.begin("ops", "c9"); err == nil {
			admitted++
		}
	}
	if admitted != FreeLoginFailures {
		t.Errorf("%d parallel attempts admitted, want %d", admitted, FreeLoginFailures)
	}
	for n, want := range map[int]time.Duration{0: time.Second, 1: 2 * time.Second, 8: 256 * time.Second, 9: LoginBackoffMax, 62: LoginBackoffMax} {
		if got := backoff(n); got != want {
			t.Errorf("backoff(%d) = %v, want %v", n, got, want)
		}
	}
	g3 := newLoginGuard()
	for range FreeLoginFailures - 1 {
		a, _ := g3.begin("ops", "c1")
		a.done(failed)
	}
	a, _ := g3.begin("ops", "c3")
	a.done(succeeded)
	if f, ok := g3.users.Peek("ops"); ok {
		t.Errorf("after a success the user's failures stay: %+v", f)
	}
}

// TestLoginGuardBoundsChecks: concurrent password checks never exceed the
// guard's slots, whatever the number of logins at once.
func TestLoginGuardBoundsChecks(t *testing.T) {
	t.Parallel()
	g := newLoginGuard()
	var now, most atomic.Int32
	var wg sync.WaitGroup
	for range 32 {
		wg.Go(func() {
			_, _ = g.check(context.Background(), func() bool {
				n := now.Add(1)
				for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
				}
				time.Sleep(2 * time.Millisecond) // the work of a check, not synchronisation
				now.Add(-1)
				return true
			})
		})
	}
	wg.Wait()
	if m := int(most.Load()); m < 1 || m > cap(g.checks) {
		t.Errorf("%d checks at once, want at most %d", m, cap(g.checks))
	}
}

// TestClientIPAndSecure: X-Forwarded-For and X-Forwarded-Proto count only
// from a trusted proxy, and then the address is the last one not a proxy.
func TestClientIPAndSecure(t *testing.T) {
	t.Parallel()
	s := &Server{opts: Options{TrustedProxies: []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8")}}}
	for _, tc := range []struct {
		remote, xff, proto string
		ip                 string
		secure             bool
	}{
		{"192.0.2.1:5000", "198.51.100.7", "https", "192.0.2.1", false},
		{"10.1.2.3:5000", "203.0.113.9, 198.51.100.7", "https", "198.51.100.7", true},
		{"10.1.2.3:5000", "198.51.100.7, 10.9.9.9", "http", "198.51.100.7", false},
		{"10.1.2.3:5000", "", "https, http", "10.1.2.3", false},
		{"10.1.2.3:5000", "garbage, 198.51.100.7", "", "198.51.100.7", false},
		{"10.1.2.3:5000", "198.51.100.7, garbage", "", "10.1.2.3", false},
		{"[::ffff:10.1.2.3]:5000", "2001:db8::1", "https", "2001:db8::1", true},
	} {
		r, _ := http.NewRequest(http.MethodGet, "http://x/", nil)
		r.RemoteAddr = tc.remote
		if tc.xff != "" {
			r.Header.Set("X-Forwarded-For", tc.xff)
		}
		if tc.proto != "" {
			r.Header.Set("X-Forwarded-Proto", tc.proto)
		}
		if got := s.ClientIP(r).String(); got != tc.ip {
			t.Errorf("%+v: ClientIP %s, want %s", tc, got, tc.ip)
		}
		if got := s.Secure(r); got != tc.secure {
			t.Errorf("%+v: Secure %v, want %v", tc, got, tc.secure)
		}
	}
	r, _ := http.NewRequest(http.MethodGet, "http://x/", nil)
	r.RemoteAddr = "10.1.2.3:5000"
	r.Header.Set("X-Forwarded-For", "2001:db8:1:2:3:4:5:6")
	if got := s.ClientKey(r); got != "2001:db8:1:2::/64" {
		t.Errorf("ClientKey of an IPv6 client: %s, want its /64", got)
	}
}

// TestAuditEscape: what could forge a line or a field is percent-encoded;
// everything else stays readable.
func TestAuditEscape(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"ops": "ops", "jane.doe@example.com": "jane.doe@example.com", "张伟": "张伟", "console login": "console login",
		"x\nop=login result=ok": "x%0Aop%3Dlogin result%3Dok", "a\"b\\c%": "a%22b%5Cc%25", "\u2028\u202e\t": "%E2%80%A8%E2%80%AE%09",
		"\xff": "%FF",
	} {
		if got := AuditEscape(in); got != want {
			t.Errorf("AuditEscape(%q) = %q, want %q", in, got, want)
		}
		if strings.ContainsAny(AuditEscape(in), "\n\r=\"") {
			t.Errorf("AuditEscape(%q) keeps a line break, '=' or '\"'", in)
		}
	}
}
