package embedded

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"
	"unique"

	"github.com/ejob-io/ejob/core/reg"
)

// containerOwner is the EphemeralOwner ZooKeeper reports for container nodes
// (EphemeralType.CONTAINER_EPHEMERAL_OWNER, Long.MIN_VALUE).
const containerOwner int64 = -1 << 63

// Server is the shared in-process tree. All state is guarded by mu.
type Server struct {
	mu       sync.Mutex
	root     *node
	zxid     int64
	nextSess int64
	sessions map[int64]*session
	watches  map[watchKey][]*watch
	rwatches map[string][]*rwatch // recursive watches by full path
	rdepth   reg.Depths           // of rwatches' paths
	txns     []*txn               // ended transactions, for reuse (begin)
	memo     *childMemo           // lookups in nodes with many children (made at the first)
	now      func() time.Time
	timeout  time.Duration // session timeout; 0: sessions never time out
}

// ServerOption configures a Server.
type ServerOption func(*Server)

// WithClock sets the clock used for ctime/mtime (default time.Now).
func WithClock(now func() time.Time) ServerOption { return func(s *Server) { s.now = now } }

// WithSessionTimeout gives sessions a timeout, as ZooKeeper's negotiated
// one: each session reports it (reg.Session.Timeout), and a client
// suspended for that long (counted from its last contact, the moment of
// Suspend) has its session expired by the server, which the client reports
// as StateLost at once (a new session follows on Resume). Default 0: a
// suspended session lives until Expire or Resume.
func WithSessionTimeout(d time.Duration) ServerOption { return func(s *Server) { s.timeout = d } }

// NewServer returns an empty tree (only "/"). Its zxids count on from the
// clock's time in microseconds at the start, so those of a server started
// later (a standalone host restarted) are higher than every zxid an
// earlier one gave, as long as that one applied under a million
// transactions a second on average: the fencing tokens made of them keep
// increasing across a restart.
func NewServer(opts ...ServerOption) *Server {
	s := &Server{
		sessions: make(map[int64]*session),
		watches:  make(map[watchKey][]*watch),
		rwatches: make(map[string][]*rwatch),
		nextSess: 0x100000000,
		now:      time.Now,
	}
	for _, o := range opts {
		o(s)
	}
	s.root = &node{}
	s.zxid = max(s.now().UnixMicro(), 0)
	return s
}

// kept is data as a node keeps it: the caller's own slice, not a copy
// (reg.Writer: data passed to a write is not modified afterwards), its
// capacity capped so that no append through a slice read from the node
// (dataOf) writes into the caller's array. Empty data is kept as nil,
// holding no array. As the zookeeper implementation, the embedded registry
// never stores ZooKeeper's null: every node ejob writes reads back non-nil
// (dataOf), as it would from Curator's tree.
func kept(data []byte) []byte {
	if len(data) == 0 {
		return nil
	}
	return data[:len(data):len(data)]
}

// node is one znode. Its children are a slice sorted by name rather than a
// map: most nodes have none or a few, and a map costs some 250 bytes even
// for one child. A node with many (a namespace's jobs) holds them in
// sorted chunks instead (big). It keeps what of the stat is not derived
// (see statCopy), so that it fits the 112-byte size class.
type node struct {
	// data is never modified in place: a set replaces the slice. It is
	// shared with the writer and every reader (see kept and dataOf).
	data []byte
	kids []kid    // sorted by name; empty while big is set
	big  *bigKids // the children of a node with more than maxKids
	stat nodeStat
	// version is the stat's Version (out of nodeStat, which would be
	// padded to 56 bytes).
	version int32
	// creates counts child creations. As in ZooKeeper it names sequential
	// children, and the reported cversion is creates*2 - children (every
	// child gone was created once and deleted once).
	creates int32
}

// kid is a child of a node, with its name (the last path element; see
// create). The names sit in the parent's array rather than in the
// children, as in reg's snode: a lookup's binary search reads them from
// one or two cache lines and touches only the child it finds.
type kid struct {
	name unique.Handle[string]
	n    *node
}

// nodeStat is the part of reg.Stat a node stores besides its version:
// DataLength, NumChildren and Cversion are derived (statCopy), Aversion is
// always 0 (the embedded registry has no ACLs).
type nodeStat struct {
	Czxid, Mzxid, Pzxid, Ctime, Mtime, EphemeralOwner int64
}

