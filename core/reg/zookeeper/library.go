package zookeeper

import (
	"encoding/binary"
	"sync"

	"github.com/ejob-io/ejob/core/reg/zookeeper/internal/zkwire"
)

// What the adapter relies on inside go-zookeeper v1.0.4, the newest release.
// TestLibraryVersion fails on any other version, which must be checked
// against every item here first; an item names the test that exercises it,
// where one does. Most are the connection's (sniffConn), which is
// go-zookeeper's net.Conn:
//
//   - Framing. go-zookeeper writes each frame, length included, with one
//     Write; its first Write is the connect request (no request header) and
//     its first read is the connect response, both on its loop goroutine
//     (Conn.authenticate) before its reader (recvLoop) and writer (sendLoop)
//     start. Its requests have positive xids (Conn.nextXid); replies with
//     another negative xid than -1 (notification) and -2 (ping) it logs and
//     drops, so ejob's own requests use xids of their own (isOwnXid) and
//     their replies never reach it.
//     Between its connect request and the connect response it sends
//     nothing, so the SASL exchange runs there unseen (sasl.go); its event
//     callback hears a new session state synchronously on the loop
//     goroutine right after it read the connect response (Client.onEvent).
//     TestSASLDigestMD5, TestSuite's session tests.
//   - Its reads. One goroutine reads at a time (the loop goroutine the
//     connect response, then recvLoop), a whole frame before it asks for
//     the next; recvLoop sets a read deadline of its receive timeout before
//     each frame and clears it after, and a read that times out is how it
//     notices a server gone silent. The connection intercepts on that
//     goroutine (sniffConn.rd needs no lock), honours the deadline on the
//     socket itself, and moves it on for each reply of ejob's it keeps
//     (extendReadDeadline). TestHeldConnectionWithoutSetWatches.
//   - Its reconnect pause: it sleeps a second whenever the HostProvider
//     reports it has tried every server (hostProvider).
//   - A failed setAuth write (go-zookeeper/zk#163). After a reconnect,
//     resendZkAuth re-sends the digest with a request whose reply channel
//     holds one response; a failed write fills it and leaves the request
//     pending, and the loop then blocks for good failing it again. The
//     connection reports such a write as written and closes the socket
//     (sniffConn.Write). TestDigestDropDuringAuthResend.
//   - Its table of one-shot watches (Conn.watchers). A getData, exists or
//     getChildren2 with watch=true arms a watch when its reply is read (the
//     request's recvFunc: getData OK a data watch; exists OK a data watch,
//     NONODE an exist watch; getChildren2 OK a child watch); a notification
//     fires and removes every watch of its path its type names
//     (notifyWatches: created the exist watches; data changed exist and data;
//     deleted all three; children changed the child watches); a session's
//     expiry clears them (invalidateWatches). libWatches follows the same
//     rules on the wire; recursive watches route by it, and the zxid hold
//     below depends on it. TestLibraryWatchTable compares it with the
//     setWatches request go-zookeeper writes.
//   - setWatches after every reconnection (sendSetWatches): the watches in
//     its table, re-set relative to the last zxid it read, written after
//     the requests queued while it was disconnected. Recursive watches on a
//     path go-zookeeper also watches are armed after it (recursive.go).
//   - The lastZxid race (samuel/go-zookeeper#178 and #260; the fix,
//     go-zookeeper/zk#35, is unreleased). On a reconnection the loop
//     goroutine starts recvLoop and sendLoop, then calls sendSetWatches,
//     which reads Conn.lastZxid for its requests while recvLoop writes it
//     for each reply with a zxid, with no synchronization between them:
//     requests queued while disconnected go out at once and their replies
//     can be read first. The connection holds back every frame that could
//     reach recvLoop's write, or change the watch table, until
//     go-zookeeper's setWatches request is written (zxidHold). That write
//     happens after sendSetWatches's reads (its goroutine, started after the
//     reads, hands the request to sendLoop through a channel), so recvLoop's
//     write happens after them. Only the setAuth replies (zxid 0, which
//     resendZkAuth waits for before sendLoop starts) and pings pass meanwhile.
//     A connection whose session go-zookeeper holds no watch for is not held:
//     sendSetWatches reads no zxid then, unless the reply to a watching read
//     written on the new connection reaches recvLoop, and arms a watch, before
//     sendSetWatches locks the watch table: a window of a few statements of
//     the loop goroutine (between starting recvLoop and that lock) that no
//     hook reaches, where the race stays open.
//     TestReconnectWithWatchesAndQueuedRequests.
//   - A request whose write fails gets the socket's error itself, not
//     ErrConnectionClosed (sendData), and ZooKeeper 3.6's code -124 is
//     unknown to it (an "unknown error" it does not wrap): mapErr.

