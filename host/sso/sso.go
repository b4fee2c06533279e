// Package sso signs console users in through an OpenID Connect provider
// (Keycloak, Dex, Okta, Casdoor, ...): the authorization code flow with
// state, nonce and PKCE (S256), the ID token verified by
// github.com/coreos/go-oidc (signature against the provider's published
// keys, issuer, audience, expiry) plus the nonce and, with several
// audiences, the authorized party; then one claim maps the user to the
// admin or the guest (read-only) role, and a user it maps to no role is
// refused.
//
// The console mounts Begin at GET /login/sso and Finish at the redirect
// URL's path (/login/sso/callback) and starts its own session for the
// Identity that Finish returns.
package sso

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"errors"
	"fmt"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"
	"github.com/hashicorp/go-hclog"
	lru "github.com/hashicorp/golang-lru/v2"
	"golang.org/x/oauth2"
	"golang.org/x/time/rate"

	"github.com/ejob-io/ejob/host/hostconfig"
)

// Limits of the flows in progress.
const (
	// FlowTTL is how long a user has at the provider between Begin and
	// Finish.
	FlowTTL = 10 * time.Minute
	// MaxFlows bounds the flows in progress (Begin answers unauthenticated
	// requests: memory must not grow with them).
	MaxFlows = 10000
	// MaxClientFlows bounds one client's flows in progress: its next
	// Begin forgets its oldest flow, so one client never holds more than
	// this share of MaxFlows, and never refuses another.
	MaxClientFlows = 32
	// BeginRate and BeginBurst bound one client's Begins: BeginBurst at
	// once, then BeginRate a second; more are refused with ReasonRateLimited.
	BeginRate  = 1
	BeginBurst = 20
	// clientTableSize bounds the clients whose Begin rate is remembered.
	clientTableSize = 16384
	// FlowCookie carries the flow's id between Begin and Finish (never a
	// secret: state, nonce and verifier stay on the server).
	FlowCookie = "ejob_sso_flow"
	// requestTimeout bounds one call to the provider.
	requestTimeout = 15 * time.Second
	// retryAfter is how long a failed discovery is remembered before the
	// next sign-in tries again.
	retryAfter = 10 * time.Second
)

// Reason says why a sign-in failed, in words a login page can map to a
// message (the details go to the server log only).
type Reason string

// Reasons.
const (
	// ReasonUnavailable: the provider's discovery document could not be
	// read (down, wrong issuer).
	ReasonUnavailable Reason = "unavailable"
	// ReasonState: no sign-in in progress for this browser, or it
	// expired, or the state does not match: start again.
	ReasonState Reason = "state"
	// ReasonDenied: the provider answered with an error (the user
	// cancelled, access_denied, ...).
	ReasonDenied Reason = "denied"
	// ReasonToken: the code exchange failed or the ID token was refused
	// (signature, issuer, audience, expiry, nonce).
	ReasonToken Reason = "token"
	// ReasonNoRole: the user's role claim holds none of the configured
	// values.
	ReasonNoRole Reason = "norole"
	// ReasonBusy: too many sign-ins in progress.
	ReasonBusy Reason = "busy"
	// ReasonRateLimited: this client began too many sign-ins; try again
	// after Error.RetryAfter.
	ReasonRateLimited Reason = "ratelimited"
)

// Error is a failed sign-in: Reason for the page, Err for the log.
type Error struct {
	Reason Reason
	Err    error
	// RetryAfter is how long to wait (ReasonRateLimited).
	RetryAfter time.Duration
}

func (e *Error) Error() string { return "single sign-on: " + string(e.Reason) + ": " + e.Err.Error() }
func (e *Error) Unwrap() error { return e.Err }

func fail(r Reason, format string, args ...any) error {
	return &Error{Reason: r, Err: fmt.Errorf(format, args...)}
}

// ReasonOf is err's Reason, ReasonToken for an error of another kind.
func ReasonOf(err error) Reason {
	if e, ok := errors.AsType[*Error](err); ok {
		return e.Reason
	}
	return ReasonToken
}

// Identity is a user the provider vouched for.
type Identity struct {
	// Username is the UsernameClaim's value (else email, else sub).
	Username string
	// Subject is the provider's stable id of the user (sub).
	Subject string
	// Role is hostconfig.RoleAdmin or hostconfig.RoleGuest.
	Role string
}

