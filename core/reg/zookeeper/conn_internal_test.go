package zookeeper

import (
	"io"
	"net"
	"testing"

	"github.com/ejob-io/ejob/core/reg/zookeeper/internal/zkwire"
)

// The connection's reader never waits for its writers: with a digest (the
// connection opens to ejob's requests once go-zookeeper's setAuth is
// written) and a frame stuck in its write (the server reads nothing), the
// reader still hands go-zookeeper the connect response. A reader that
// waited for the wire lock would hang here, as go-zookeeper would with a
// server that answers but does not read.
func TestReaderDoesNotWaitForBlockedWriter(t *testing.T) {
	client, server := net.Pipe()
	defer server.Close()
	sc := newSniffConn(client, "test", newLibWatches())
	sc.report = func(sessionCreds) {}
	sc.closeHook = func(net.Conn) {}
	sc.needAuthFrame = true
	writing := make(chan struct{})
	sc.wroteSetWatches = func() { close(writing) } // under the wire lock, just before the write

	// go-zookeeper's connect request, read by the server.
	go func() { _, _ = zkwire.ReadFrame(server) }()
	if _, err := sc.Write(zkwire.WithLength(zkwire.ConnectRequest(4000, 0, nil))); err != nil {
		t.Fatal(err)
	}
	// A setWatches frame the server does not read: its Write blocks.
	setWatches := zkwire.W{}
	setWatches.Int32(-8) // xid
	setWatches.Int32(zkwire.OpSetWatches)
	wrote := make(chan error, 1)
	go func() {
		_, err := sc.Write(zkwire.WithLength(setWatches.B))
		wrote <- err
	}()
	<-writing

	// The server's connect response: a session of 4 s.
	resp := zkwire.W{}
	resp.Int32(0)
	resp.Int32(4000)
	resp.Int64(7)
	resp.Buffer(make([]byte, 16))
	go func() { _ = zkwire.WriteFrame(server, resp.B) }()
	got := make([]byte, 4+len(resp.B))
	if _, err := io.ReadFull(sc, got); err != nil {
		t.Fatal(err)
	}
	if cr, ok := parseConnectResponse(got[4:]); !ok || cr.id != 7 {
		t.Fatalf("connect response %x handed over as %+v", got, cr)
	}
	select {
	case <-sc.ready:
		t.Fatal("the connection opened to ejob's requests before go-zookeeper's setAuth was written")
	default:
	}

	// The server reads again: the blocked write goes through.
	go func() { _, _ = io.Copy(io.Discard, server) }()
	if err := <-wrote; err != nil {
		t.Fatal(err)
	}
	_ = sc.Close()
}

// A connection that renews a session go-zookeeper holds watches for is
// held, and checks go-zookeeper's first setWatches against the watch table,
// reporting a difference; one that is not held (no watches to re-set) does
// not check.
func TestSetWatchesCheckedWhenHeld(t *testing.T) {
	for _, held := range []bool{false, true} {
		client, server := net.Pipe()
		go func() { _, _ = io.Copy(io.Discard, server) }()
		lib := newLibWatches()
		lib.session(7)
		if held {
			lib.replied(stdReq{path: "/a", op: zkwire.OpGetData}, 0)
		}
		sc := newSniffConn(client, "test", lib)
		sc.report = func(sessionCreds) {}
		sc.closeHook = func(net.Conn) {}
		resp := zkwire.W{}
		resp.Int32(0)
		resp.Int32(4000)
		resp.Int64(7) // the session of the table
		resp.Buffer(make([]byte, 16))
		sc.connectResponse(resp.B)
		sc.st.writes = 1 // past the connect request
		var deviated []string
		sc.deviation = func(what string) { deviated = append(deviated, what) }

		// setWatches{relativeZxid, dataWatches [/b], existWatches [], childWatches []}
		w := zkwire.W{}
		w.Int32(-8)
		w.Int32(zkwire.OpSetWatches)
		w.Int64(0)
		w.Int32(1)
		w.String("/b")
		w.Int32(0)
		w.Int32(0)
		if _, err := sc.Write(zkwire.WithLength(w.B)); err != nil {
			t.Fatal(err)
		}
		if want := map[bool]int{false: 0, true: 1}[held]; len(deviated) != want {
			t.Errorf("held %v: deviations %q, want %d", held, deviated, want)
		}
		select {
		case <-sc.setWatches:
		default:
			t.Errorf("held %v: setWatches written but its gate is shut", held)
		}
		_ = sc.Close()
		_ = server.Close()
	}
}
