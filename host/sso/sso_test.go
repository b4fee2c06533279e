package sso_test

import (
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"

	"github.com/ejob-io/ejob/host/hostconfig"
	"github.com/ejob-io/ejob/host/sso"
	"github.com/ejob-io/ejob/internal/oidctest"
)

// console serves Begin and Finish as the console mounts them; the
// callback answers the identity as JSON, or 401 with the reason.
func console(t *testing.T, c func() *sso.Client) *httptest.Server {
	t.Helper()
	mux := http.NewServeMux()
	mux.HandleFunc("GET /login/sso", func(w http.ResponseWriter, r *http.Request) {
		if err := c().Begin(w, r); err != nil {
			http.Error(w, string(sso.ReasonOf(err))+": "+err.Error(), http.StatusServiceUnavailable)
		}
	})
	mux.HandleFunc("GET "+hostconfig.OIDCRedirectPath, func(w http.ResponseWriter, r *http.Request) {
		id, err := c().Finish(w, r)
		if err != nil {
			http.Error(w, string(sso.ReasonOf(err))+": "+err.Error(), http.StatusUnauthorized)
			return
		}
		_ = json.NewEncoder(w).Encode(id)
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv
}

func settings(issuer, redirect string) hostconfig.OIDCSettings {
	return hostconfig.OIDCSettings{Issuer: issuer, ClientID: "ejob", ClientSecret: "s3cret", RedirectURL: redirect,
		Scopes: hostconfig.DefaultOIDCScopes(), RoleClaim: oidctest.GroupsClaim, AdminValues: []string{"ops"},
		ReadOnlyValues: []string{"viewers", "auditors"}, UsernameClaim: hostconfig.DefaultOIDCUsernameClaim}
}

// signIn runs the whole flow in a fresh cookie jar: the console's
// /login/sso, the provider's login form, back to the callback. It
// returns the callback's status and body.
func signIn(t *testing.T, consoleURL, user, password string) (int, string) {
	t.Helper()
	jar, _ := cookiejar.New(nil)
	hc := &http.Client{Jar: jar, Timeout: 30 * time.Second}
	resp, err := hc.Get(consoleURL + "/login/sso")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.Contains(resp.Request.URL.Path, oidctest.LoginPath) {
		t.Fatalf("after /login/sso: %s at %s: %s", resp.Status, resp.Request.URL, body)
	}
	form := url.Values{"id": {resp.Request.URL.Query().Get("authRequestID")}, "username": {user}, "password": {password}}
	resp, err = hc.PostForm(resp.Request.URL.Scheme+"://"+resp.Request.URL.Host+oidctest.LoginPath, form)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ = io.ReadAll(resp.Body)
	if resp.Request.URL.Path != hostconfig.OIDCRedirectPath {
		t.Fatalf("login form: ended at %s: %s", resp.Request.URL, body)
	}
	return resp.StatusCode, string(body)
}

// TestSignInAtRealProvider: users of a real OpenID Provider get the role
// their groups claim gives, and one whose claim gives none is refused.
func TestSignInAtRealProvider(t *testing.T) {
	var client *sso.Client
	cons := console(t, func() *sso.Client { return client })
	op := oidctest.Start(t, oidctest.Client{ID: "ejob", Secret: "s3cret", RedirectURL: cons.URL + hostconfig.OIDCRedirectPath},
		oidctest.User{Name: "alice", Password: "pw-alice", Groups: []string{"staff", "ops"}},
		oidctest.User{Name: "bob", Password: "pw-bob", Groups: []string{"auditors"}},
		oidctest.User{Name: "carol", Password: "pw-carol", Groups: []string{"staff"}},
		oidctest.User{Name: "dave", Password: "pw-dave"})
	client = sso.New(t.Context(), sso.Options{Settings: settings(op.Issuer, cons.URL+hostconfig.OIDCRedirectPath)})
	if err := client.Err(); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		user   string
		status int
		want   string
	}{
		{"alice", http.StatusOK, `{"Username":"alice","Subject":"alice","Role":"admin"}`},
		{"bob", http.StatusOK, `{"Username":"bob","Subject":"bob","Role":"guest"}`},
		{"carol", http.StatusUnauthorized, `norole: single sign-on: norole: claim groups = ["staff"] holds none of the admin values ["ops"] nor the read-only values ["viewers" "auditors"]`},
		{"dave", http.StatusUnauthorized, "norole: single sign-on: norole: the user has no claim groups"},
	} {
		status, body := signIn(t, cons.URL, tc.user, "pw-"+tc.user)
		if status != tc.status || strings.TrimSpace(body) != tc.want {
			t.Errorf("%s: %d %s\nwant %d %s", tc.user, status, body, tc.status, tc.want)
		}
	}
}

// TestProviderDown: discovery fails with a clear error, Begin refuses
// with ReasonUnavailable (no redirect), and once the provider answers
// (after the retry delay) sign-in works without a restart.
func TestProviderDown(t *testing.T) {
	h := newHostile(t)
	h.down.Store(true)
	var client *sso.Client
	cons := console(t, func() *sso.Client { return client })
	now := time.Now()
	var mu sync.Mutex
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	client = sso.New(t.Context(), sso.Options{Settings: settings(h.srv.URL, cons.URL+hostconfig.OIDCRedirectPath), Now: clock})
	if err := client.Err(); err == nil || err.Error() != "discovery at "+h.srv.URL+"/.well-known/openid-configuration: 503 Service Unavailable: down\n" {
		t.Fatalf("Err = %v", err)
	}
	hc := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	begin := func() (int, string) {
		resp, err := hc.Get(cons.URL + "/login/sso")
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		return resp.StatusCode, string(b)
	}
	if st, b := begin(); st != http.StatusServiceUnavailable || !strings.HasPrefix(b, "unavailable: ") {
		t.Errorf("Begin while down: %d %s", st, b)
	}
	h.down.Store(false)
	if st, b := begin(); st != http.StatusServiceUnavailable {
		t.Errorf("Begin within the retry delay: %d %s, want the remembered failure", st, b)
	}
	mu.Lock()
	now = now.Add(11 * time.Second)
	mu.Unlock()
	if st, b := begin(); st != http.StatusFound || client.Err() != nil {
		t.Errorf("Begin once the provider is back: %d %s (Err %v)", st, b, client.Err())
	}
}

// hostile is an OpenID Provider that answers the token request with an ID
// token the test crafts, signed with its published key (or another). It
// checks the PKCE verifier against the challenge of the authorization
// request, so a client that skipped PKCE would fail every case.
type hostile struct {
	srv       *httptest.Server
	down      atomic.Bool
	key, evil *rsa.PrivateKey
	mu        sync.Mutex
	challenge string
	nonce     string
	claims    func(nonce string) map[string]any
	signWith  *rsa.PrivateKey
}

func newHostile(t *testing.T) *hostile {
	t.Helper()
	h := &hostile{}
	var err error
	if h.key, err = rsa.GenerateKey(rand.Reader, 2048); err != nil {
		t.Fatal(err)
	}
	if h.evil, err = rsa.GenerateKey(rand.Reader, 2048); err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /.well-known/openid-configuration", func(w http.ResponseWriter, _ *http.Request) {
		if h.down.Load() {
			http.Error(w, "down", http.StatusServiceUnavailable)
			return
		}
		_ = json.NewEncoder(w).Encode(map[string]any{"issuer": h.srv.URL, "authorization_endpoint": h.srv.URL + "/authorize",
			"token_endpoint": h.srv.URL + "/token", "jwks_uri": h.srv.URL + "/jwks", "id_token_signing_alg_values_supported": []string{"RS256"},
			"response_types_supported": []string{"code"}, "subject_types_supported": []string{"public"}})
	})
	mux.HandleFunc("GET /jwks", func(w http.ResponseWriter, _ *http.Request) {
		_ = json.NewEncoder(w).Encode(jose.JSONWebKeySet{Keys: []jose.JSONWebKey{{Key: &h.key.PublicKey, KeyID: "k1", Algorithm: "RS256", Use: "sig"}}})
	})
	mux.HandleFunc("POST /token", func(w http.ResponseWriter, r *http.Request) {
		h.mu.Lock()
		defer h.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		sum := sha256.Sum256([]byte(r.FormValue("code_verifier")))
		if r.FormValue("code") != "the-code" || base64.RawURLEncoding.EncodeToString(sum[:]) != h.challenge {
			w.WriteHeader(http.StatusBadRequest)
			_ = json.NewEncoder(w).Encode(map[string]string{"error": "invalid_grant"})
			return
		}
		sig, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.RS256, Key: h.signWith},
			(&jose.SignerOptions{}).WithType("JWT").WithHeader("kid", "k1"))
		if err != nil {
			t.Error(err)
			return
		}
		payload, _ := json.Marshal(h.claims(h.nonce))
		obj, err := sig.Sign(payload)
		if err != nil {
			t.Error(err)
			return
		}
		raw, _ := obj.CompactSerialize()
		_ = json.NewEncoder(w).Encode(map[string]any{"access_token": "at", "token_type": "Bearer", "expires_in": 60, "id_token": raw})
	})
	h.srv = httptest.NewServer(mux)
	t.Cleanup(h.srv.Close)
	return h
}

