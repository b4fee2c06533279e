package zookeeper

import (
	"encoding/binary"
	"slices"
	"sync"
	"testing"

	"github.com/ejob-io/ejob/core/reg"
	"github.com/ejob-io/ejob/core/reg/zookeeper/internal/zkwire"
)

// The routing rule of notifications (recursive.go): to the recursive
// watches armed on the reading connection whose path is the node's or an
// ancestor's (namespace-relative paths, no child events, no sibling that
// shares a prefix), and to go-zookeeper when one of its armed one-shot
// watches fires (which the notification then disarms) or no recursive
// watch took it.
func TestNotificationRouting(t *testing.T) {
	r := newRecursive("/ns", newLibWatches())
	var mu sync.Mutex
	var got []reg.WatchEvent
	w := &rwatch{full: "/ns/a", rel: "/a", fn: func(ev reg.WatchEvent) {
		mu.Lock()
		got = append(got, ev)
		mu.Unlock()
	}}
	sc, other := newSniffConn(nil, "", r.lib), newSniffConn(nil, "", r.lib)
	sc.route, other.route = r.notification, r.notification

	// Before any recursive watch, everything goes to go-zookeeper.
	if !sc.incoming(notificationFrame(zkwire.EventNodeDataChanged, "/ns/x")) {
		t.Fatal("notification withheld from go-zookeeper before any recursive watch")
	}
	r.mu.Lock()
	r.live[w] = struct{}{}
	r.table[w.full] = append(r.table[w.full], w)
	r.mu.Unlock()
	r.arm(sc, w)

	// go-zookeeper's watches, armed by their replies as it arms them.
	r.lib.replied(stdReq{"/ns/a/b", zkwire.OpGetData}, 0)
	r.lib.replied(stdReq{"/ns/a/c", zkwire.OpExists}, zkwire.CodeNoNode)
	r.lib.replied(stdReq{"/ns/a", zkwire.OpGetChildren2}, 0)
	r.lib.replied(stdReq{"/ns/a/d", zkwire.OpGetData}, zkwire.CodeNoNode) // no watch

	cases := []struct {
		conn    *sniffConn
		typ     int32
		path    string
		forward bool
	}{
		{sc, zkwire.EventNodeCreated, "/ns/a/b", false},      // a data watch does not fire on create
		{sc, zkwire.EventNodeDataChanged, "/ns/a/b", true},   // it fires on a data change ...
		{sc, zkwire.EventNodeDataChanged, "/ns/a/b", false},  // ... once
		{sc, zkwire.EventNodeDataChanged, "/ns/a/c", true},   // an exist watch fires on a data change too
		{sc, zkwire.EventNodeChildrenChanged, "/ns/a", true}, // the child watch, not for the recursive watch
		{sc, zkwire.EventNodeDeleted, "/ns/a/d", false},      // the failed read armed nothing
		{sc, zkwire.EventNodeCreated, "/ns/ab/x", true},      // a sibling sharing the prefix
		{other, zkwire.EventNodeCreated, "/ns/a/y", true},    // not armed on that connection
		{sc, zkwire.EventNodeDeleted, "/ns/a", false},        // the watched node itself
		{sc, -1, "", true}, // not a node event
	}
	for i, tc := range cases {
		if f := tc.conn.incoming(notificationFrame(tc.typ, tc.path)); f != tc.forward {
			t.Errorf("case %d (%d %s): forwarded %v, want %v", i, tc.typ, tc.path, f, tc.forward)
		}
	}
	r.q.Wait()
	want := []reg.WatchEvent{
		{Type: reg.EventNodeCreated, Path: "/a/b"},
		{Type: reg.EventNodeDataChanged, Path: "/a/b"},
		{Type: reg.EventNodeDataChanged, Path: "/a/b"},
		{Type: reg.EventNodeDataChanged, Path: "/a/c"},
		{Type: reg.EventNodeDeleted, Path: "/a/d"},
		{Type: reg.EventNodeDeleted, Path: "/a"},
	}
	mu.Lock()
	// ZooKeeper's events carry no node (Known false, no data or stat).
	if !slices.EqualFunc(got, want, func(a, b reg.WatchEvent) bool {
		return a.Type == b.Type && a.Path == b.Path && a.Err == b.Err && !a.Known && a.Data == nil && a.Stat == reg.Stat{}
	}) {
		t.Errorf("recursive watch got %v, want %v", got, want)
	}
	mu.Unlock()

	// A new session clears go-zookeeper's watches (it drops them itself).
	r.lib.session(7)
	r.lib.replied(stdReq{"/ns/a/z", zkwire.OpGetData}, 0)
	r.lib.session(8)
	if r.notification(sc, zkwire.EventNodeDataChanged, "/ns/a/z") {
		t.Fatal("a watch of the old session was served")
	}
	r.q.Wait()
}

// getDataFrame is go-zookeeper's getData request as it writes it.
func getDataFrame(xid int32, path string, watch bool) []byte {
	b := binary.BigEndian.AppendUint32(nil, 0) // length, unused here
	b = binary.BigEndian.AppendUint32(b, uint32(xid))
	b = binary.BigEndian.AppendUint32(b, zkwire.OpGetData)
	b = binary.BigEndian.AppendUint32(b, uint32(len(path)))
	b = append(b, path...)
	if watch {
		return append(b, 1)
	}
	return append(b, 0)
}

// notificationFrame is a watch notification as the server sends it (no
// length).
func notificationFrame(typ int32, path string) []byte {
	b := binary.BigEndian.AppendUint32(nil, ^uint32(0)) // xid -1
	b = binary.BigEndian.AppendUint64(b, ^uint64(0))    // zxid -1
	b = binary.BigEndian.AppendUint32(b, 0)
	b = binary.BigEndian.AppendUint32(b, uint32(typ))
	b = binary.BigEndian.AppendUint32(b, 3) // SyncConnected
	b = binary.BigEndian.AppendUint32(b, uint32(len(path)))
	return append(b, path...)
}

func replyFrame(xid, code int32) []byte {
	b := binary.BigEndian.AppendUint32(nil, uint32(xid))
	b = binary.BigEndian.AppendUint64(b, 1)
	return binary.BigEndian.AppendUint32(b, uint32(code))
}

// A watching getData on a path this connection's addWatch was written for
// goes out without the server-side watch (ZOOKEEPER-4466), and its reply
// still arms go-zookeeper's watch in the record; elsewhere the request is
// left alone.
func TestOneShotOnRecursivePathIsNotSentToTheServer(t *testing.T) {
	r := newRecursive("", newLibWatches())
	sc := newSniffConn(nil, "", r.lib)
	sc.route = r.notification
	sc.noteAddWatch("/a", true)
	same, below := getDataFrame(5, "/a", true), getDataFrame(6, "/a/b", true)
	sc.outgoing(same)
	sc.outgoing(below)
	if same[len(same)-1] != 0 || below[len(below)-1] != 1 {
		t.Fatalf("watch flags after outgoing: %d on the path, %d below, want 0 and 1", same[len(same)-1], below[len(below)-1])
	}
	for _, xid := range []int32{5, 6} {
		if !sc.incoming(replyFrame(xid, 0)) {
			t.Fatal("a reply was withheld from go-zookeeper")
		}
	}
	if std := r.lib.snapshot(); std["/a"] != stdData || std["/a/b"] != stdData {
		t.Fatalf("record of one-shot watches: %v", std)
	}
}
