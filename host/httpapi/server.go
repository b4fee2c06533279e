package httpapi

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"os"
	"os/signal"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/hashicorp/go-hclog"
	"golang.org/x/crypto/bcrypt"

	"github.com/ejob-io/ejob/core/lifecycle"
	"github.com/ejob-io/ejob/core/reg"
	"github.com/ejob-io/ejob/host/hostconfig"
	"github.com/ejob-io/ejob/host/namespaces"
	"github.com/ejob-io/ejob/spi"
)

// Role is what a user may do.
type Role string

// Roles: an admin reads and writes, a guest only reads (enforced by the
// server, not by a page).
const (
	RoleAdmin Role = "admin"
	RoleGuest Role = "guest"
)

// User may log in.
type User struct {
	Name string
	// PasswordHash is a bcrypt hash.
	PasswordHash string
	Role         Role
}

// Defaults.
const (
	// DefaultTokenTTL is how long a login token is valid (upstream's
	// auth.token_expires_after_seconds default).
	DefaultTokenTTL = time.Hour
	// DefaultMaxBody bounds a request body.
	DefaultMaxBody = 1 << 20
	// GeneratedAdmin is the user name of the generated account.
	GeneratedAdmin = "admin"
)

// ErrPublicWithoutUsers: the listen address is not a loopback one and no
// users are configured.
var ErrPublicWithoutUsers = errors.New("refusing to listen on a non-loopback address without configured users")

// Options configure a Server.
type Options struct {
	// Listen is host:port.
	Listen string
	// Users may log in. Empty: one admin with a random password that the
	// server logs once at start (a loopback Listen only).
	Users []User
	// Client reads and writes the namespace. Required. Reads go to the
	// registry per request (multiRead on ZooKeeper): docs/operations.md
	// says why there is no cache of the namespace.
	Client reg.Client
	// Tracer serves the event-trace endpoints (the host's
	// elasticjob.tracing sink) with TracerConfig, its settings; nil: they
	// answer that event trace is not configured.
	Tracer       spi.Tracer
	TracerConfig map[string]string
	// LiveOutput reads the output so far of an item this process runs
	// (a host's scheduler); nil (`ejob serve`): the live-output endpoint
	// answers that only the host running the item has it.
	LiveOutput LiveOutputFunc
	// Metrics serves /metrics; nil: no /metrics.
	Metrics http.Handler
	// Ready says whether the process is ready (/readyz): nil when it is,
	// else why not. nil func: always ready.
	Ready func() error
	// ReadyDetail, when set, gives lines /readyz adds after "ok" (a
	// ready process with something to say, such as a job whose
	// configuration in the registry is invalid).
	ReadyDetail func() []string
	// Registry describes the namespace for /api/registry-center/*.
	Registry RegistryInfo
	// Namespaces is the store of the registry centers and data sources
	// added in the console and Switch connects to them (`ejob serve`);
	// nil: the server shows its own namespace only, read-only (a host).
	Namespaces *namespaces.Store
	Switch     Switcher
	// DataSourceDir is the directory the SQLite files of the data sources
	// added over HTTP must lie in (namespaces.DataSource.Confine); "":
	// SQLite data sources are refused (`ejob serve --data-source-dir`).
	DataSourceDir string
	Logger        hclog.Logger
	// TokenTTL: default DefaultTokenTTL. MaxBody: default DefaultMaxBody.
	TokenTTL time.Duration
	MaxBody  int64
	// SessionIdle and SessionMaxAge bound a console cookie session:
	// defaults DefaultSessionIdle and DefaultSessionMaxAge.
	SessionIdle   time.Duration
	SessionMaxAge time.Duration
	// Console serves everything the API does not (the web console's pages
	// and assets): called once with the server; nil: no console.
	Console func(*Server) (http.Handler, error)
	// OIDC is single sign-on for the console (ejob.http.oidc); nil: none.
	OIDC *hostconfig.OIDCSettings
	// TLS serves HTTPS with the certificate and key of these files, read
	// again on SIGHUP; nil: plain HTTP, which a Listen address that is not
	// a loopback one refuses unless AllowInsecureHTTP.
	TLS               *hostconfig.TLSFiles
	AllowInsecureHTTP bool
	// TrustedProxies are the peers whose X-Forwarded-For and
	// X-Forwarded-Proto are believed (ClientIP, Secure).
	TrustedProxies []netip.Prefix
	// AuditLog is a file for the audit lines ("": Logger).
	AuditLog string
	// Routes, when set, registers the /api/ routes in place of
	// ElasticJob-UI's (the cloud scheduler's API); login, roles, bounds and
	// the envelope stay the server's.
	Routes func(*Server, *Mux)
}