// stdBits are the kinds of go-zookeeper's one-shot watches on a path.
type stdBits uint8

const (
	stdData stdBits = 1 << iota
	stdExist
	stdChild
)

// stdReq is a watching read of go-zookeeper's in flight.
type stdReq struct {
	path string
	op   int32
}

// libWatches mirrors go-zookeeper's table of one-shot watches (by server
// path) from what its connections carry: the watching reads it writes, their
// replies and the notifications it is handed. One per client.
type libWatches struct {
	mu   sync.Mutex
	sess int64              // the session the table belongs to
	std  map[string]stdBits // armed watches by server path
}

func newLibWatches() *libWatches { return &libWatches{std: make(map[string]stdBits)} }

// session notes a connect response: an expired session (id 0) or a new one
// clears the table, as go-zookeeper does.
func (l *libWatches) session(id int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if id != l.sess || id == 0 {
		clear(l.std)
		l.sess = id
	}
}

// replied arms the watch the reply (code) to req arms in go-zookeeper.
func (l *libWatches) replied(req stdReq, code int32) {
	var b stdBits
	switch {
	case req.op == zkwire.OpGetData && code == 0:
		b = stdData
	case req.op == zkwire.OpExists && code == 0:
		b = stdData
	case req.op == zkwire.OpExists && code == zkwire.CodeNoNode:
		b = stdExist
	case (req.op == zkwire.OpGetChildren2 || req.op == zkwire.OpGetChildren) && code == 0:
		b = stdChild
	default:
		return
	}
	l.mu.Lock()
	l.std[req.path] |= b
	l.mu.Unlock()
}

// fires is what a notification of type typ fires (notifyWatches); ok false:
// not a node event.
func fires(typ int32) (b stdBits, ok bool) {
	switch typ {
	case zkwire.EventNodeCreated:
		return stdExist, true
	case zkwire.EventNodeDataChanged:
		return stdExist | stdData, true
	case zkwire.EventNodeDeleted:
		return stdExist | stdData | stdChild, true
	case zkwire.EventNodeChildrenChanged:
		return stdChild, true
	}
	return 0, false
}

// armed reports whether a notification of type typ on path fires one of
// go-zookeeper's watches.
func (l *libWatches) armed(typ int32, path string) bool {
	f, _ := fires(typ)
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.std[path]&f != 0
}

// fire removes what a notification of type typ on path, handed to
// go-zookeeper, fires.
func (l *libWatches) fire(typ int32, path string) {
	f, ok := fires(typ)
	if !ok {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if b := l.std[path] &^ f; b == 0 {
		delete(l.std, path)
	} else {
		l.std[path] = b
	}
}

// has reports whether go-zookeeper holds a watch of a kind in b on path.
func (l *libWatches) has(path string, b stdBits) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.std[path]&b != 0
}

// any reports whether go-zookeeper holds a watch at all.
func (l *libWatches) any() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.std) > 0
}

// snapshot is the table, for tests and the setWatches check.
func (l *libWatches) snapshot() map[string]stdBits {
	l.mu.Lock()
	defer l.mu.Unlock()
	m := make(map[string]stdBits, len(l.std))
	for p, b := range l.std {
		m[p] = b
	}
	return m
}

// setWatchesPaths decodes the watches of a setWatches frame go-zookeeper
// writes (length, xid, type, then SetWatches{long relativeZxid,
// vector<ustring> dataWatches, existWatches, childWatches}).
func setWatchesPaths(p []byte) (map[string]stdBits, bool) {
	if len(p) < 12 || int32(binary.BigEndian.Uint32(p[8:])) != zkwire.OpSetWatches {
		return nil, false
	}
	j := &zkwire.R{B: p[12:]}
	j.Int64()
	m := map[string]stdBits{}
	for _, b := range []stdBits{stdData, stdExist, stdChild} {
		n := j.Int32()
		for range max(n, 0) {
			m[string(j.Buffer())] |= b
		}
	}
	return m, j.Err == nil
}

// zxidHold decides, for a frame go-zookeeper is about to read, whether it
// must wait for go-zookeeper's setWatches (see the lastZxid race above):
// everything but pings and replies without a zxid (setAuth's) does.
func zxidHold(f []byte) bool {
	if len(f) < 16 {
		return true
	}
	xid := int32(binary.BigEndian.Uint32(f))
	zxid := int64(binary.BigEndian.Uint64(f[4:]))
	return xid != zkwire.XidPing && (xid < 0 || zxid > 0)
}