// dataOf returns n's data, never nil: the node's own slice, not a copy
// (reg.Reader: data read is not modified). Its capacity is its length
// (kept), so an append to it copies and the node is unchanged.
func (n *node) dataOf() []byte {
	if n.data == nil {
		return []byte{}
	}
	return n.data
}

// child returns the child called name, or nil.
func (n *node) child(name string) *node {
	if n.big != nil {
		return n.big.child(name)
	}
	if i, ok := findKid(n.kids, name); ok {
		return n.kids[i].n
	}
	return nil
}

// numKids returns how many children n has.
func (n *node) numKids() int {
	if n.big != nil {
		return n.big.n
	}
	return len(n.kids)
}

// findKid returns where name is, or would be inserted, among kids (sorted):
// a binary search written out, as reg's snode.child (slices.BinarySearchFunc
// and its comparison func were 5% of BenchmarkFire100Jobs's CPU). The two
// are not one generic func: over different node types it would call a
// name func per comparison, which is what this saves.
func findKid(kids []kid, name string) (int, bool) {
	lo, hi := 0, len(kids)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if kids[m].name.Value() < name {
			lo = m + 1
		} else {
			hi = m
		}
	}
	return lo, lo < len(kids) && kids[lo].name.Value() == name
}

// addChild inserts c as the child called name (n has none by that name).
// The names of a node with few children repeat across the tree ("config",
// "leader", instance ids): they are interned, and one copy of each lives
// while a node has it. Those of a node with many (a namespace's job
// names) are each another, and are copied instead: an interned name costs
// some 200 bytes of the unique package's map.
func (n *node) addChild(name string, c *node) {
	if n.big != nil {
		n.big.insert(bigKid{name: strings.Clone(name), n: c})
		return
	}
	k := kid{name: unique.Make(name), n: c}
	i, _ := findKid(n.kids, name)
	n.kids = slices.Insert(n.kids, i, k)
	if len(n.kids) > maxKids {
		n.big = newBigKids(n.kids)
		n.kids = nil
	}
}

// removeChild removes the child called name, if any.
func (n *node) removeChild(name string) {
	if n.big != nil {
		if n.big.remove(name); n.big.n == 0 {
			n.big = nil
		}
		return
	}
	if i, ok := findKid(n.kids, name); ok {
		n.kids = slices.Delete(n.kids, i, i+1)
		if len(n.kids) == 0 {
			n.kids = nil
		}
	}
}

// childNames returns the children's names, sorted.
func (n *node) childNames() []string {
	names := make([]string, 0, n.numKids())
	if n.big != nil {
		for _, ch := range n.big.chunks {
			for _, k := range ch {
				names = append(names, k.name)
			}
		}
		return names
	}
	for _, k := range n.kids {
		names = append(names, k.name.Value())
	}
	return names
}

// eachKid calls f with the children, sorted by name, until it returns
// false.
func (n *node) eachKid(f func(name string, c *node) bool) {
	if n.big != nil {
		for _, ch := range n.big.chunks {
			for _, k := range ch {
				if !f(k.name, k.n) {
					return
				}
			}
		}
		return
	}
	for _, k := range n.kids {
		if !f(k.name.Value(), k.n) {
			return
		}
	}
}

// Bounds of a node's children array: past maxKids a node holds them in
// chunks (bigKids) of at most maxChunk. An insert into a sorted array
// moves what follows it: registering 10,000 jobs under one namespace root
// moved about 400 MB, a tenth of the registration's CPU.
const (
	maxKids  = 512
	maxChunk = 256
)

// bigKids is the children of a node with many: sorted chunks, each
// non-empty and at most maxChunk long, in order, so that an insert or a
// delete moves at most a chunk.
type bigKids struct {
	chunks [][]bigKid
	n      int // children in all
}

// bigKid is a child of a node with many, with its name not interned (see
// addChild).
type bigKid struct {
	name string
	n    *node
}

func newBigKids(kids []kid) *bigKids {
	b := &bigKids{n: len(kids)}
	for len(kids) > 0 {
		k := min(len(kids), maxChunk/2)
		ch := make([]bigKid, k)
		for i, kd := range kids[:k] {
			ch[i] = bigKid{name: strings.Clone(kd.name.Value()), n: kd.n}
		}
		b.chunks = append(b.chunks, ch)
		kids = kids[k:]
	}
	return b
}