// Options configure a Client.
type Options struct {
	Settings hostconfig.OIDCSettings
	Logger   hclog.Logger
	// HTTPClient calls the provider; nil: one with a 15 s timeout.
	HTTPClient *http.Client
	// Now is the clock the ID token's expiry is checked against; nil:
	// time.Now.
	Now func() time.Time
	// ClientKey names a request's client for the per-client bounds (its
	// address); nil: the peer's address.
	ClientKey func(*http.Request) string
	// Secure reports whether the browser reached the console over HTTPS
	// (the flow cookie is then Secure); nil: the request came over TLS.
	Secure func(*http.Request) bool
}

// Client is the console's relying party at one provider.
type Client struct {
	set  hostconfig.OIDCSettings
	log  hclog.Logger
	http *http.Client
	now  func() time.Time

	clientKey func(*http.Request) string
	secureReq func(*http.Request) bool
	// begins is each client's Begin rate.
	begins *lru.Cache[string, *rate.Limiter]

	mu      sync.Mutex
	disc    *discovered
	discErr error
	discAt  time.Time
	flows   map[string]flow
	// byClient is each client's flows in progress, oldest first.
	byClient map[string][]string
}

// discovered is what discovery gave: the provider, its verifier and the
// OAuth 2 endpoints.
type discovered struct {
	provider *oidc.Provider
	verifier *oidc.IDTokenVerifier
	oauth    oauth2.Config
}

type flow struct {
	state, nonce, verifier string
	expires                time.Time
	client                 string
}

// New returns a client for opts.Settings and tries discovery once: a
// provider that cannot be reached is logged as an error and tried again
// at the next sign-in (at most every 10 s), so the console and the jobs
// start while the provider is down, and SSO works once it is back.
func New(ctx context.Context, opts Options) *Client {
	begins, _ := lru.New[string, *rate.Limiter](clientTableSize)
	c := &Client{set: opts.Settings, log: opts.Logger, http: opts.HTTPClient, now: opts.Now, flows: map[string]flow{},
		byClient: map[string][]string{}, begins: begins, clientKey: opts.ClientKey, secureReq: opts.Secure}
	if c.clientKey == nil {
		c.clientKey = func(r *http.Request) string {
			host, _, _ := net.SplitHostPort(r.RemoteAddr)
			return host
		}
	}
	if c.secureReq == nil {
		c.secureReq = func(r *http.Request) bool { return r.TLS != nil }
	}
	if c.log == nil {
		c.log = hclog.NewNullLogger()
	}
	if c.http == nil {
		c.http = &http.Client{Timeout: requestTimeout}
	}
	if c.now == nil {
		c.now = time.Now
	}
	if _, err := c.discover(ctx); err != nil {
		c.log.Error("single sign-on is unavailable until the provider answers (password login still works)",
			"issuer", c.set.Issuer, "error", err)
	} else {
		c.log.Info("single sign-on ready", "issuer", c.set.Issuer, "client_id", c.set.ClientID)
	}
	return c
}

// Err is the last discovery error, nil once discovery has succeeded.
func (c *Client) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.disc != nil {
		return nil
	}
	return c.discErr
}

// discover returns the discovered provider, reading the discovery
// document if it has not been read yet (a failure is remembered for
// retryAfter).
func (c *Client) discover(ctx context.Context) (*discovered, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.disc != nil {
		return c.disc, nil
	}
	if c.discErr != nil && c.now().Sub(c.discAt) < retryAfter {
		return nil, c.discErr
	}
	ctx, cancel := context.WithTimeout(ctx, requestTimeout)
	defer cancel()
	p, err := oidc.NewProvider(oidc.ClientContext(ctx, c.http), c.set.Issuer)
	if err != nil {
		c.discErr, c.discAt = fmt.Errorf("discovery at %s/.well-known/openid-configuration: %w",
			strings.TrimSuffix(c.set.Issuer, "/"), err), c.now()
		return nil, c.discErr
	}
	c.disc = &discovered{
		provider: p,
		verifier: p.Verifier(&oidc.Config{ClientID: c.set.ClientID, Now: c.now}),
		oauth: oauth2.Config{ClientID: c.set.ClientID, ClientSecret: c.set.ClientSecret, Endpoint: p.Endpoint(),
			RedirectURL: c.set.RedirectURL, Scopes: c.set.Scopes},
	}
	c.discErr = nil
	return c.disc, nil
}

