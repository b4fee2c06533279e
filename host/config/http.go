package config

import (
	"fmt"
	"net"
	"net/netip"
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
}

// HTTPUser is one entry of ejob.http.users.
type HTTPUser struct {
	Name string
	// PasswordHash is a bcrypt hash (`ejob hash-password`, or
	// htpasswd -nbB).
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
)

func httpKeys() []string     { return []string{keyListen, keyUsers, keySessionIdle, keySessionMax} }
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

func (d *decoder) http(e entry) *HTTPSettings {
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
	if good && len(h.Users) == 0 && !IsLoopback(h.Listen) {
		d.report(fe.value.Line, nil, "%s: %q is not a loopback address and no users are configured: "+
			"add ejob.http.users (name, passwordHash, role) or listen on 127.0.0.1", fe.path, h.Listen)
		return nil
	}
	return h
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
				if _, err := bcrypt.Cost([]byte(*k.dst)); err != nil {
					d.report(fe.value.Line, err, "%s: not a bcrypt hash (%v): store the hash, never the password "+
						"(`ejob hash-password` or `htpasswd -nbBC 10 USER PASSWORD` makes one)", fe.path, err)
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