// findBigKid is findKid in a chunk of bigKids.
func findBigKid(kids []bigKid, name string) (int, bool) {
	lo, hi := 0, len(kids)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if kids[m].name < name {
			lo = m + 1
		} else {
			hi = m
		}
	}
	return lo, lo < len(kids) && kids[lo].name == name
}

// chunk returns the index of the chunk name is in or belongs in: the
// first whose last name is not below it (the last chunk when none).
func (b *bigKids) chunk(name string) int {
	lo, hi := 0, len(b.chunks)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		ch := b.chunks[m]
		if ch[len(ch)-1].name < name {
			lo = m + 1
		} else {
			hi = m
		}
	}
	return min(lo, len(b.chunks)-1)
}

func (b *bigKids) child(name string) *node {
	ch := b.chunks[b.chunk(name)]
	if i, ok := findBigKid(ch, name); ok {
		return ch[i].n
	}
	return nil
}

func (b *bigKids) insert(k bigKid) {
	c := b.chunk(k.name)
	ch := b.chunks[c]
	i, _ := findBigKid(ch, k.name)
	ch = slices.Insert(ch, i, k)
	b.n++
	if len(ch) <= maxChunk {
		b.chunks[c] = ch
		return
	}
	half := len(ch) / 2
	b.chunks[c] = slices.Clip(ch[:half])
	b.chunks = slices.Insert(b.chunks, c+1, slices.Clone(ch[half:]))
	clear(ch[half:]) // the first half's array: nothing past its end
}

func (b *bigKids) remove(name string) {
	c := b.chunk(name)
	ch := b.chunks[c]
	i, ok := findBigKid(ch, name)
	if !ok {
		return
	}
	b.n--
	if len(ch) == 1 && len(b.chunks) > 1 {
		b.chunks = slices.Delete(b.chunks, c, c+1)
		return
	}
	b.chunks[c] = slices.Delete(ch, i, i+1)
}

// statCopy is the stat a client sees. Like ZooKeeper it hides the owner
// marker of container nodes (EphemeralOwner 0).
func (n *node) statCopy() reg.Stat {
	st := n.stat
	kids := int32(n.numKids())
	owner := st.EphemeralOwner
	if owner == containerOwner {
		owner = 0
	}
	return reg.Stat{Czxid: st.Czxid, Mzxid: st.Mzxid, Pzxid: st.Pzxid, Ctime: st.Ctime, Mtime: st.Mtime,
		Version: n.version, Cversion: n.creates*2 - kids, EphemeralOwner: owner,
		DataLength: int32(len(n.data)), NumChildren: kids}
}

func (n *node) isContainer() bool { return n.stat.EphemeralOwner == containerOwner }

type session struct {
	id     int64
	client *Client
	// ephemerals counts the session's ephemeral nodes. Their paths are
	// found by the tree's walk when the session ends (endSession): a set
	// of paths cost some 150 bytes a job (its instance and leader nodes).
	ephemerals int
	rs         *reg.Session
}

type watchKind int

const (
	watchData watchKind = iota
	watchExist
	watchChild
)

type watchKey struct {
	path string // full server path
	kind watchKind
}

type watch struct {
	sess *session
	ch   chan reg.WatchEvent
}

// lookup returns the node at a full path, or nil. Caller holds mu.
func (s *Server) lookup(path string) *node { return s.lookupFrom(s.root, path) }

// lookupFrom returns the node at path below n ("" and "/" are n itself),
// or nil. Caller holds mu.
func (s *Server) lookupFrom(n *node, path string) *node {
	if path == "/" || path == "" {
		return n
	}
	for rest := path[1:]; ; {
		el := rest
		i := strings.IndexByte(rest, '/')
		if i >= 0 {
			el, rest = rest[:i], rest[i+1:]
		}
		if n.numKids() > memoMinKids {
			n = s.memoChild(n, el)
		} else {
			n = n.child(el)
		}
		if n == nil || i < 0 {
			return n
		}
	}
}

// memoMinKids is how many children a node needs for its lookups to go
// through the memo: a binary search of a few names costs less than its
// hash.
const memoMinKids = 16

// childMemo remembers recent lookups in nodes with many children (a
// namespace's job roots): a trigger's reads of its job's subtree, a dozen
// a fire, each start with the job's name among its namespace's hundreds
// or thousands. It is direct-mapped by the child's name. An entry holds
// while its parent's child set is the one it was made with, which the
// parent's creates and child count name: a create raises creates, a
// delete lowers the count, and a rolled-back op restores both as they
// were (and the child set with them).
type childMemo [1024]memoEntry