// Begin starts a sign-in: it remembers a new state, nonce and PKCE
// verifier for this browser (a cookie holds the flow's id) and redirects
// to the provider. A client (ClientKey) may begin BeginBurst sign-ins at
// once and then BeginRate a second, and holds at most MaxClientFlows in
// progress (its oldest is forgotten). On an error it has written nothing.
func (c *Client) Begin(w http.ResponseWriter, r *http.Request) error {
	client := c.clientKey(r)
	lim := rate.NewLimiter(BeginRate, BeginBurst)
	if had, ok, _ := c.begins.PeekOrAdd(client, lim); ok {
		lim = had
	}
	if res := lim.Reserve(); res.Delay() > 0 {
		res.Cancel()
		return &Error{Reason: ReasonRateLimited, RetryAfter: max(time.Second, res.Delay()),
			Err: fmt.Errorf("client %s began more than %d sign-ins (then %d a second)", client, BeginBurst, BeginRate)}
	}
	d, err := c.discover(r.Context())
	if err != nil {
		return &Error{Reason: ReasonUnavailable, Err: err}
	}
	f := flow{state: rand.Text(), nonce: rand.Text(), verifier: oauth2.GenerateVerifier(), expires: c.now().Add(FlowTTL),
		client: client}
	id := rand.Text()
	c.mu.Lock()
	now := c.now()
	if mine := c.byClient[client]; len(mine) >= MaxClientFlows {
		c.forget(mine[0])
	}
	if len(c.flows) >= MaxFlows {
		for k, old := range c.flows {
			if now.After(old.expires) {
				c.forget(k)
			}
		}
	}
	if len(c.flows) >= MaxFlows {
		c.mu.Unlock()
		return fail(ReasonBusy, "%d sign-ins in progress", MaxFlows)
	}
	c.flows[id] = f
	c.byClient[client] = append(c.byClient[client], id)
	c.mu.Unlock()
	http.SetCookie(w, &http.Cookie{Name: FlowCookie, Value: id, Path: "/login/sso", MaxAge: int(FlowTTL / time.Second),
		HttpOnly: true, Secure: c.secure(r), SameSite: http.SameSiteLaxMode})
	http.Redirect(w, r, d.oauth.AuthCodeURL(f.state, oidc.Nonce(f.nonce), oauth2.S256ChallengeOption(f.verifier)), http.StatusFound)
	return nil
}

// forget removes flow id (c.mu held).
func (c *Client) forget(id string) {
	f, ok := c.flows[id]
	if !ok {
		return
	}
	delete(c.flows, id)
	ids := slices.DeleteFunc(c.byClient[f.client], func(s string) bool { return s == id })
	if len(ids) == 0 {
		delete(c.byClient, f.client)
	} else {
		c.byClient[f.client] = ids
	}
}

// secure says whether the browser reaches the console over TLS: the
// flow cookie then never travels in clear.
func (c *Client) secure(r *http.Request) bool {
	return c.secureReq(r) || strings.HasPrefix(c.set.RedirectURL, "https:")
}

// Finish completes a sign-in at the redirect URL: the flow of this
// browser (used once), its state, the code exchanged with the PKCE
// verifier, the ID token verified (signature, issuer, audience, expiry,
// nonce, authorized party), then the role claim mapped. It clears the
// flow cookie.
func (c *Client) Finish(w http.ResponseWriter, r *http.Request) (Identity, error) {
	http.SetCookie(w, &http.Cookie{Name: FlowCookie, Value: "", Path: "/login/sso", MaxAge: -1,
		HttpOnly: true, Secure: c.secure(r), SameSite: http.SameSiteLaxMode})
	q := r.URL.Query()
	f, err := c.takeFlow(r)
	if err != nil {
		return Identity{}, err
	}
	if subtle.ConstantTimeCompare([]byte(q.Get("state")), []byte(f.state)) != 1 {
		return Identity{}, fail(ReasonState, "the state parameter does not match this browser's sign-in")
	}
	if e := q.Get("error"); e != "" {
		return Identity{}, fail(ReasonDenied, "the provider answered %s: %s", e, q.Get("error_description"))
	}
	code := q.Get("code")
	if code == "" {
		return Identity{}, fail(ReasonToken, "no code in the provider's answer")
	}
	d, err := c.discover(r.Context())
	if err != nil {
		return Identity{}, &Error{Reason: ReasonUnavailable, Err: err}
	}
	ctx, cancel := context.WithTimeout(oidc.ClientContext(r.Context(), c.http), requestTimeout)
	defer cancel()
	tok, err := d.oauth.Exchange(ctx, code, oauth2.VerifierOption(f.verifier))
	if err != nil {
		return Identity{}, fail(ReasonToken, "code exchange at the provider: %w", err)
	}
	raw, _ := tok.Extra("id_token").(string)
	if raw == "" {
		return Identity{}, fail(ReasonToken, "the token response holds no id_token (is openid among the scopes?)")
	}
	idt, err := d.verifier.Verify(ctx, raw)
	if err != nil {
		return Identity{}, fail(ReasonToken, "ID token refused: %w", err)
	}
	if subtle.ConstantTimeCompare([]byte(idt.Nonce), []byte(f.nonce)) != 1 {
		return Identity{}, fail(ReasonToken, "ID token refused: its nonce is not this sign-in's")
	}
	if idt.AccessTokenHash != "" {
		if err := idt.VerifyAccessToken(tok.AccessToken); err != nil {
			return Identity{}, fail(ReasonToken, "ID token refused: %w", err)
		}
	}
	var claims map[string]any
	if err := idt.Claims(&claims); err != nil {
		return Identity{}, fail(ReasonToken, "ID token claims: %w", err)
	}
	if azp, _ := claims["azp"].(string); len(idt.Audience) > 1 && azp != c.set.ClientID {
		return Identity{}, fail(ReasonToken, "ID token refused: several audiences and the authorized party is %q, not %q", azp, c.set.ClientID)
	}
	if _, has := lookup(claims, c.set.RoleClaim); !has && d.provider.UserInfoEndpoint() != "" {
		// Some providers (Keycloak's userinfo mappers, Okta's groups)
		// give the claim at the userinfo endpoint only.
		info, err := d.provider.UserInfo(ctx, oauth2.StaticTokenSource(tok))
		if err != nil {
			return Identity{}, fail(ReasonToken, "userinfo (for claim %s): %w", c.set.RoleClaim, err)
		}
		if info.Subject != idt.Subject {
			return Identity{}, fail(ReasonToken, "userinfo is about subject %q, the ID token about %q", info.Subject, idt.Subject)
		}
		var extra map[string]any
		if err := info.Claims(&extra); err != nil {
			return Identity{}, fail(ReasonToken, "userinfo claims: %w", err)
		}
		for k, v := range extra {
			if _, has := claims[k]; !has {
				claims[k] = v
			}
		}
	}
	id := Identity{Subject: idt.Subject, Username: username(claims, c.set.UsernameClaim, idt.Subject)}
	id.Role, err = c.role(claims)
	if err != nil {
		return id, err
	}
	return id, nil
}

