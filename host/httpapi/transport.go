package httpapi

import (
	"crypto/tls"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"sync/atomic"

	"github.com/ejob-io/ejob/host/hostconfig"
)

// certificate serves the certificate of ejob.http.tls and reads its files
// again on reload; a reload that fails keeps the one in use.
type certificate struct {
	files hostconfig.TLSFiles
	cur   atomic.Pointer[tls.Certificate]
}

func loadCertificate(files hostconfig.TLSFiles) (*certificate, error) {
	c := &certificate{files: files}
	if err := c.reload(); err != nil {
		return nil, err
	}
	return c, nil
}

// reload reads the certificate and key files again.
func (c *certificate) reload() error {
	kp, err := tls.LoadX509KeyPair(c.files.CertFile, c.files.KeyFile)
	if err != nil {
		return fmt.Errorf("tls: certificate %s, key %s: %w", c.files.CertFile, c.files.KeyFile, err)
	}
	c.cur.Store(&kp)
	return nil
}

func (c *certificate) config() *tls.Config {
	return &tls.Config{
		MinVersion: tls.VersionTLS12,
		NextProtos: []string{"h2", "http/1.1"},
		GetCertificate: func(*tls.ClientHelloInfo) (*tls.Certificate, error) {
			return c.cur.Load(), nil
		},
	}
}

// peer is the address of the connection's other end.
func peer(r *http.Request) netip.Addr {
	ap, err := netip.ParseAddrPort(r.RemoteAddr)
	if err != nil {
		return netip.Addr{}
	}
	return ap.Addr().Unmap()
}

func (s *Server) trusted(a netip.Addr) bool {
	if !a.IsValid() {
		return false
	}
	for _, p := range s.opts.TrustedProxies {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

// ClientIP is the address of the client that sent r: the peer, or, when
// the peer is one of Options.TrustedProxies, the last address in
// X-Forwarded-For that is not a trusted proxy (the one the nearest
// trusted proxy saw). Addresses earlier in the header are the client's
// own claim and are never believed.
func (s *Server) ClientIP(r *http.Request) netip.Addr {
	a := peer(r)
	if !s.trusted(a) {
		return a
	}
	hops := strings.Split(strings.Join(r.Header.Values("X-Forwarded-For"), ","), ",")
	for i := len(hops) - 1; i >= 0; i-- {
		h, err := netip.ParseAddr(strings.TrimSpace(hops[i]))
		if err != nil {
			// Not an address: nothing before it can be trusted either.
			return a
		}
		a = h.Unmap()
		if !s.trusted(a) {
			return a
		}
	}
	return a
}

// ClientKey names r's client for the rate limits: its address, an IPv6
// one as its /64 network (one host holds a whole /64).
func (s *Server) ClientKey(r *http.Request) string {
	a := s.ClientIP(r)
	if !a.IsValid() {
		host, _, _ := net.SplitHostPort(r.RemoteAddr)
		return host
	}
	if a.Is6() {
		p, _ := a.Prefix(64)
		return p.String()
	}
	return a.String()
}

// Secure reports whether the browser reached the server over HTTPS: r
// came over TLS, or from a trusted proxy that says
// X-Forwarded-Proto: https. A cookie set for such a request is Secure.
func (s *Server) Secure(r *http.Request) bool {
	if r.TLS != nil {
		return true
	}
	if !s.trusted(peer(r)) {
		return false
	}
	// The last value is the one the nearest (trusted) proxy set.
	vals := strings.Split(strings.Join(r.Header.Values("X-Forwarded-Proto"), ","), ",")
	return strings.EqualFold(strings.TrimSpace(vals[len(vals)-1]), "https")
}
