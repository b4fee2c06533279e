package reg

import (
	"context"
	"errors"
	"fmt"

	"golang.org/x/sync/errgroup"
)

// ReadKind is the kind of a MultiRead operation.
type ReadKind int

// MultiRead operation kinds: ZooKeeper's getData and getChildren, the two
// kinds its multiRead request (3.6+) carries.
const (
	ReadGet ReadKind = iota + 1
	ReadChildren
)

func (k ReadKind) String() string {
	switch k {
	case ReadGet:
		return "get"
	case ReadChildren:
		return "children"
	}
	return fmt.Sprintf("ReadKind(%d)", int(k))
}

// ReadOp is one read of a MultiRead.
type ReadOp struct {
	Kind ReadKind
	Path string
}

// GetOp reads a node's data and stat, as Get.
func GetOp(path string) ReadOp { return ReadOp{Kind: ReadGet, Path: path} }

// ChildrenOp lists a node's children, as Children.
func ChildrenOp(path string) ReadOp { return ReadOp{Kind: ReadChildren, Path: path} }

// ReadResult is one operation's outcome in a MultiRead: what Get (Data,
// Stat) or Children (Children, in the server's order) would have
// returned, or its error (an *OpError wrapping ErrNoNode, ErrNoAuth, ...).
type ReadResult struct {
	Data     []byte // not to be modified (see Client)
	Stat     Stat
	Children []string
	Err      error
}

// MultiReader reads many nodes in few round trips.
type MultiReader interface {
	// MultiRead runs ops and returns one result per op, in order. Unlike
	// Multi it is not a transaction: each op sees the registry as some
	// plain read at about the same time would, and one op's failure (an
	// absent node) is that op's Err, not the call's. The call's error is
	// for what fails every op: an invalid path (no op is run), ctx, a
	// connection or session loss, a closed client.
	//
	// A ZooKeeper client sends the ops as multiRead requests (ZooKeeper
	// 3.6+), a few hundred ops each: on a server, one request costs about
	// as much as a plain read, so 8,000 reads take tens of milliseconds
	// instead of about a second. Against an older server (which answers
	// UNIMPLEMENTED and drops the connection, once: the session survives)
	// it falls back to pipelined plain reads.
	MultiRead(ctx context.Context, ops ...ReadOp) ([]ReadResult, error)
}

// MultiReadAppender is a MultiReader that appends its results to the
// caller's slice, so that a caller reading in rounds (SharedCache) reuses
// one array instead of allocating one per call. An in-process registry
// implements it; its results are those MultiRead would return.
type MultiReadAppender interface {
	// MultiReadAppend is MultiRead with the results appended to dst, one
	// per op, in order. On an error dst is returned unchanged.
	MultiReadAppend(ctx context.Context, dst []ReadResult, ops ...ReadOp) ([]ReadResult, error)
}

// ReadParallelism bounds how many plain reads ReadMany and the
// implementations' fallbacks have in flight at once.
const ReadParallelism = 32

// ReadMany runs ops through r's MultiRead when r has one (every Client
// does), else as plain reads, ReadParallelism at a time, with the same
// results and errors.
func ReadMany(ctx context.Context, r Reader, ops ...ReadOp) ([]ReadResult, error) {
	if m, ok := r.(MultiReader); ok {
		return m.MultiRead(ctx, ops...)
	}
	return ReadEach(ctx, r, ops...)
}

// ReadManyAppend is ReadMany with the results appended to dst: through r's
// MultiReadAppend when it has one, without allocating when dst has room.
func ReadManyAppend(ctx context.Context, r Reader, dst []ReadResult, ops ...ReadOp) ([]ReadResult, error) {
	if m, ok := r.(MultiReadAppender); ok {
		return m.MultiReadAppend(ctx, dst, ops...)
	}
	res, err := ReadMany(ctx, r, ops...)
	if err != nil {
		return dst, err
	}
	return append(dst, res...), nil
}

// ReadEach runs ops as plain reads of r, ReadParallelism at a time: the
// fallback for readers without multiRead. Errors other than ErrNoNode and
// ErrNoAuth (which are the op's) fail the call.
func ReadEach(ctx context.Context, r Reader, ops ...ReadOp) ([]ReadResult, error) {
	for _, op := range ops {
		if err := ValidateReadOp(op); err != nil {
			return nil, err
		}
	}
	out := make([]ReadResult, len(ops))
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(ReadParallelism)
	for i, op := range ops {
		g.Go(func() error {
			res := &out[i]
			switch op.Kind {
			case ReadGet:
				res.Data, res.Stat, res.Err = r.Get(gctx, op.Path)
			case ReadChildren:
				res.Children, res.Err = r.Children(gctx, op.Path)
			}
			if res.Err != nil && !IsOpErr(res.Err) {
				return res.Err
			}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	return out, nil
}

// IsOpErr reports whether a MultiRead op's error belongs to that op alone
// (the node is absent, or its ACL refuses the read) rather than to the
// whole call.
func IsOpErr(err error) bool { return errors.Is(err, ErrNoNode) || errors.Is(err, ErrNoAuth) }

// ValidateReadOp checks an op's kind and path (an *OpError wrapping
// ErrInvalidArgument).
func ValidateReadOp(op ReadOp) error {
	switch op.Kind {
	case ReadGet, ReadChildren:
	default:
		return &OpError{Op: "multiread", Path: op.Path, Err: fmt.Errorf("read kind %v: %w", op.Kind, ErrInvalidArgument)}
	}
	if err := ValidatePath(op.Path, false); err != nil {
		return &OpError{Op: "multiread", Path: op.Path, Err: err}
	}
	return nil
}
