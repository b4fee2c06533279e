package zookeeper_test

import (
	"context"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ejob-io/ejob/core/reg"
)

// oldServerProxy stands between clients and the real server and answers
// every multiRead and addWatch request as a ZooKeeper before 3.6 does (its
// UnimplementedRequestProcessor): a reply header with UNIMPLEMENTED (-6),
// then the connection is closed. Everything else passes through.
type oldServerProxy struct {
	ln        net.Listener
	target    string
	multiRead atomic.Int32 // multiRead requests seen
	addWatch  atomic.Int32 // addWatch requests seen
	wg        sync.WaitGroup
}

func startOldServerProxy(t *testing.T, target string) *oldServerProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &oldServerProxy{ln: ln, target: target}
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			p.wg.Add(1)
			go func() { defer p.wg.Done(); p.serve(c) }()
		}
	}()
	t.Cleanup(func() { ln.Close(); p.wg.Wait() })
	return p
}

func (p *oldServerProxy) serve(client net.Conn) {
	defer client.Close()
	server, err := net.Dial("tcp", p.target)
	if err != nil {
		return
	}
	defer server.Close()
	var wmu sync.Mutex // frames to the client, whole
	toClient := func(f []byte) error {
		wmu.Lock()
		defer wmu.Unlock()
		_, err := client.Write(f)
		return err
	}
	go func() {
		defer client.Close()
		for {
			f, err := proxyFrame(server)
			if err != nil || toClient(f) != nil {
				return
			}
		}
	}()
	for first := true; ; first = false {
		f, err := proxyFrame(client)
		if err != nil {
			return
		}
		// f is length + body; a request body starts with xid, type (the
		// first frame, the connect request, has no header).
		var op int32
		if !first && len(f) >= 12 {
			op = int32(binary.BigEndian.Uint32(f[8:]))
		}
		if op == 22 || op == 106 {
			if op == 22 {
				p.multiRead.Add(1)
			} else {
				p.addWatch.Add(1)
			}
			reply := binary.BigEndian.AppendUint32(nil, 16)
			reply = append(reply, f[4:8]...)                // xid
			reply = binary.BigEndian.AppendUint64(reply, 0) // zxid
			reply = binary.BigEndian.AppendUint32(reply, uint32(0xfffffffa))
			_ = toClient(reply)
			return
		}
		if _, err := server.Write(f); err != nil {
			return
		}
	}
}

// proxyFrame reads one length-prefixed frame, prefix included.
func proxyFrame(r io.Reader) ([]byte, error) {
	var hdr [4]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return nil, err
	}
	f := make([]byte, 4+binary.BigEndian.Uint32(hdr[:]))
	copy(f, hdr[:])
	_, err := io.ReadFull(r, f[4:])
	return f, err
}

// TestMultiReadFallsBackOnOldServers: against a server without multiRead
// (UNIMPLEMENTED, then the connection closed), MultiRead answers the same
// from plain reads, the session survives the dropped connection, and later
// calls do not try multiRead again.
func TestMultiReadFallsBackOnOldServers(t *testing.T) {
	proxy := startOldServerProxy(t, server.Addr())
	c := connect(t, testConfig(t, proxy.ln.Addr().String(), "old-server"))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := c.Create(ctx, "/fb/kid", []byte("k"), reg.Persistent, reg.WithParents()); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Set(ctx, "/fb", []byte("v"), reg.AnyVersion); err != nil {
		t.Fatal(err)
	}
	sess := c.Session()
	for range 2 {
		res, err := c.MultiRead(ctx, reg.GetOp("/fb"), reg.ChildrenOp("/fb"), reg.GetOp("/missing"))
		if err != nil {
			t.Fatal(err)
		}
		if string(res[0].Data) != "v" || res[0].Stat.NumChildren != 1 || len(res[1].Children) != 1 || res[1].Children[0] != "kid" || !errors.Is(res[2].Err, reg.ErrNoNode) {
			t.Fatalf("MultiRead through an old server = %+v", res)
		}
	}
	if n := proxy.multiRead.Load(); n != 1 {
		t.Fatalf("%d multiRead requests reached the old server, want 1 (then plain reads)", n)
	}
	if c.Session() != sess || sess.Err() != nil {
		t.Fatal("the session did not survive the old server's dropped connection")
	}
}