type memoEntry struct {
	parent, child *node
	name          string
	stamp         uint64
}

// childStamp names n's current set of children (see childMemo).
func childStamp(n *node) uint64 { return uint64(uint32(n.creates))<<32 | uint64(uint32(n.numKids())) }

// memoChild is parent.child(name) through the memo. Caller holds mu.
func (s *Server) memoChild(parent *node, name string) *node {
	if s.memo == nil {
		s.memo = new(childMemo)
	}
	h := uint32(2166136261) // FNV-1a
	for i := 0; i < len(name); i++ {
		h = (h ^ uint32(name[i])) * 16777619
	}
	e := &s.memo[h%uint32(len(s.memo))]
	st := childStamp(parent)
	if e.parent == parent && e.stamp == st && e.name == name {
		return e.child
	}
	c := parent.child(name)
	if c != nil {
		*e = memoEntry{parent: parent, child: c, name: name, stamp: st}
	}
	return c
}

func parentOf(path string) string { return reg.Parent(path) }

// txn collects the effects of one write (or multi) so that a failed multi can
// be rolled back and events fire only on commit. Caller holds mu.
type txn struct {
	s      *Server
	zxid   int64
	now    int64 // see time; 0 until read
	undo   []undo
	events []pendingEvent
	// changes are the creates, data changes and deletes, in order, for the
	// recursive watches.
	changes []change
	// parents whose last child went away: container candidates.
	emptied []string
}

type change struct {
	path string
	typ  reg.WatchEventType
	n    *node // the node created, changed or deleted
}

type pendingEvent struct {
	key watchKey
	ev  reg.WatchEventType
}

// undo reverts one op of a transaction (txn.rollback).
type undo struct {
	kind   reg.OpKind // OpCreate, OpSet or OpDelete
	parent *node      // create, delete: the parent
	n      *node      // set, delete: the node
	name   string     // create, delete: the child's name
	sess   *session   // create, delete: the ephemeral owner's session, if any
	// Before the op: the parent's creates and Pzxid (create), its Pzxid
	// (delete), the node's data and stat (set).
	creates int32
	pzxid   int64
	data    []byte
	stat    nodeStat
	version int32
}

func (u *undo) revert() {
	switch u.kind {
	case reg.OpCreate:
		u.parent.removeChild(u.name)
		u.parent.creates, u.parent.stat.Pzxid = u.creates, u.pzxid
		if u.sess != nil {
			u.sess.ephemerals--
		}
	case reg.OpSet:
		u.n.data, u.n.stat, u.n.version = u.data, u.stat, u.version
	case reg.OpDelete:
		u.parent.addChild(u.name, u.n)
		u.parent.stat.Pzxid = u.pzxid
		if u.sess != nil {
			u.sess.ephemerals++
		}
	}
}

// begin starts a transaction, reusing an ended one's buffers: a write
// allocated a transaction, its undo closures and its event lists each
// time. Caller holds mu.
func (s *Server) begin() *txn {
	s.zxid++
	var t *txn
	if k := len(s.txns); k > 0 {
		t, s.txns = s.txns[k-1], s.txns[:k-1]
	} else {
		t = &txn{s: s}
	}
	t.zxid, t.now = s.zxid, 0
	return t
}

// time returns the transaction's time (ctime and mtime, Unix
// milliseconds), read from the clock at its first create or set: a
// transaction of deletes and checks reads none.
func (t *txn) time() int64 {
	if t.now == 0 {
		t.now = t.s.now().UnixMilli()
	}
	return t.now
}

// end returns t for reuse. Caller holds mu.
func (t *txn) end() {
	clear(t.undo)
	clear(t.events)
	clear(t.changes)
	clear(t.emptied)
	t.undo, t.events, t.changes, t.emptied = t.undo[:0], t.events[:0], t.changes[:0], t.emptied[:0]
	t.s.txns = append(t.s.txns, t)
}

func (t *txn) rollback() {
	for i := len(t.undo) - 1; i >= 0; i-- {
		t.undo[i].revert()
	}
	t.s.zxid-- // the failed transaction consumed no zxid
	t.end()
}