// RegistryInfo is the registry the server operates, as the console's
// registry-center endpoints show it (the digest is never shown).
type RegistryInfo struct {
	// Name is the registry center's name in the namespaces store; "":
	// the process's own (from its configuration or flags).
	Name          string
	ZKAddressList string
	Namespace     string
	HasDigest     bool
}

// Server is a listening operations server.
type Server struct {
	opts  Options
	ln    net.Listener
	log   hclog.Logger
	users map[string]User
	// be is what the server operates: Options' registry and sink at
	// first, another after a switch (SetRegistry, SetTrace).
	be atomic.Pointer[backend]
	// dummy is compared against for an unknown user, so that the answer
	// takes as long as for a known one: its cost is the highest of the
	// users' hashes.
	dummy    []byte
	guard    *loginGuard
	refusals *refusalLog
	// audit writes the audit lines; auditFile is Options.AuditLog's file.
	auditLog  hclog.Logger
	auditFile *auditFile
	cert      *certificate

	console http.Handler

	mu       sync.Mutex
	tokens   map[[32]byte]session
	sessions map[[32]byte]*Session
}

type session struct {
	user    string
	role    Role
	expires time.Time
}

// Listen checks opts and opens the listen address.
func Listen(opts Options) (*Server, error) {
	s, err := newServer(opts)
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", opts.Listen)
	if err != nil {
		s.close()
		return nil, fmt.Errorf("http: %w", err)
	}
	if s.cert != nil {
		ln = tls.NewListener(ln, s.cert.config())
	}
	s.ln = ln
	return s, nil
}

// close releases what newServer opened.
func (s *Server) close() {
	if s.auditFile != nil {
		_ = s.auditFile.Close()
	}
}

