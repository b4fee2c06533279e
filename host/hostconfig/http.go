package hostconfig

import (
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"golang.org/x/crypto/bcrypt"
	"gopkg.in/yaml.v3"
)

// HTTPSettings is the ejob.http section: the operations HTTP server (the
// ElasticJob console's REST API, /metrics, /healthz, /readyz).
type HTTPSettings struct {
	// Listen is the host:port the server listens on.
	Listen string
	// Users may log in; empty means one admin whose random password the
	// server prints once in its log at start (allowed on a loopback
	// address only).
	Users []HTTPUser
	// SessionIdleTimeout ends a web console session after this long
	// without a request; SessionMaxAge this long after login. Zero: the
	// server's defaults (30m, 12h).
	SessionIdleTimeout time.Duration
	SessionMaxAge      time.Duration
	// OIDC is single sign-on with an OpenID Connect provider; nil: none.
	OIDC *OIDCSettings
	// TLS makes the server serve HTTPS with a certificate and key read
	// from files (read again on SIGHUP); nil: plain HTTP.
	TLS *TLSFiles
	// TrustedProxies are the reverse proxies (addresses and CIDR ranges)
	// whose X-Forwarded-For and X-Forwarded-Proto headers are believed:
	// the client's address for the login rate limits and audit lines,
	// and whether the browser reached the proxy over HTTPS (the session
	// cookie is then Secure). Any other peer's headers are ignored.
	TrustedProxies []netip.Prefix
	// AllowInsecureHTTP allows plain HTTP on an address that is not a
	// loopback one (TLS terminated by a proxy in front); without it such
	// a listen address needs TLS.
	AllowInsecureHTTP bool
	// AuditLog is a file the audit lines go to (appended, mode 0600,
	// opened again on SIGHUP) instead of the process's log; "": the
	// process's log.
	AuditLog string
}

// TLSFiles is ejob.http.tls: PEM files of the server's certificate
// (chain) and private key.
type TLSFiles struct {
	CertFile, KeyFile string
}

// MinPasswordHashCost is the lowest bcrypt cost ejob.http.users may use:
// a cheaper hash makes a guessed password cheap to try, and a login by a
// known name faster than one by an unknown name.
const MinPasswordHashCost = bcrypt.DefaultCost

// OIDCSettings is ejob.http.oidc: console sign-in through an OpenID
// Connect provider (Keycloak, Dex, Okta, Casdoor, ...) with the
// authorization code flow, a claim of the ID token (or of the userinfo
// answer) mapping the user to the admin or the guest (read-only) role.
type OIDCSettings struct {
	// Issuer is the provider's issuer URL (discovery is at
	// Issuer/.well-known/openid-configuration): https, or http on a
	// loopback host.
	Issuer string
	// ClientID and ClientSecret are the console's client at the provider.
	ClientID, ClientSecret string
	// RedirectURL is the console's callback as the browser reaches it,
	// ending in RedirectPath; registered at the provider.
	RedirectURL string
	// Scopes asked for; always holds openid. Default DefaultOIDCScopes.
	Scopes []string
	// RoleClaim names the claim whose value (a string or a list of
	// strings) gives the role; a dotted name (realm_access.roles) walks
	// into nested objects when no claim has the whole name.
	RoleClaim string
	// AdminValues and ReadOnlyValues are the claim values that give the
	// admin and the guest (read-only) role; admin wins when both match.
	// A user matching none is refused.
	AdminValues, ReadOnlyValues []string
	// UsernameClaim names the claim shown as the user's name. Default
	// DefaultOIDCUsernameClaim; falls back to email, then sub.
	UsernameClaim string
	// Line is the line of the oidc key.
	Line int
}

// OIDC defaults and the console's callback path.
const (
	DefaultOIDCUsernameClaim = "preferred_username"
	OIDCRedirectPath         = "/login/sso/callback"
)

// DefaultOIDCScopes are the scopes asked for without ejob.http.oidc.scopes.
func DefaultOIDCScopes() []string { return []string{"openid", "profile", "email"} }

