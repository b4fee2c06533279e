package reg

import (
	"context"
	"fmt"
	"time"
)

// AnyVersion matches any version in Set, Delete and version checks.
const AnyVersion int32 = -1

// Stat is a node's metadata, field for field ZooKeeper's Stat. Times are
// milliseconds since the Unix epoch as the server's clock saw them.
type Stat struct {
	Czxid          int64 // zxid of the create
	Mzxid          int64 // zxid of the last data change
	Pzxid          int64 // zxid of the last child change
	Ctime          int64 // create time, ms since epoch (server clock)
	Mtime          int64 // last data change time, ms since epoch (server clock)
	Version        int32 // data version: number of Sets
	Cversion       int32 // child version: number of child creates and deletes
	Aversion       int32 // ACL version
	EphemeralOwner int64 // owning session id for ephemeral nodes, 0 otherwise
	DataLength     int32
	NumChildren    int32
}

// ModTime returns Mtime as a time.Time.
func (s Stat) ModTime() time.Time { return time.UnixMilli(s.Mtime) }

// CreateTime returns Ctime as a time.Time.
func (s Stat) CreateTime() time.Time { return time.UnixMilli(s.Ctime) }

// CreateMode is the kind of node Create makes.
type CreateMode int

// Create modes, as ZooKeeper's CreateMode.
const (
	Persistent CreateMode = iota
	Ephemeral
	PersistentSequential
	EphemeralSequential
	// Container nodes are persistent nodes the server deletes once their
	// last child is gone (lazily: real ZooKeeper checks periodically, and
	// only containers that ever had a child).
	Container
)

func (m CreateMode) String() string {
	switch m {
	case Persistent:
		return "persistent"
	case Ephemeral:
		return "ephemeral"
	case PersistentSequential:
		return "persistent-sequential"
	case EphemeralSequential:
		return "ephemeral-sequential"
	case Container:
		return "container"
	}
	return fmt.Sprintf("CreateMode(%d)", int(m))
}

// IsEphemeral reports whether nodes of this mode die with their session.
func (m CreateMode) IsEphemeral() bool { return m == Ephemeral || m == EphemeralSequential }

// IsSequential reports whether the server appends a 10-digit counter.
func (m CreateMode) IsSequential() bool {
	return m == PersistentSequential || m == EphemeralSequential
}

// Valid reports whether m is one of the defined modes.
func (m CreateMode) Valid() bool { return m >= Persistent && m <= Container }

// ParentMode says how Create treats missing ancestors.
type ParentMode int

const (
	// NoParents fails with ErrNoNode when the parent is missing (the default).
	NoParents ParentMode = iota
	// PersistentParents creates missing ancestors as persistent nodes with
	// empty (not null) data, like Curator's creatingParentsIfNeeded.
	PersistentParents
	// ContainerParents creates missing ancestors as container nodes with
	// empty (not null) data, like Curator's creatingParentContainersIfNeeded.
	ContainerParents
)

// CreateOptions are Create's optional settings.
type CreateOptions struct {
	Parents ParentMode
}

// CreateOption sets a CreateOptions field.
type CreateOption func(*CreateOptions)

// WithParents creates missing ancestors as persistent nodes.
func WithParents() CreateOption { return func(o *CreateOptions) { o.Parents = PersistentParents } }

// WithParentContainers creates missing ancestors as container nodes.
func WithParentContainers() CreateOption {
	return func(o *CreateOptions) { o.Parents = ContainerParents }
}

// ApplyCreateOptions folds opts into a CreateOptions (for implementations).
func ApplyCreateOptions(opts []CreateOption) CreateOptions {
	var o CreateOptions
	for _, f := range opts {
		f(&o)
	}
	return o
}

// Reader reads nodes. Data read is not to be modified (see Client).
type Reader interface {
	// Get returns a node's data and stat. ErrNoNode if absent.
	Get(ctx context.Context, path string) ([]byte, Stat, error)
	// Exists returns the stat and true, or a zero Stat and false.
	Exists(ctx context.Context, path string) (Stat, bool, error)
	// Children returns the child names (not paths) in the server's order.
	// ErrNoNode if the node is absent.
	Children(ctx context.Context, path string) ([]string, error)
}