func newServer(opts Options) (*Server, error) {
	if opts.Client == nil {
		return nil, errors.New("http: a registry client is required")
	}
	if (opts.Namespaces == nil) != (opts.Switch == nil) {
		return nil, errors.New("http: Namespaces and Switch go together")
	}
	if opts.Logger == nil {
		opts.Logger = hclog.NewNullLogger()
	}
	if opts.TokenTTL <= 0 {
		opts.TokenTTL = DefaultTokenTTL
	}
	if opts.MaxBody <= 0 {
		opts.MaxBody = DefaultMaxBody
	}
	if opts.SessionIdle <= 0 {
		opts.SessionIdle = DefaultSessionIdle
	}
	if opts.SessionMaxAge <= 0 {
		opts.SessionMaxAge = DefaultSessionMaxAge
	}
	s := &Server{opts: opts, log: opts.Logger, users: map[string]User{}, tokens: map[[32]byte]session{},
		sessions: map[[32]byte]*Session{}, guard: newLoginGuard(), refusals: newRefusalLog(), auditLog: opts.Logger}
	if opts.TLS != nil {
		var err error
		if s.cert, err = loadCertificate(*opts.TLS); err != nil {
			return nil, fmt.Errorf("http: %w", err)
		}
	}
	s.be.Store(&backend{client: opts.Client, registry: opts.Registry,
		trace: traceSink{tracer: opts.Tracer, config: opts.TracerConfig, name: DefaultDataSource}})
	// With single sign-on and no users, SSO is the only way in.
	if len(opts.Users) == 0 && opts.OIDC == nil {
		if !hostconfig.IsLoopback(opts.Listen) {
			return nil, fmt.Errorf("http %s: %w: add ejob.http.users or ejob.http.oidc, or listen on 127.0.0.1", opts.Listen, ErrPublicWithoutUsers)
		}
		pw := rand.Text()
		h, err := bcrypt.GenerateFromPassword([]byte(pw), bcrypt.DefaultCost)
		if err != nil {
			return nil, fmt.Errorf("http: %w", err)
		}
		opts.Users = []User{{Name: GeneratedAdmin, PasswordHash: string(h), Role: RoleAdmin}}
		// Printed once, as Jupyter prints its token: it is valid until
		// the process exits.
		s.log.Warn("no ejob.http.users configured: generated a password for this run only; log in as this admin",
			"user", GeneratedAdmin, "password", pw)
	}
	transport := hostconfig.HTTPSettings{Listen: opts.Listen, TLS: opts.TLS, AllowInsecureHTTP: opts.AllowInsecureHTTP}
	if err := transport.CheckTransport(); err != nil {
		return nil, fmt.Errorf("http: %w", err)
	}
	dummyCost := bcrypt.DefaultCost
	for i, u := range opts.Users {
		cost, err := bcrypt.Cost([]byte(u.PasswordHash))
		if err != nil {
			return nil, fmt.Errorf("http: user %q: password hash: %w", u.Name, err)
		}
		if u.Role != RoleAdmin && u.Role != RoleGuest {
			return nil, fmt.Errorf("http: user %q: role %q: want admin or guest", u.Name, u.Role)
		}
		if i == 0 || cost > dummyCost {
			dummyCost = cost
		}
		s.users[u.Name] = u
	}
	h, err := bcrypt.GenerateFromPassword([]byte(rand.Text()), dummyCost)
	if err != nil {
		return nil, fmt.Errorf("http: %w", err)
	}
	s.dummy = h
	if opts.AuditLog != "" {
		if s.auditFile, err = openAuditFile(opts.AuditLog); err != nil {
			return nil, fmt.Errorf("http: %w", err)
		}
		s.auditLog = hclog.New(&hclog.LoggerOptions{Name: s.log.Name(), Level: hclog.Info, Output: s.auditFile})
	}
	if opts.Console != nil {
		if s.console, err = opts.Console(s); err != nil {
			s.close()
			return nil, fmt.Errorf("http: console: %w", err)
		}
	}
	return s, nil
}

// backend is the registry and the event-trace sink the server operates.
type backend struct {
	client   reg.Client
	registry RegistryInfo
	trace    traceSink
}

// traceSink is an event-trace sink and its settings (the data source).
type traceSink struct {
	tracer spi.Tracer
	config map[string]string
	// name is the data source's name in the namespaces store, or
	// DefaultDataSource for the process's own.
	name string
}

func (s *Server) backend() *backend        { return s.be.Load() }
func (s *Server) client() reg.Client       { return s.be.Load().client }
func (s *Server) reader() lifecycle.Reader { return s.be.Load().client }

// SetRegistry makes the server operate c, shown as info: requests that
// started before go on with the previous registry, which the caller closes
// once they are done. Used by `ejob serve` to switch namespaces without a
// restart.
func (s *Server) SetRegistry(c reg.Client, info RegistryInfo) {
	for {
		old := s.be.Load()
		nb := *old
		nb.client, nb.registry = c, info
		if s.be.CompareAndSwap(old, &nb) {
			return
		}
	}
}

// SetTrace makes the event-trace endpoints query t with config (t nil:
// none), the data source named name.
func (s *Server) SetTrace(t spi.Tracer, config map[string]string, name string) {
	for {
		old := s.be.Load()
		nb := *old
		nb.trace = traceSink{tracer: t, config: config, name: name}
		if s.be.CompareAndSwap(old, &nb) {
			return
		}
	}
}