// HTTPUser is one entry of ejob.http.users.
type HTTPUser struct {
	Name string
	// PasswordHash is a bcrypt hash of cost MinPasswordHashCost or more
	// (`ejob hash-password`, or htpasswd -nbBC 12 USER PASSWORD).
	PasswordHash string
	// Role is RoleAdmin or RoleGuest.
	Role string
}

// HTTP roles: an admin may read and write, a guest only read.
const (
	RoleAdmin = "admin"
	RoleGuest = "guest"
)

// Keys of ejob.http and of one user.
const (
	keyHTTP         = "http"
	keyListen       = "listen"
	keyUsers        = "users"
	keyName         = "name"
	keyPasswordHash = "passwordHash"
	keyRole         = "role"
	keySessionIdle  = "sessionIdleTimeout"
	keySessionMax   = "sessionMaxAge"
	keyOIDC         = "oidc"
	keyTLS          = "tls"
	keyCertFile     = "certFile"
	keyKeyFile      = "keyFile"
	keyTrusted      = "trustedProxies"
	keyInsecure     = "allowInsecureHTTP"
	keyAuditLog     = "auditLog"

	keyIssuer         = "issuer"
	keyClientID       = "clientId"
	keyClientSecret   = "clientSecret"
	keyRedirectURL    = "redirectUrl"
	keyScopes         = "scopes"
	keyRoleClaim      = "roleClaim"
	keyAdminValues    = "adminValues"
	keyReadOnlyValues = "readOnlyValues"
	keyUsernameClaim  = "usernameClaim"
)

func httpKeys() []string {
	return []string{keyListen, keyUsers, keySessionIdle, keySessionMax, keyOIDC, keyTLS, keyTrusted, keyInsecure, keyAuditLog}
}
func tlsKeys() []string { return []string{keyCertFile, keyKeyFile} }
func oidcKeys() []string {
	return []string{keyIssuer, keyClientID, keyClientSecret, keyRedirectURL, keyScopes, keyRoleClaim,
		keyAdminValues, keyReadOnlyValues, keyUsernameClaim}
}
func httpUserKeys() []string { return []string{keyName, keyPasswordHash, keyRole} }

// IsLoopback reports whether the host part of a listen address is a
// loopback address or localhost (an empty host listens on every
// interface: not loopback).
func IsLoopback(listen string) bool {
	host, _, err := net.SplitHostPort(listen)
	if err != nil {
		return false
	}
	if strings.EqualFold(host, "localhost") {
		return true
	}
	a, err := netip.ParseAddr(host)
	return err == nil && a.IsLoopback()
}

// http reads ejob.http; relative file paths are relative to baseDir.
func (d *decoder) http(e entry, baseDir string) *HTTPSettings {
	fs, ok := d.section(e.value, e.path, httpKeys(), false)
	if !ok {
		return nil
	}
	h := &HTTPSettings{}
	fe, ok := fs[keyListen]
	if !ok {
		d.missing(e.line(), e.path, keyListen, " (e.g. listen: 127.0.0.1:8088)")
		return nil
	}
	if h.Listen, ok = d.str(fe); !ok {
		return nil
	}
	if _, port, err := net.SplitHostPort(h.Listen); err != nil || port == "" {
		d.report(fe.value.Line, nil, "%s: want host:port (e.g. 127.0.0.1:8088), got %q", fe.path, h.Listen)
		return nil
	}
	good := true
	for _, k := range []struct {
		key string
		dst *time.Duration
	}{{keySessionIdle, &h.SessionIdleTimeout}, {keySessionMax, &h.SessionMaxAge}} {
		if fe, ok := fs[k.key]; ok {
			v, dok := d.duration(fe)
			if dok && v > 0 && v < time.Second {
				d.report(fe.value.Line, nil, "%s: want at least 1s, got %s", fe.path, v)
				dok = false
			}
			*k.dst = v
			good = good && dok
		}
	}
	if !good {
		return nil
	}
	if ue, ok := fs[keyUsers]; ok {
		h.Users, good = d.httpUsers(ue)
	}
	if oe, ok := fs[keyOIDC]; ok && !isNull(oe.value) {
		h.OIDC = d.oidc(oe)
		good = good && h.OIDC != nil
	}
	if te, ok := fs[keyTLS]; ok && !isNull(te.value) {
		h.TLS = d.tlsFiles(te, baseDir)
		good = good && h.TLS != nil
	}
	if pe, ok := fs[keyTrusted]; ok {
		h.TrustedProxies, ok = d.prefixes(pe)
		good = good && ok
	}
	if ie, ok := fs[keyInsecure]; ok {
		h.AllowInsecureHTTP, ok = d.boolean(ie)
		good = good && ok
	}
	if ae, ok := fs[keyAuditLog]; ok {
		if h.AuditLog, ok = d.str(ae); ok && h.AuditLog != "" && baseDir != "" && !filepath.IsAbs(h.AuditLog) {
			h.AuditLog = filepath.Join(baseDir, h.AuditLog)
		}
		good = good && ok
	}
	if !good {
		return nil
	}
	if len(h.Users) == 0 && h.OIDC == nil && !IsLoopback(h.Listen) {
		d.report(fe.value.Line, nil, "%s: %q is not a loopback address and no users are configured: "+
			"add ejob.http.users (name, passwordHash, role) or ejob.http.oidc, or listen on 127.0.0.1", fe.path, h.Listen)
		return nil
	}
	if err := h.CheckTransport(); err != nil {
		d.report(fe.value.Line, err, "%s: %v", fe.path, err)
		return nil
	}
	return h
}