// Writer changes nodes.
//
// Data is never written as ZooKeeper's null: nil data (and every parent a
// create makes) is written as empty data, length 0, as Curator does. A Java
// ElasticJob instance reading a node with getDirectly dereferences its data,
// so a null node breaks it. Nodes written by others may still be
// null; Get returns nil for those.
//
// Data written is not to be modified after the call (see Client).
type Writer interface {
	// Create makes a node and returns its path (with the sequence suffix for
	// sequential modes). ErrNodeExists, ErrNoNode (parent missing and no
	// parent option), ErrNoChildrenForEphemerals.
	Create(ctx context.Context, path string, data []byte, mode CreateMode, opts ...CreateOption) (string, error)
	// Set replaces a node's data if its version is version (AnyVersion: any).
	Set(ctx context.Context, path string, data []byte, version int32) (Stat, error)
	// Delete removes a childless node if its version is version (AnyVersion:
	// any). ErrNoNode, ErrBadVersion, ErrNotEmpty. See DeleteRecursive.
	Delete(ctx context.Context, path string, version int32) error
	// Multi applies ops atomically: all or nothing. On failure the error is
	// a *MultiError (inside an *OpError) naming the first failing op. Ops
	// create no parents.
	Multi(ctx context.Context, ops ...Op) ([]OpResult, error)
}

// Watcher sets ZooKeeper-style one-shot watches. Each returned channel
// receives exactly one WatchEvent and is then closed; it is buffered, so
// delivery never blocks on a receiver that is busy. A watch set in one
// session ends with EventNotWatching (Err wraps ErrSessionLost or ErrClosed)
// when that session is lost or the client closes; watches survive a
// connection loss that keeps the session. The read and the arming of the
// watch are atomic: no change after the read can be missed.
type Watcher interface {
	// GetW is Get plus a data watch (fires on data change or delete).
	GetW(ctx context.Context, path string) ([]byte, Stat, <-chan WatchEvent, error)
	// ExistsW is Exists plus a watch: on create if absent, else on data
	// change or delete.
	ExistsW(ctx context.Context, path string) (Stat, bool, <-chan WatchEvent, error)
	// ChildrenW is Children plus a child watch (fires on a child create or
	// delete, or on the node's delete).
	ChildrenW(ctx context.Context, path string) ([]string, Stat, <-chan WatchEvent, error)
}

// Client is a connection to a registry under one namespace. It is safe for
// concurrent use. Its session may change over its life (see Session and
// WatchConnection); the Client itself keeps working across sessions.
//
// Every method returns when ctx ends, but like any network request a write
// already sent may still be applied afterwards (or after an
// ErrConnectionLoss): recipes that cannot tolerate that use protected node
// names (see recipe.Latch) or a check in a Multi.
//
// Node data is shared, not copied, where the registry is in the process
// (InProcess: the embedded registry keeps a node's data as one slice for
// the writer, every reader and the caches; a copy each way was a third of
// an idle job's memory). So:
//   - Data passed to a write (Create, Set, the Data of a Multi's ops) may be
//     kept by the registry: the caller must not modify it after the call,
//     even one that failed or returned when ctx ended. A buffer that is
//     reused must be copied before it is written.
//   - Data returned by a read (Get, GetW, MultiRead) may be shared with the
//     registry and other readers: the caller must not modify it in place.
//     Its capacity is its length, so an append to it copies.
type Client interface {
	Reader
	MultiReader
	Writer
	Watcher
	// Session returns the current session. Its Done channel closes when it
	// is lost; the client then opens a new one by itself, which WatchConnection
	// reports as StateNewSession.
	Session() *Session
	// WatchConnection streams connection-state changes from now on, in order,
	// without loss, until ctx ends or the client closes (then the channel is
	// closed). The first event is the current state (Connected or Suspended).
	WatchConnection(ctx context.Context) <-chan ConnEvent
	// Namespace returns the namespace this client's paths are relative to.
	Namespace() string
	// Close ends the session (deleting its ephemeral nodes) and releases the
	// connection. Later calls fail with ErrClosed.
	Close() error
}

// InProcess is implemented by clients that serve each call in the calling
// goroutine, without I/O (the embedded registry). A caller that would send
// independent requests from goroutines of their own, to overlap their round
// trips, sends them one after the other to such a client: there is no round
// trip to overlap, and a goroutine per request costs more than the request.
type InProcess interface {
	InProcess() bool
}