// Options are the server's options, defaults filled in (Client, Registry
// and the tracer are the ones in use now: others after SetRegistry and
// SetTrace).
func (s *Server) Options() Options {
	o := s.opts
	b := s.backend()
	o.Client, o.Registry = b.client, b.registry
	o.Tracer, o.TracerConfig = b.trace.tracer, b.trace.config
	return o
}

// Logger is the server's logger.
func (s *Server) Logger() hclog.Logger { return s.log }

// Addr is the address the server listens on.
func (s *Server) Addr() net.Addr { return s.ln.Addr() }

// Run serves until ctx ends, then shuts down (requests in flight get 5 s)
// and returns.
func (s *Server) Run(ctx context.Context) error {
	srv := &http.Server{
		Handler:           s.Handler(),
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       time.Minute,
		IdleTimeout:       2 * time.Minute,
		BaseContext:       func(net.Listener) context.Context { return ctx },
		ErrorLog:          s.log.StandardLogger(&hclog.StandardLoggerOptions{InferLevels: true}),
	}
	defer s.close()
	scheme := "http"
	if s.cert != nil {
		scheme = "https"
	}
	s.log.Info("operations HTTP server listening", "addr", s.ln.Addr().String(), "scheme", scheme)
	done := make(chan error, 1)
	go func() { done <- srv.Serve(s.ln) }()
	// SIGHUP reads the certificate again and reopens the audit log
	// (after a renewal, a log rotation).
	hup := make(chan os.Signal, 1)
	if s.cert != nil || s.auditFile != nil {
		signal.Notify(hup, syscall.SIGHUP)
		defer signal.Stop(hup)
	}
wait:
	for {
		select {
		case err := <-done:
			return fmt.Errorf("http: %w", err)
		case <-hup:
			s.reload()
		case <-ctx.Done():
			break wait
		}
	}
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	err := srv.Shutdown(sctx)
	if e := <-done; !errors.Is(e, http.ErrServerClosed) && err == nil {
		err = e
	}
	return err
}

// reload reads the TLS certificate again and reopens the audit log; what
// fails keeps the one in use and is logged.
func (s *Server) reload() {
	if s.cert != nil {
		if err := s.cert.reload(); err != nil {
			s.log.Error("SIGHUP: the certificate in use stays", "error", err)
		} else {
			s.log.Info("SIGHUP: certificate read again", "cert", s.opts.TLS.CertFile)
		}
	}
	if s.auditFile != nil {
		if err := s.auditFile.reopen(); err != nil {
			s.log.Error("SIGHUP: the audit log stays open as it was", "error", err)
		}
	}
}

// Handler returns the server's routes.
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		_, _ = w.Write([]byte("ok\n"))
	})
	mux.HandleFunc("GET /readyz", s.readyz)
	if s.opts.Metrics != nil {
		mux.Handle("GET /metrics", s.opts.Metrics)
	}
	mux.Handle("POST /api/login", statusInBody(http.HandlerFunc(s.login)))
	api := NewMux()
	if s.opts.Routes != nil {
		s.opts.Routes(s, api)
		api.HandleFunc("/api/", notFound)
	} else {
		s.routes(api)
	}
	mux.Handle("/api/", statusInBody(s.Authenticate(api)))
	if s.console != nil {
		mux.Handle("/", s.console)
	}
	return mux
}

func (s *Server) readyz(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	if s.opts.Ready != nil {
		if err := s.opts.Ready(); err != nil {
			w.WriteHeader(http.StatusServiceUnavailable)
			_, _ = fmt.Fprintf(w, "not ready: %v\n", err)
			return
		}
	}
	_, _ = w.Write([]byte("ok\n"))
	if s.opts.ReadyDetail != nil {
		for _, l := range s.opts.ReadyDetail() {
			_, _ = fmt.Fprintln(w, l)
		}
	}
}