// ErrInsecureListen: plain HTTP on an address that is not a loopback one,
// without AllowInsecureHTTP.
var ErrInsecureListen = errors.New("plain HTTP on a non-loopback address")

// CheckTransport refuses plain HTTP on an address that is not a loopback
// one unless AllowInsecureHTTP says TLS is terminated in front: passwords
// and session cookies would cross the network in clear.
func (h HTTPSettings) CheckTransport() error {
	if h.TLS != nil || h.AllowInsecureHTTP || IsLoopback(h.Listen) {
		return nil
	}
	return fmt.Errorf("%w: %q would send passwords and session cookies in clear: set ejob.http.tls "+
		"(certFile, keyFile), or allowInsecureHTTP: true when a proxy in front terminates TLS, or listen on 127.0.0.1",
		ErrInsecureListen, h.Listen)
}

// tlsFiles reads ejob.http.tls; both files must be readable now (they are
// loaded at start).
func (d *decoder) tlsFiles(e entry, baseDir string) *TLSFiles {
	fs, ok := d.section(e.value, e.path, tlsKeys(), false)
	if !ok {
		return nil
	}
	t := &TLSFiles{}
	good := true
	for _, k := range []struct {
		key string
		dst *string
	}{{keyCertFile, &t.CertFile}, {keyKeyFile, &t.KeyFile}} {
		fe, has := fs[k.key]
		if !has {
			d.missing(e.value.Line, e.path, k.key, " (a PEM file)")
			good = false
			continue
		}
		s, sok := d.nonEmptyStr(fe)
		if !sok {
			good = false
			continue
		}
		if baseDir != "" && !filepath.IsAbs(s) {
			s = filepath.Join(baseDir, s)
		}
		*k.dst = s
	}
	if !good {
		return nil
	}
	if _, err := tls.LoadX509KeyPair(t.CertFile, t.KeyFile); err != nil {
		d.report(e.value.Line, err, "%s: certificate %s and key %s: %v", e.path, t.CertFile, t.KeyFile, err)
		return nil
	}
	return t
}

// prefixes reads a list of IP addresses and CIDR ranges.
func (d *decoder) prefixes(e entry) ([]netip.Prefix, bool) {
	items, lines, ok := d.list(e)
	if !ok {
		return nil, false
	}
	var out []netip.Prefix
	for i, it := range items {
		it = strings.TrimSpace(it)
		if it == "" {
			continue
		}
		p, err := ParsePrefix(it)
		if err != nil {
			d.report(lines[i], err, "%s[%d]: %v", e.path, i, err)
			ok = false
			continue
		}
		out = append(out, p)
	}
	return out, ok
}