// IsInProcess reports whether c, or the client it wraps (a decorator such
// as regcount's, with an Unwrap method), serves calls in process
// (InProcess).
func IsInProcess(c Client) bool {
	for c != nil {
		if ip, ok := c.(InProcess); ok {
			return ip.InProcess()
		}
		u, ok := c.(interface{ Unwrap() Client })
		if !ok {
			return false
		}
		c = u.Unwrap()
	}
	return false
}

// Expirer is implemented by clients whose session can be expired on demand
// (tests, fault drills): the server ends the session exactly as on a timeout,
// and the client then opens a new one.
type Expirer interface {
	Expire(ctx context.Context) error
}

// OpKind is the kind of a transaction operation.
type OpKind int

// Transaction operation kinds.
const (
	OpCheck OpKind = iota + 1
	OpCreate
	OpSet
	OpDelete
)

func (k OpKind) String() string {
	switch k {
	case OpCheck:
		return "check"
	case OpCreate:
		return "create"
	case OpSet:
		return "set"
	case OpDelete:
		return "delete"
	}
	return fmt.Sprintf("OpKind(%d)", int(k))
}

// Op is one operation of a Multi.
type Op struct {
	Kind    OpKind
	Path    string
	Data    []byte     // create, set; not to be modified once written (see Client)
	Version int32      // check, set, delete
	Mode    CreateMode // create
}

// CheckOp asserts path exists with version (AnyVersion: exists at all).
func CheckOp(path string, version int32) Op { return Op{Kind: OpCheck, Path: path, Version: version} }

// CreateOp creates path (no parents are created inside a transaction).
func CreateOp(path string, data []byte, mode CreateMode) Op {
	return Op{Kind: OpCreate, Path: path, Data: data, Mode: mode}
}

// SetOp sets path's data if its version matches.
func SetOp(path string, data []byte, version int32) Op {
	return Op{Kind: OpSet, Path: path, Data: data, Version: version}
}

// DeleteOp deletes path if its version matches.
func DeleteOp(path string, version int32) Op { return Op{Kind: OpDelete, Path: path, Version: version} }

// OpResult is one operation's result in a successful Multi.
type OpResult struct {
	Path string // created path (create)
	Stat Stat   // new stat (set)
	// Czxid is the created node's Czxid (create): the transaction's zxid,
	// higher than that of every transaction the registry applied before
	// it, so a node deleted and created again has a higher one.
	Czxid int64
}

// WatchEventType is the kind of a one-shot watch notification.
type WatchEventType int

// One-shot watch event types, as ZooKeeper's.
const (
	EventNodeCreated WatchEventType = iota + 1
	EventNodeDeleted
	EventNodeDataChanged
	EventNodeChildrenChanged
	// EventNotWatching: the watch ended without a change (session lost or
	// client closed); Err says why.
	EventNotWatching
	// EventResync: a recursive watch (RecursiveWatcher) may have missed
	// changes (the connection was lost, or a new session began) and is
	// armed again; Path is the watched path. The caller re-reads what it
	// follows.
	EventResync
	// EventPaused: a store watch (StoreWatcher) is told of no change from
	// now on until its EventResync (the connection is down, or the session
	// ends); Store reads the tree as it is at that moment, during the call
	// only. Only WatchStore's fn gets it.
	EventPaused
)

func (t WatchEventType) String() string {
	switch t {
	case EventNodeCreated:
		return "created"
	case EventNodeDeleted:
		return "deleted"
	case EventNodeDataChanged:
		return "data-changed"
	case EventNodeChildrenChanged:
		return "children-changed"
	case EventNotWatching:
		return "not-watching"
	case EventResync:
		return "resync"
	case EventPaused:
		return "paused"
	}
	return fmt.Sprintf("WatchEventType(%d)", int(t))
}

