package dump

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/ejob-io/ejob/core/lifecycle"
	"github.com/ejob-io/ejob/core/reg"
)

// Limits of one connection.
const (
	// maxRequest bounds the request line (a job name is a ZooKeeper node
	// name; anything longer is not a request).
	maxRequest = 64 << 10
	// requestTimeout bounds the wait for the request line; writeTimeout
	// the writing of the reply.
	requestTimeout = 10 * time.Second
	writeTimeout   = 30 * time.Second
	// maxDumps bounds the dumps rendered at once (upstream serves one
	// connection at a time); waiting for a request line takes no slot.
	maxDumps = 4
)

// Options configure a Server. Client and Caches are required.
type Options struct {
	// Client reads the registry.
	Client reg.Client
	// Caches returns this host's cache of a job it runs, and false when it
	// does not run the job.
	Caches func(jobName string) (Cache, bool)
	Logger hclog.Logger
}

// Server is a listening dump port.
type Server struct {
	ln   net.Listener
	opts Options
}

// DefaultAddress is the address the dump port listens on unless
// configured (elasticjob.dump.address): loopback only, where upstream's
// ServerSocket(port) listens on every interface.
const DefaultAddress = "127.0.0.1"

// Listen opens the dump port on the IP address addr ("" is
// DefaultAddress; "0.0.0.0" or "::" is every interface, as upstream);
// port 0 picks a free one (see Addr). Upstream refuses ports outside
// 0..65535 with "Port value out of range: N".
func Listen(addr string, port int, opts Options) (*Server, error) {
	if port < 0 || port > 65535 {
		return nil, fmt.Errorf("dump port: Port value out of range: %d", port)
	}
	if addr == "" {
		addr = DefaultAddress
	}
	if net.ParseIP(addr) == nil {
		return nil, fmt.Errorf("dump port: listen address %q is not an IP address (127.0.0.1, ::1, 0.0.0.0 for every interface)", addr)
	}
	if opts.Client == nil || opts.Caches == nil {
		return nil, errors.New("dump: Client and Caches are required")
	}
	if opts.Logger == nil {
		opts.Logger = hclog.NewNullLogger()
	}
	ln, err := net.Listen("tcp", net.JoinHostPort(addr, strconv.Itoa(port)))
	if err != nil {
		return nil, fmt.Errorf("dump port %s: %w", net.JoinHostPort(addr, strconv.Itoa(port)), err)
	}
	return &Server{ln: ln, opts: opts}, nil
}

// Addr is the address the server listens on.
func (s *Server) Addr() net.Addr { return s.ln.Addr() }

// Run serves connections until ctx ends, then closes the port and the
// open connections and returns once every goroutine it started has ended.
func (s *Server) Run(ctx context.Context) error {
	s.opts.Logger.Info("dump port is open: `echo dump@JOB | nc HOST PORT` dumps a job this host runs", "addr", s.ln.Addr().String())
	var wg sync.WaitGroup
	sem := make(chan struct{}, maxDumps)
	stop := context.AfterFunc(ctx, func() { _ = s.ln.Close() })
	defer stop()
	var err error
	for {
		var conn net.Conn
		conn, err = s.ln.Accept()
		if err != nil {
			break
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			s.serve(ctx, conn, sem)
		}()
	}
	_ = s.ln.Close()
	wg.Wait()
	if ctx.Err() != nil {
		return nil
	}
	return fmt.Errorf("dump port: %w", err)
}

// serve answers one connection: the dump of the job its one line names, or
// nothing. It renders holding a slot of sem.
func (s *Server) serve(ctx context.Context, conn net.Conn, sem chan struct{}) {
	defer conn.Close()
	stop := context.AfterFunc(ctx, func() { _ = conn.Close() })
	defer stop()
	_ = conn.SetReadDeadline(time.Now().Add(requestTimeout))
	job, ok, err := lifecycle.ReadDumpRequest(conn, maxRequest)
	log := s.opts.Logger.With("remote", conn.RemoteAddr().String())
	if !ok {
		if err != nil && !errors.Is(err, io.EOF) {
			log.Debug("dump request not read; closing", "error", err)
		} else {
			log.Debug("not a dump request; closing without a reply")
		}
		return
	}
	log = log.With("job", job)
	select {
	case sem <- struct{}{}:
		defer func() { <-sem }()
	case <-ctx.Done():
		return
	}
	var cache Cache
	if c, ok := s.opts.Caches(job); ok {
		cache = c
	}
	rctx, cancel := context.WithTimeout(ctx, writeTimeout)
	defer cancel()
	text, err := Render(rctx, s.opts.Client, cache, job)
	if errors.Is(err, errNoCache) {
		log.Info("dump of a job this host does not run: closing without a reply, as upstream")
		return
	}
	if err != nil {
		log.Warn("dump failed; closing without a reply", "error", err)
		return
	}
	_ = conn.SetWriteDeadline(time.Now().Add(writeTimeout))
	if _, err := io.WriteString(conn, text); err != nil {
		log.Debug("dump reply not written", "error", err)
		return
	}
	log.Info("job dumped", "bytes", len(text))
}