// ParsePrefix reads an IP address (one address) or a CIDR range.
func ParsePrefix(s string) (netip.Prefix, error) {
	if strings.Contains(s, "/") {
		p, err := netip.ParsePrefix(s)
		if err != nil {
			return netip.Prefix{}, fmt.Errorf("want an IP address or a CIDR range such as 10.0.0.0/8, got %q", s)
		}
		return p.Masked(), nil
	}
	a, err := netip.ParseAddr(s)
	if err != nil {
		return netip.Prefix{}, fmt.Errorf("want an IP address or a CIDR range such as 10.0.0.0/8, got %q", s)
	}
	a = a.Unmap()
	return netip.PrefixFrom(a, a.BitLen()), nil
}

func (d *decoder) httpUsers(e entry) ([]HTTPUser, bool) {
	v := e.value
	if isNull(v) {
		return nil, true
	}
	if v.Kind != yaml.SequenceNode {
		d.report(v.Line, nil, "%s: want a list of users ({name, passwordHash, role}), got %s", e.path, describe(v))
		return nil, false
	}
	var out []HTTPUser
	ok := true
	seen := map[string]bool{}
	for i, n := range v.Content {
		n = resolve(n)
		path := fmt.Sprintf("%s[%d]", e.path, i)
		fs, sok := d.section(n, path, httpUserKeys(), false)
		if !sok {
			ok = false
			continue
		}
		var u HTTPUser
		uok := true
		for _, k := range []struct {
			key string
			dst *string
		}{{keyName, &u.Name}, {keyPasswordHash, &u.PasswordHash}, {keyRole, &u.Role}} {
			fe, has := fs[k.key]
			if !has {
				d.missing(n.Line, path, k.key, "")
				uok = false
				continue
			}
			s, sok := d.str(fe)
			if !sok {
				uok = false
				continue
			}
			*k.dst = strings.TrimSpace(s)
			switch {
			case *k.dst == "":
				d.report(fe.value.Line, nil, "%s: must not be empty", fe.path)
				uok = false
			case k.key == keyName && seen[*k.dst]:
				d.report(fe.value.Line, nil, "%s: user %q is listed twice", fe.path, *k.dst)
				uok = false
			case k.key == keyPasswordHash:
				cost, err := bcrypt.Cost([]byte(*k.dst))
				switch {
				case err != nil:
					d.report(fe.value.Line, err, "%s: not a bcrypt hash (%v): store the hash, never the password "+
						"(`ejob hash-password` or `htpasswd -nbBC 12 USER PASSWORD` makes one)", fe.path, err)
					uok = false
				case cost < MinPasswordHashCost:
					d.report(fe.value.Line, nil, "%s: user %q: the bcrypt hash has cost %d, want at least %d "+
						"(a cheap hash makes guessed passwords cheap to try): make a new one with `ejob hash-password`",
						fe.path, u.Name, cost, MinPasswordHashCost)
					uok = false
				}
			case k.key == keyRole:
				*k.dst = strings.ToLower(*k.dst)
				if *k.dst != RoleAdmin && *k.dst != RoleGuest {
					d.report(fe.value.Line, nil, "%s: want admin or guest, got %q", fe.path, s)
					uok = false
				}
			}
		}
		seen[u.Name] = true
		if !uok {
			ok = false
			continue
		}
		out = append(out, u)
	}
	return out, ok
}