// WatchEvent is a watch notification: one-shot (Watcher) or recursive
// (RecursiveWatcher).
type WatchEvent struct {
	Type WatchEventType
	Path string // namespace-relative
	Err  error  // for EventNotWatching
	// Known (set by an in-process registry's recursive watch: the embedded
	// one) says Data and Stat are the node's as the transaction that made
	// the change left it (EventNodeCreated, EventNodeDataChanged), or as
	// it was when deleted (EventNodeDeleted), so that a cache need not
	// read it back. Data is shared and never modified (see Reader).
	Known bool
	Data  []byte
	Stat  Stat
	// Store reads the tree, during an EventPaused call only (nil
	// otherwise).
	Store StoreReader
}

// RecursiveWatcher is implemented by clients that can follow a whole subtree
// with one persistent recursive watch (ZooKeeper 3.6+ addWatch, mode
// PERSISTENT_RECURSIVE).
type RecursiveWatcher interface {
	// WatchRecursive arms a persistent recursive watch on path and calls fn for
	// every create (EventNodeCreated), delete (EventNodeDeleted) and data change
	// (EventNodeDataChanged) of path or of any node below it, in the order the
	// server applied them, until ctx ends or the client closes. There are no
	// child events. fn runs on the client's delivery goroutine: it must return
	// quickly and must not call the client. When changes may have been missed
	// (the connection was lost and the watch was armed again on the new
	// connection, or a new session began), fn gets EventResync (Path = the
	// watched path): the caller must re-read what it follows. When ctx ends or
	// the client closes, fn gets EventNotWatching once (Err says why) and never
	// again. It returns once the watch is armed on the server. ErrUnimplemented:
	// the server does not support it (before 3.6); callers fall back to one-shot
	// watches.
	WatchRecursive(ctx context.Context, path string, fn func(WatchEvent)) error
}

// StoreReader reads an in-process registry's tree where it is held, with
// no request: what a tree cache would read from its own copy.
type StoreReader interface {
	// ReadNode returns the data and stat of path (namespace-relative) as
	// the registry holds them. The data is the registry's own, never
	// modified (see Reader).
	ReadNode(path string) (data []byte, st Stat, ok bool)
	// EachChild calls f with path's child names, sorted, until f returns
	// false; found is false when path does not exist. f runs under the
	// registry's lock: it must not call the registry or its Store.
	EachChild(path string, f func(name string) bool) (found bool)
	// Walk calls f with the node at path and each node below it, parents
	// first and children in order, not below a node leaf reports true for;
	// nothing when path does not exist. f runs under the registry's lock
	// (as EachChild's).
	Walk(path string, leaf func(path string) bool, f func(path string, data []byte, st Stat))
}

// Store is the tree of an in-process registry as a SharedCache reads it
// in place of a copy of its own (StoreWatcher).
type Store interface {
	StoreReader
	// Atomically runs f with every change held off: no transaction commits
	// and no watch's fn runs meanwhile. r reads as the Store does, without
	// taking the lock; f must not call the registry or the Store.
	Atomically(f func(r StoreReader))
}

// StoreWatcher is implemented by in-process clients whose tree a cache can
// read where it is held (the embedded registry): the cache then keeps no
// copy of what it tracks while the connection stays up.
type StoreWatcher interface {
	InlineRecursiveWatcher
	// WatchStore is WatchRecursiveInline on "/", and returns the tree. fn
	// is in addition called with EventPaused, on the goroutine that
	// suspends the connection or ends the session, before the first change
	// it is not told of; EventResync follows once it is told again.
	WatchStore(ctx context.Context, fn func(WatchEvent)) (Store, error)
}

// InlineRecursiveWatcher is implemented by clients that can call a
// recursive watch's fn where each event arises instead of on a delivery
// goroutine: the embedded registry on the goroutine of the write that
// caused it, while that write is still serialised with the others (a
// burst of writes then costs no goroutine start and no hand-over per
// event), ZooKeeper's on the connection's reader as the notification is
// read. The order and the events are WatchRecursive's, and in addition fn
// has been called with every event the registry sent before a reply by
// the time the call waiting for that reply returns (SharedCache relies on
// it to apply a deletion without reading it back). fn must never block and
// take no lock that anything holds while it calls the client
// (SharedCache's queue of notifications qualifies).
type InlineRecursiveWatcher interface {
	RecursiveWatcher
	// WatchRecursiveInline is WatchRecursive with fn called inline.
	WatchRecursiveInline(ctx context.Context, path string, fn func(WatchEvent)) error
}
