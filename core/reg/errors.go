package reg

import (
	"errors"
	"fmt"
	"strings"
)

// Sentinel errors. Implementations wrap them (with the operation and the path)
// so callers branch with errors.Is. Each maps one ZooKeeper condition; the
// mapping lives in one place per implementation.
var (
	// ErrNoNode: the node (or, for a create, its parent) does not exist.
	ErrNoNode = errors.New("reg: node does not exist")
	// ErrNodeExists: a create found the node already there.
	ErrNodeExists = errors.New("reg: node already exists")
	// ErrBadVersion: the expected version did not match.
	ErrBadVersion = errors.New("reg: version conflict")
	// ErrNotEmpty: a delete hit a node that still has children.
	ErrNotEmpty = errors.New("reg: node has children")
	// ErrNoChildrenForEphemerals: a create under an ephemeral node.
	ErrNoChildrenForEphemerals = errors.New("reg: ephemeral nodes may not have children")
	// ErrNoAuth: the node's ACL refuses this client (see the digest setting).
	ErrNoAuth = errors.New("reg: not authorized")
	// ErrConnectionLoss: the connection dropped before the server answered;
	// the operation may or may not have been applied. Reads and idempotent
	// writes may be retried; the zookeeper implementation already retries
	// within its policy before returning this.
	ErrConnectionLoss = errors.New("reg: connection loss")
	// ErrSessionLost: the session this operation or watch belonged to has
	// expired or was closed. Ephemeral nodes of that session are gone; a new
	// session may already be open (see Client.Session).
	ErrSessionLost = errors.New("reg: session lost")
	// ErrClosed: the client was closed.
	ErrClosed = errors.New("reg: client closed")
	// ErrInvalidArgument: a malformed path, mode or operation.
	ErrInvalidArgument = errors.New("reg: invalid argument")
	// ErrUnimplemented: the server does not implement the request (a
	// ZooKeeper before 3.6 asked for a recursive watch); callers fall back
	// to what older servers offer.
	ErrUnimplemented = errors.New("reg: not implemented by the server")
)

// OpError is the error every Client method returns: the operation, the
// namespace-relative path, and the cause (wrapping a sentinel above).
type OpError struct {
	Op   string // "get", "create", "multi", ...
	Path string
	Err  error
}

// Error says "reg:" once: "reg: get /j: not authorized (zk: ...)", not
// "reg: get /j: reg: not authorized".
func (e *OpError) Error() string {
	return fmt.Sprintf("reg: %s %s: %s", e.Op, e.Path, strings.TrimPrefix(e.Err.Error(), "reg: "))
}

// Unwrap returns the cause.
func (e *OpError) Unwrap() error { return e.Err }

// MultiError reports which operation of a failed transaction failed; nothing
// of the transaction was applied. It unwraps to that operation's sentinel.
type MultiError struct {
	Index int // index of the failing Op
	Op    Op
	Err   error
}

func (e *MultiError) Error() string {
	return fmt.Sprintf("op %d (%s %s) failed: %v", e.Index, e.Op.Kind, e.Op.Path, e.Err)
}

// Unwrap returns the failing operation's cause.
func (e *MultiError) Unwrap() error { return e.Err }

// IsRetryable reports whether err is a transient connection problem after
// which the same operation may succeed (ErrConnectionLoss). Session loss and
// closing are not retryable: the caller must react to the new session.
func IsRetryable(err error) bool { return errors.Is(err, ErrConnectionLoss) }