// takeFlow removes and returns this browser's flow.
func (c *Client) takeFlow(r *http.Request) (flow, error) {
	ck, err := r.Cookie(FlowCookie)
	if err != nil || ck.Value == "" {
		return flow{}, fail(ReasonState, "no sign-in in progress in this browser (cookie %s missing)", FlowCookie)
	}
	c.mu.Lock()
	f, ok := c.flows[ck.Value]
	c.forget(ck.Value)
	c.mu.Unlock()
	switch {
	case !ok:
		return flow{}, fail(ReasonState, "unknown or already used sign-in")
	case c.now().After(f.expires):
		return flow{}, fail(ReasonState, "the sign-in expired (%s at the provider)", FlowTTL)
	}
	return f, nil
}

// role maps the role claim: admin if any value is an admin value, else
// guest if any is a read-only value, else refused.
func (c *Client) role(claims map[string]any) (string, error) {
	v, has := lookup(claims, c.set.RoleClaim)
	if !has {
		return "", fail(ReasonNoRole, "the user has no claim %s", c.set.RoleClaim)
	}
	values := strs(v)
	switch {
	case slices.ContainsFunc(values, func(s string) bool { return slices.Contains(c.set.AdminValues, s) }):
		return hostconfig.RoleAdmin, nil
	case slices.ContainsFunc(values, func(s string) bool { return slices.Contains(c.set.ReadOnlyValues, s) }):
		return hostconfig.RoleGuest, nil
	}
	return "", fail(ReasonNoRole, "claim %s = %q holds none of the admin values %q nor the read-only values %q",
		c.set.RoleClaim, values, c.set.AdminValues, c.set.ReadOnlyValues)
}

// lookup finds a claim by its whole name, else by walking a dotted path
// into nested objects (Keycloak's realm_access.roles).
func lookup(claims map[string]any, name string) (any, bool) {
	if v, ok := claims[name]; ok {
		return v, true
	}
	cur := any(claims)
	for part := range strings.SplitSeq(name, ".") {
		m, ok := cur.(map[string]any)
		if !ok {
			return nil, false
		}
		if cur, ok = m[part]; !ok {
			return nil, false
		}
	}
	return cur, true
}

// strs is a claim's values: a string, or the strings of a list.
func strs(v any) []string {
	switch v := v.(type) {
	case string:
		return []string{v}
	case []any:
		var out []string
		for _, e := range v {
			if s, ok := e.(string); ok {
				out = append(out, s)
			}
		}
		return out
	}
	return nil
}

func username(claims map[string]any, name, sub string) string {
	for _, k := range []string{name, "email"} {
		if v, ok := lookup(claims, k); ok {
			if s, ok := v.(string); ok && s != "" {
				return s
			}
		}
	}
	return sub
}