// commit fires the watches and deletes emptied containers (each in its own
// transaction, as ZooKeeper's container manager does).
func (t *txn) commit() {
	s := t.s
	for _, e := range t.events {
		s.fire(e.key, e.ev)
	}
	for _, ch := range t.changes {
		s.fireRecursive(ch)
	}
	for _, p := range t.emptied {
		s.reapContainer(p)
	}
	t.end()
}

// reapContainer deletes an empty container that once had children; its
// commit reaps a parent container emptied in turn.
func (s *Server) reapContainer(path string) {
	n := s.lookup(path)
	if path == "/" || n == nil || !n.isContainer() || n.numKids() > 0 || n.creates == 0 {
		return
	}
	t := s.begin()
	if err := t.delete(path, reg.AnyVersion); err != nil {
		t.rollback()
		return
	}
	t.commit()
}

func (t *txn) create(path string, data []byte, mode reg.CreateMode, owner int64) (string, error) {
	s := t.s
	pp := parentOf(path)
	parent := s.lookup(pp)
	if parent == nil {
		return "", reg.ErrNoNode
	}
	if parent.stat.EphemeralOwner != 0 && !parent.isContainer() {
		return "", reg.ErrNoChildrenForEphemerals
	}
	if mode.IsSequential() {
		path = fmt.Sprintf("%s%010d", path, parent.creates)
	}
	name := reg.Base(path)
	if path == "/" || name == "" {
		return "", reg.ErrNodeExists
	}
	if parent.child(name) != nil {
		return "", reg.ErrNodeExists
	}
	n := &node{data: kept(data)}
	now := t.time()
	n.stat = nodeStat{Czxid: t.zxid, Mzxid: t.zxid, Pzxid: t.zxid, Ctime: now, Mtime: now}
	switch {
	case mode == reg.Container:
		n.stat.EphemeralOwner = containerOwner
	case mode.IsEphemeral():
		n.stat.EphemeralOwner = owner
	}
	oldC, oldP := parent.creates, parent.stat.Pzxid
	parent.addChild(name, n)
	parent.creates++
	parent.stat.Pzxid = t.zxid
	var sess *session
	if mode.IsEphemeral() {
		sess = s.sessions[owner]
		sess.ephemerals++
	}
	t.undo = append(t.undo, undo{kind: reg.OpCreate, parent: parent, name: name, sess: sess, creates: oldC, pzxid: oldP})
	t.events = append(t.events,
		pendingEvent{watchKey{path, watchExist}, reg.EventNodeCreated},
		pendingEvent{watchKey{pp, watchChild}, reg.EventNodeChildrenChanged})
	t.changes = append(t.changes, change{path, reg.EventNodeCreated, n})
	return path, nil
}

func (t *txn) set(path string, data []byte, version int32) (reg.Stat, error) {
	n := t.s.lookup(path)
	if n == nil {
		return reg.Stat{}, reg.ErrNoNode
	}
	if version != reg.AnyVersion && version != n.version {
		return reg.Stat{}, reg.ErrBadVersion
	}
	old, oldStat, oldV := n.data, n.stat, n.version
	n.data = kept(data)
	n.version++
	n.stat.Mzxid = t.zxid
	n.stat.Mtime = t.time()
	t.undo = append(t.undo, undo{kind: reg.OpSet, n: n, data: old, stat: oldStat, version: oldV})
	t.events = append(t.events,
		pendingEvent{watchKey{path, watchData}, reg.EventNodeDataChanged},
		pendingEvent{watchKey{path, watchExist}, reg.EventNodeDataChanged})
	t.changes = append(t.changes, change{path, reg.EventNodeDataChanged, n})
	return n.statCopy(), nil
}

func (t *txn) delete(path string, version int32) error {
	s := t.s
	if path == "/" {
		return reg.ErrInvalidArgument
	}
	n := s.lookup(path)
	if n == nil {
		return reg.ErrNoNode
	}
	if version != reg.AnyVersion && version != n.version {
		return reg.ErrBadVersion
	}
	if n.numKids() > 0 {
		return reg.ErrNotEmpty
	}
	pp := parentOf(path)
	parent := s.lookup(pp)
	name := reg.Base(path)
	oldP := parent.stat.Pzxid
	parent.removeChild(name)
	parent.stat.Pzxid = t.zxid
	var sess *session
	if o := n.stat.EphemeralOwner; o != 0 && o != containerOwner {
		if sess = s.sessions[o]; sess != nil {
			sess.ephemerals--
		}
	}
	t.undo = append(t.undo, undo{kind: reg.OpDelete, parent: parent, n: n, name: name, sess: sess, pzxid: oldP})
	t.events = append(t.events,
		pendingEvent{watchKey{path, watchData}, reg.EventNodeDeleted},
		pendingEvent{watchKey{path, watchExist}, reg.EventNodeDeleted},
		pendingEvent{watchKey{path, watchChild}, reg.EventNodeDeleted},
		pendingEvent{watchKey{pp, watchChild}, reg.EventNodeChildrenChanged})
	t.changes = append(t.changes, change{path, reg.EventNodeDeleted, n})
	if parent.numKids() == 0 && parent.isContainer() {
		t.emptied = append(t.emptied, pp)
	}
	return nil
}