// TestCallbackRefusals: every token or request a console must not
// accept is refused, with the reason the login page shows.
func TestCallbackRefusals(t *testing.T) {
	h := newHostile(t)
	var client *sso.Client
	cons := console(t, func() *sso.Client { return client })
	client = sso.New(t.Context(), sso.Options{Settings: settings(h.srv.URL, cons.URL+hostconfig.OIDCRedirectPath)})
	good := func(nonce string) map[string]any {
		now := time.Now()
		return map[string]any{"iss": h.srv.URL, "sub": "u1", "aud": "ejob", "exp": now.Add(time.Minute).Unix(),
			"iat": now.Unix(), "nonce": nonce, "preferred_username": "mallory", "groups": []string{"ops"}}
	}
	with := func(k string, v any) func(string) map[string]any {
		return func(nonce string) map[string]any {
			c := good(nonce)
			c[k] = v
			return c
		}
	}
	for _, tc := range []struct {
		name     string
		claims   func(string) map[string]any
		signWith *rsa.PrivateKey
		state    string // "" : the flow's
		noCookie bool
		want     string // prefix of the callback's answer
	}{
		{name: "good", claims: good, want: `{"Username":"mallory","Subject":"u1","Role":"admin"}`},
		{name: "bad state", claims: good, state: "forged", want: "state: "},
		{name: "no flow cookie", claims: good, noCookie: true, want: "state: "},
		{name: "bad nonce", claims: with("nonce", "another"), want: "token: single sign-on: token: ID token refused: its nonce is not this sign-in's"},
		{name: "no nonce", claims: func(n string) map[string]any { c := good(n); delete(c, "nonce"); return c }, want: "token: single sign-on: token: ID token refused: its nonce"},
		{name: "wrong audience", claims: with("aud", "another-client"), want: `token: single sign-on: token: ID token refused: oidc: expected audience "ejob" got ["another-client"]`},
		{name: "several audiences, azp another", claims: func(n string) map[string]any {
			c := good(n)
			c["aud"], c["azp"] = []string{"ejob", "other"}, "other"
			return c
		}, want: `token: single sign-on: token: ID token refused: several audiences and the authorized party is "other", not "ejob"`},
		{name: "expired", claims: with("exp", time.Now().Add(-time.Minute).Unix()), want: "token: single sign-on: token: ID token refused: oidc: token is expired"},
		{name: "another issuer", claims: with("iss", "https://other-op.example.com"), want: "token: single sign-on: token: ID token refused: oidc: id token issued by a different provider"},
		{name: "signed by another key", claims: good, signWith: h.evil, want: "token: single sign-on: token: ID token refused: failed to verify signature"},
		{name: "role claim maps to nothing", claims: with("groups", []string{"staff"}), want: "norole: "},
	} {
		t.Run(tc.name, func(t *testing.T) {
			jar, _ := cookiejar.New(nil)
			hc := &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
			resp, err := hc.Get(cons.URL + "/login/sso")
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			loc, err := url.Parse(resp.Header.Get("Location"))
			if err != nil || resp.StatusCode != http.StatusFound {
				t.Fatalf("Begin: %s %v", resp.Status, err)
			}
			q := loc.Query()
			if q.Get("code_challenge_method") != "S256" || q.Get("nonce") == "" || q.Get("state") == "" || q.Get("client_id") != "ejob" {
				t.Fatalf("authorization request lacks PKCE, nonce or state: %s", loc)
			}
			h.mu.Lock()
			h.challenge, h.nonce, h.claims, h.signWith = q.Get("code_challenge"), q.Get("nonce"), tc.claims, h.key
			if tc.signWith != nil {
				h.signWith = tc.signWith
			}
			h.mu.Unlock()
			state := q.Get("state")
			if tc.state != "" {
				state = tc.state
			}
			if tc.noCookie {
				hc.Jar, _ = cookiejar.New(nil)
			}
			resp, err = hc.Get(cons.URL + hostconfig.OIDCRedirectPath + "?" + url.Values{"code": {"the-code"}, "state": {state}}.Encode())
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if !strings.HasPrefix(string(b), tc.want) {
				t.Errorf("callback: %s %s\nwant prefix %s", resp.Status, b, tc.want)
			}
			// A flow is used once: replaying the callback is refused.
			if tc.name == "good" {
				resp, err = hc.Get(cons.URL + hostconfig.OIDCRedirectPath + "?" + url.Values{"code": {"the-code"}, "state": {state}}.Encode())
				if err != nil {
					t.Fatal(err)
				}
				b, _ = io.ReadAll(resp.Body)
				resp.Body.Close()
				if !strings.HasPrefix(string(b), "state: ") {
					t.Errorf("replayed callback: %s %s", resp.Status, b)
				}
			}
		})
	}
}
