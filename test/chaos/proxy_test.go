package chaos

import (
	"net"
	"strings"
	"sync"
	"time"
)

// proxyMode is what a proxy does with traffic.
type proxyMode int

const (
	modePass  proxyMode = iota // forward both ways
	modeDrop                   // close every connection and refuse new ones (accept, then close)
	modeStall                  // keep connections open but forward nothing, accept new ones and hold them
)

func (m proxyMode) String() string {
	return [...]string{"pass", "drop", "stall"}[m]
}

// proxy stands between one host and ZooKeeper: one listener per ZooKeeper
// server, each forwarding to that server. The host's serverLists names the
// listeners, so the proxy can cut the host off (drop) or freeze its
// connections (stall) while the rest of the cluster keeps talking to
// ZooKeeper.
type proxy struct {
	lns      []net.Listener
	backends []string

	mu    sync.Mutex
	cond  *sync.Cond
	mode  proxyMode
	conns map[net.Conn]struct{}
	done  bool
	wg    sync.WaitGroup
	// answered are the times a connection first carried bytes from
	// ZooKeeper to the host (the host is talking to the server again),
	// ended the times a host's connection through the proxy closed; both
	// in time order.
	answered, ended []time.Time
}

// newProxy listens on a free loopback port for each backend.
func newProxy(backends []string) (*proxy, error) {
	p := &proxy{backends: backends, conns: map[net.Conn]struct{}{}}
	p.cond = sync.NewCond(&p.mu)
	for _, b := range backends {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			p.close()
			return nil, err
		}
		p.lns = append(p.lns, ln)
		p.wg.Add(1)
		go p.accept(ln, b)
	}
	return p, nil
}

// addr is the connect string of the proxy's listeners.
func (p *proxy) addr() string {
	var a []string
	for _, ln := range p.lns {
		a = append(a, ln.Addr().String())
	}
	return strings.Join(a, ",")
}

func (p *proxy) setMode(m proxyMode) {
	p.mu.Lock()
	p.mode = m
	var drop []net.Conn
	if m == modeDrop {
		for c := range p.conns {
			drop = append(drop, c)
		}
	}
	p.cond.Broadcast()
	p.mu.Unlock()
	for _, c := range drop {
		_ = c.Close()
	}
}

func (p *proxy) track(c net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.done {
		return false
	}
	p.conns[c] = struct{}{}
	return true
}

func (p *proxy) untrack(c net.Conn) {
	p.mu.Lock()
	delete(p.conns, c)
	p.mu.Unlock()
	_ = c.Close()
}

func (p *proxy) accept(ln net.Listener, backend string) {
	defer p.wg.Done()
	for {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		p.mu.Lock()
		m := p.mode
		p.mu.Unlock()
		if m == modeDrop {
			_ = c.Close()
			continue
		}
		if !p.track(c) {
			_ = c.Close()
			return
		}
		p.wg.Add(1)
		go p.serve(c, backend)
	}
}

// serve forwards one client connection. In stall mode the copy loops wait
// before forwarding anything (a new connection waits before dialing).
func (p *proxy) serve(c net.Conn, backend string) {
	defer p.wg.Done()
	defer p.untrack(c)
	defer p.note(&p.ended)
	if !p.waitPass() {
		return
	}
	b, err := net.DialTimeout("tcp", backend, 2*time.Second)
	if err != nil {
		return
	}
	if !p.track(b) {
		_ = b.Close()
		return
	}
	defer p.untrack(b)
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); p.copy(b, c, nil); _ = b.Close(); _ = c.Close() }()
	go func() { defer wg.Done(); p.copy(c, b, func() { p.note(&p.answered) }); _ = b.Close(); _ = c.Close() }()
	wg.Wait()
}

// waitPass blocks while the proxy stalls; false when it drops or closes.
func (p *proxy) waitPass() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	for p.mode == modeStall && !p.done {
		p.cond.Wait()
	}
	return p.mode == modePass && !p.done
}

// copy forwards src to dst; first (if not nil) runs after the first bytes
// are written.
func (p *proxy) copy(dst, src net.Conn, first func()) {
	buf := make([]byte, 32*1024)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			if !p.waitPass() {
				return
			}
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
			if first != nil {
				first()
				first = nil
			}
		}
		if err != nil {
			return // io.EOF or a closed connection
		}
	}
}

func (p *proxy) note(list *[]time.Time) {
	now := time.Now()
	p.mu.Lock()
	*list = append(*list, now)
	p.mu.Unlock()
}

// reconnected tells how the host's connections went through a fault from
// began to healed: dropped when one of them closed in that span, and then
// at is the server's first answer after that close on a connection that
// was not closed again by healed (a connection to an ensemble member
// killed a moment later does not count; ok false if none yet).
func (p *proxy) reconnected(began, healed time.Time) (at time.Time, dropped, ok bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	var cut time.Time
	for _, e := range p.ended {
		if !e.Before(began) && !e.After(healed) {
			cut = e
			break
		}
	}
	if cut.IsZero() {
		return time.Time{}, false, true
	}
	for _, a := range p.answered {
		if !a.After(cut) {
			continue
		}
		again := false
		for _, e := range p.ended {
			if e.After(a) && !e.After(healed) {
				again = true
				break
			}
		}
		if !again {
			return a, true, true
		}
	}
	return time.Time{}, true, false
}

// close stops the listeners and every connection and waits for the
// proxy's goroutines.
func (p *proxy) close() {
	p.mu.Lock()
	p.done = true
	conns := make([]net.Conn, 0, len(p.conns))
	for c := range p.conns {
		conns = append(conns, c)
	}
	p.cond.Broadcast()
	p.mu.Unlock()
	for _, ln := range p.lns {
		_ = ln.Close()
	}
	for _, c := range conns {
		_ = c.Close()
	}
	p.wg.Wait()
}