// checkNode is a check op on node n (nil: absent).
func checkNode(n *node, version int32) error {
	if n == nil {
		return reg.ErrNoNode
	}
	if version != reg.AnyVersion && version != n.version {
		return reg.ErrBadVersion
	}
	return nil
}

// fire delivers ev to every watch registered under key and removes them.
func (s *Server) fire(key watchKey, typ reg.WatchEventType) {
	ws := s.watches[key]
	if len(ws) == 0 {
		return
	}
	delete(s.watches, key)
	for _, w := range ws {
		w.sess.client.deliver(w, reg.WatchEvent{Type: typ, Path: w.sess.client.rel(key.path)})
	}
}

func (s *Server) addWatch(sess *session, key watchKey) <-chan reg.WatchEvent {
	w := &watch{sess: sess, ch: make(chan reg.WatchEvent, 1)}
	s.watches[key] = append(s.watches[key], w)
	return w.ch
}

func (s *Server) newSession(c *Client) *session {
	s.nextSess++
	sess := &session{id: s.nextSess, client: c}
	sess.rs = reg.NewSession(sess.id)
	sess.rs.SetTimeout(s.timeout)
	s.sessions[sess.id] = sess
	return sess
}

// endSession ends a session as ZooKeeper does on expiry or close: its own
// watches end with NotWatching(cause), then its ephemeral nodes are deleted
// (one transaction) and the resulting events fire for everyone else.
func (s *Server) endSession(sess *session, cause error) {
	if _, ok := s.sessions[sess.id]; !ok {
		return
	}
	delete(s.sessions, sess.id)
	s.disarmSession(sess)
	for key, ws := range s.watches {
		kept := ws[:0]
		for _, w := range ws {
			if w.sess == sess {
				sess.client.deliver(w, reg.WatchEvent{Type: reg.EventNotWatching, Path: sess.client.rel(key.path), Err: cause})
				continue
			}
			kept = append(kept, w)
		}
		if len(kept) == 0 {
			delete(s.watches, key)
		} else {
			s.watches[key] = kept
		}
	}
	if sess.ephemerals > 0 {
		paths := s.ephemeralsOf(sess.id, sess.ephemerals)
		t := s.begin()
		for _, p := range paths {
			_ = t.delete(p, reg.AnyVersion) // ephemerals have no children
		}
		t.commit()
	}
	sess.rs.End(cause)
}

// ephemeralsOf returns the paths of the n ephemeral nodes that session id
// owns, sorted: a walk of the tree, which ends once it has found them.
// Caller holds mu.
func (s *Server) ephemeralsOf(id int64, n int) []string {
	paths := make([]string, 0, n)
	buf := make([]byte, 0, 256)
	var walk func(nd *node) bool
	walk = func(nd *node) bool {
		more := true
		nd.eachKid(func(name string, c *node) bool {
			mark := len(buf)
			buf = append(append(buf, '/'), name...)
			if c.stat.EphemeralOwner == id {
				paths = append(paths, string(buf))
			}
			more = len(paths) < n && walk(c)
			buf = buf[:mark]
			return more
		})
		return more
	}
	walk(s.root)
	return paths
}

// SessionIDs returns the ids of the live sessions (for tests and dumps).
func (s *Server) SessionIDs() []int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	ids := make([]int64, 0, len(s.sessions))
	for id := range s.sessions {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	return ids
}

// ExpireSession ends the session with this id as a server-side timeout
// would. It reports whether the session existed. Its client opens a new
// session at once (or when resumed, if suspended).
func (s *Server) ExpireSession(id int64) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	sess := s.sessions[id]
	if sess == nil {
		return false
	}
	sess.client.expireLocked(sess)
	return true
}