// oidc reads ejob.http.oidc; nil after a reported problem.
func (d *decoder) oidc(e entry) *OIDCSettings {
	fs, ok := d.section(e.value, e.path, oidcKeys(), false)
	if !ok {
		return nil
	}
	o := &OIDCSettings{Line: e.line(), UsernameClaim: DefaultOIDCUsernameClaim}
	good := true
	for _, k := range []struct {
		key      string
		dst      *string
		required bool
		example  string
	}{
		{keyIssuer, &o.Issuer, true, " (the provider's issuer URL, e.g. https://keycloak.example.com/realms/ops)"},
		{keyClientID, &o.ClientID, true, ""},
		{keyClientSecret, &o.ClientSecret, true, " (write ${ENV_VAR} to keep it out of the file)"},
		{keyRedirectURL, &o.RedirectURL, true, " (e.g. https://ejob.example.com" + OIDCRedirectPath + ")"},
		{keyRoleClaim, &o.RoleClaim, true, " (e.g. groups)"},
		{keyUsernameClaim, &o.UsernameClaim, false, ""},
	} {
		fe, has := fs[k.key]
		if !has {
			if k.required {
				d.missing(e.value.Line, e.path, k.key, k.example)
				good = false
			}
			continue
		}
		if s, sok := d.nonEmptyStr(fe); sok {
			*k.dst = s
		} else {
			good = false
		}
	}
	if fe, has := fs[keyIssuer]; has && o.Issuer != "" {
		if err := checkOIDCURL(o.Issuer); err != nil {
			d.report(fe.value.Line, err, "%s: %v", fe.path, err)
			good = false
		}
	}
	if fe, has := fs[keyRedirectURL]; has && o.RedirectURL != "" {
		err := checkOIDCURL(o.RedirectURL)
		if err == nil {
			if u, _ := url.Parse(o.RedirectURL); !strings.HasSuffix(u.Path, OIDCRedirectPath) || u.RawQuery != "" || u.Fragment != "" {
				err = fmt.Errorf("the path must end in %s (the console's callback), without query or fragment, got %q", OIDCRedirectPath, o.RedirectURL)
			}
		}
		if err != nil {
			d.report(fe.value.Line, err, "%s: %v", fe.path, err)
			good = false
		}
	}
	o.Scopes = DefaultOIDCScopes()
	if fe, has := fs[keyScopes]; has {
		items, _, lok := d.list(fe)
		if !lok {
			good = false
		}
		o.Scopes = []string{"openid"}
		for _, it := range items {
			it = strings.TrimSpace(it)
			if it != "" && !slices.Contains(o.Scopes, it) {
				o.Scopes = append(o.Scopes, it)
			}
		}
	}
	values := map[string]string{}
	for _, k := range []struct {
		key string
		dst *[]string
	}{{keyAdminValues, &o.AdminValues}, {keyReadOnlyValues, &o.ReadOnlyValues}} {
		fe, has := fs[k.key]
		if !has {
			continue
		}
		items, _, lok := d.list(fe)
		if !lok {
			good = false
			continue
		}
		for _, it := range items {
			if it = strings.TrimSpace(it); it == "" {
				continue
			}
			if other, dup := values[it]; dup && other != k.key {
				d.report(fe.value.Line, nil, "%s: %q is also in %s.%s: a value gives one role", fe.path, it, e.path, other)
				good = false
			}
			values[it] = k.key
			*k.dst = append(*k.dst, it)
		}
	}
	if good && len(o.AdminValues) == 0 && len(o.ReadOnlyValues) == 0 {
		d.report(e.value.Line, nil, "%s: set %s and/or %s: the values of %s that give the admin and the read-only role "+
			"(a user matching none is refused)", e.path, keyAdminValues, keyReadOnlyValues, keyRoleClaim)
		good = false
	}
	if !good {
		return nil
	}
	return o
}

// checkOIDCURL accepts an absolute https URL, or http on a loopback host
// (a provider or console on this machine).
func checkOIDCURL(s string) error {
	u, err := url.Parse(s)
	switch {
	case err != nil:
		return fmt.Errorf("not a URL: %w", err)
	case u.Host == "" || u.Scheme != "https" && u.Scheme != "http":
		return fmt.Errorf("want an absolute https URL, got %q", s)
	case u.User != nil:
		return fmt.Errorf("must not hold user information, got %q", u.Redacted())
	case u.Scheme == "http" && !IsLoopback(hostPort(u)):
		return fmt.Errorf("want https (http only on a loopback host such as 127.0.0.1), got %q", s)
	}
	return nil
}

func hostPort(u *url.URL) string {
	if u.Port() != "" {
		return u.Host
	}
	return net.JoinHostPort(u.Hostname(), "80")
}
