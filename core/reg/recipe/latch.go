package recipe

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/ejob-io/ejob/core/reg"
)

// Sentinel errors.
var (
	// ErrNotLeader: the caller does not hold the latch or leader node.
	ErrNotLeader = errors.New("recipe: not the leader")
	// ErrFenced: a fenced write was rejected because the fence (latch or
	// leader node) is gone, changed, or belongs to a lost session.
	ErrFenced = errors.New("recipe: fenced: leadership lost")
)

// lockName is Curator LeaderLatch's LOCK_NAME; protectedPrefix is Curator's
// protection-mode prefix ("_c_" + UUID + "-").
const (
	lockName        = "latch-"
	protectedPrefix = "_c_"
)

// Latch is Curator's LeaderLatch recipe, byte-compatible: each participant
// creates an ephemeral-sequential node "{path}/_c_{uuid}-latch-{seq}" whose
// data is its participant id (parents as containers), participants are
// ordered by the text after the last "latch-", the first one owns the latch,
// and each other watches its predecessor. A Latch is single-use per
// Acquire/Release cycle and safe for concurrent use.
type Latch struct {
	c    reg.Client
	path string
	id   []byte

	mu       sync.Mutex
	node     string // our full node path, "" if none
	sess     *reg.Session
	owner    bool
	released chan struct{} // closed by Release to wake a pending Acquire
}

// NewLatch returns a latch at path (e.g. "/job/leader/election/latch") for
// participant id (ElasticJob uses "").
func NewLatch(c reg.Client, path, id string) *Latch {
	return &Latch{c: c, path: path, id: []byte(id)}
}

// Acquire blocks until this participant owns the latch, ctx ends (its node
// is then removed), its session is lost (ErrSessionLost), or Release is
// called meanwhile (ErrNotLeader). Acquire on an owned latch returns nil at
// once. Run one Acquire at a time per Latch; IsOwner, Fence and Release may
// be called concurrently with it.
func (l *Latch) Acquire(ctx context.Context) error {
	l.mu.Lock()
	if l.owner && l.sess != nil && l.sess.Err() == nil {
		l.mu.Unlock()
		return nil
	}
	l.owner = false
	node, sess := l.node, l.sess
	released := make(chan struct{})
	l.released = released
	l.mu.Unlock()
	if node == "" || sess == nil || sess.Err() != nil {
		var err error
		if node, sess, err = l.createNode(ctx); err != nil {
			return err
		}
		l.mu.Lock()
		l.node, l.sess = node, sess
		l.mu.Unlock()
	}
	err := l.await(ctx, node, sess, released)
	l.mu.Lock()
	defer l.mu.Unlock()
	if err == nil && l.node != node {
		err = fmt.Errorf("latch %s: released while acquiring: %w", l.path, ErrNotLeader)
	}
	if err != nil {
		if l.node == node {
			l.node, l.sess, l.owner = "", nil, false
		}
		l.cleanup(ctx, node, sess)
		return err
	}
	l.owner = true
	return nil
}

func (l *Latch) createNode(ctx context.Context) (string, *reg.Session, error) {
	sess := l.c.Session()
	uuid, err := newUUID()
	if err != nil {
		return "", nil, err
	}
	prefix := protectedPrefix + uuid + "-"
	base := reg.Join(l.path, prefix+lockName)
	for try := 0; ; try++ {
		p, err := l.c.Create(ctx, base, l.id, reg.EphemeralSequential, reg.WithParentContainers())
		if err == nil {
			if now := l.c.Session(); now != sess {
				// The create went out in a later session than the one it
				// was made in (a client sends the requests queued while
				// disconnected on its next connection, a new session's
				// too): the node may be that session's, which outlives
				// everything this Acquire knows of. Left there it would
				// hold the latch for every participant until that session
				// ends.
				l.deleteNode(ctx, p)
				return "", nil, fmt.Errorf("latch %s: create node: the session changed during the create (%v, now %v): %w",
					l.path, sess, now, reg.ErrSessionLost)
			}
			return p, sess, nil
		}
		if !errors.Is(err, reg.ErrConnectionLoss) || try >= 3 {
			if ctx.Err() != nil || errors.Is(err, reg.ErrConnectionLoss) || errors.Is(err, reg.ErrSessionLost) {
				// The create may still be applied after we gave up on
				// it, in this session or, queued while disconnected, in
				// the next one.
				l.reapAbandoned(ctx, prefix)
			}
			return "", nil, fmt.Errorf("latch %s: create node: %w", l.path, err)
		}
		// Curator's protection: the create may have succeeded; look for our UUID.
		names, lerr := l.c.Children(ctx, l.path)
		if lerr == nil {
			for _, n := range names {
				if strings.HasPrefix(n, prefix) {
					return reg.Join(l.path, n), sess, nil
				}
			}
		}
	}
}

// Reaping an abandoned create (reapAbandoned): the first look comes
// after reapGrace (the abandoned request is queued by then: a client
// queues a request when it is made, and sends its queue in order), and
// failed looks are retried every reapGrace until one listing succeeds,
// for at most reapFor.
const (
	reapGrace = time.Second
	reapFor   = time.Minute
)

// reapAbandoned removes, in the background, the node that a create of
// prefix this latch gave up on may still make: a request a client queued
// while disconnected goes out on its next connection, in a new session if
// the old one expired, so the node can appear after the create returned
// an error, in a session that lives on and that nothing here would end.
// A listing that succeeds after the grace sees it (the requests go out in
// order); the reaper stops once it has deleted the node, or after two
// listings without it a grace apart (one listing could run in the same
// instant as the abandoned request's goroutine when the process resumes
// from a stop), or when the client is closed.
func (l *Latch) reapAbandoned(ctx context.Context, prefix string) {
	ctx = context.WithoutCancel(ctx)
	go func() {
		deadline := time.Now().Add(reapFor)
		for clean := 0; clean < 2 && time.Now().Before(deadline); {
			time.Sleep(reapGrace)
			found, err := l.deleteProtected(ctx, prefix)
			switch {
			case found && err == nil, errors.Is(err, reg.ErrClosed):
				return
			case err == nil, errors.Is(err, reg.ErrNoNode):
				clean++
			}
		}
	}()
}

// deleteProtected removes any node of ours (by its protected prefix) left
// by an abandoned create, with a short context detached from cancellation.
// It reports whether it found one, and the listing's error or the first
// failed delete's.
func (l *Latch) deleteProtected(ctx context.Context, prefix string) (found bool, err error) {
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	names, err := l.c.Children(cctx, l.path)
	if err != nil {
		return false, err
	}
	for _, n := range names {
		if strings.HasPrefix(n, prefix) {
			found = true
			if err := l.c.Delete(cctx, reg.Join(l.path, n), reg.AnyVersion); err != nil && !errors.Is(err, reg.ErrNoNode) {
				return found, err
			}
		}
	}
	return found, nil
}

// deleteNode deletes node, ours, with a short context detached from
// cancellation; it falls back to reaping its prefix when the delete fails.
func (l *Latch) deleteNode(ctx context.Context, node string) {
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	if err := l.c.Delete(cctx, node, reg.AnyVersion); err != nil && !errors.Is(err, reg.ErrNoNode) {
		name := reg.Base(node)
		if i := strings.LastIndex(name, lockName); i > 0 {
			l.reapAbandoned(ctx, name[:i])
		}
	}
}

// await is Curator's checkLeadership loop for our node.
func (l *Latch) await(ctx context.Context, node string, sess *reg.Session, released <-chan struct{}) error {
	ours := reg.Base(node)
	for {
		if err := sess.Err(); err != nil {
			return fmt.Errorf("latch %s: %w", l.path, err)
		}
		names, err := l.c.Children(ctx, l.path)
		if err != nil {
			return fmt.Errorf("latch %s: list: %w", l.path, err)
		}
		SortLatchNodes(names)
		idx := -1
		for i, n := range names {
			if n == ours {
				idx = i
				break
			}
		}
		if idx < 0 {
			l.mu.Lock()
			released := l.node != node
			l.mu.Unlock()
			if released {
				return fmt.Errorf("latch %s: released while acquiring: %w", l.path, ErrNotLeader)
			}
			// Our node is gone: its session ended, or someone deleted it.
			return fmt.Errorf("latch %s: node %s vanished: %w", l.path, ours, reg.ErrSessionLost)
		}
		if idx == 0 {
			// Curator's check is this listing alone. Our node in it is ours
			// while the session that created it lives and is still the
			// client's: a session's ephemerals go with it, and nobody else
			// creates a node of our protected name. (A read of the node's
			// owner here told nothing more, for a request.)
			if err := sess.Err(); err != nil || l.c.Session() != sess {
				return fmt.Errorf("latch %s: node %s not owned by %v: %w", l.path, ours, sess, reg.ErrSessionLost)
			}
			return nil
		}
		prev := reg.Join(l.path, names[idx-1])
		_, _, ch, err := l.c.GetW(ctx, prev)
		if errors.Is(err, reg.ErrNoNode) {
			continue // predecessor already gone: re-check
		}
		if err != nil {
			return fmt.Errorf("latch %s: watch %s: %w", l.path, prev, err)
		}
		select {
		case <-ch:
		case <-sess.Done():
		case <-released:
			return fmt.Errorf("latch %s: released while acquiring: %w", l.path, ErrNotLeader)
		case <-ctx.Done():
			return fmt.Errorf("latch %s: %w", l.path, ctx.Err())
		}
	}
}

// cleanup deletes our node after a failed or cancelled Acquire, with a short
// context detached from the caller's cancellation.
func (l *Latch) cleanup(ctx context.Context, node string, sess *reg.Session) {
	if node == "" || sess == nil || sess.Err() != nil {
		return
	}
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	_ = l.c.Delete(cctx, node, reg.AnyVersion)
}

// Release gives the latch up (or abandons a pending acquisition): it deletes
// the participant node. Releasing a latch not held is a no-op.
func (l *Latch) Release(ctx context.Context) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.released != nil {
		close(l.released)
		l.released = nil
	}
	if l.node == "" {
		return nil
	}
	node, sess := l.node, l.sess
	l.node, l.sess, l.owner = "", nil, false
	if sess.Err() != nil {
		return nil // the session took the node with it
	}
	if err := l.c.Delete(ctx, node, reg.AnyVersion); err != nil && !errors.Is(err, reg.ErrNoNode) {
		return fmt.Errorf("latch %s: release: %w", l.path, err)
	}
	return nil
}

// forget drops node, our participant node, which the caller deleted (in
// a transaction with its own writes): the latch is released, as by
// Release, without a request.
func (l *Latch) forget(node string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.released != nil {
		close(l.released)
		l.released = nil
	}
	if l.node == node {
		l.node, l.sess, l.owner = "", nil, false
	}
}

// IsOwner reports whether this participant holds the latch in a live
// session. It is a local view; use Fence to make a write depend on it.
func (l *Latch) IsOwner() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.owner && l.sess != nil && l.sess.Err() == nil
}

// NodePath returns our participant node's path ("" if none).
func (l *Latch) NodePath() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.node
}

// Fence returns a fence on our latch node: writes through FencedMulti then
// succeed only while we still hold it. ErrNotLeader if we do not own it.
func (l *Latch) Fence(ctx context.Context) (Fence, error) {
	l.mu.Lock()
	node, sess, owner := l.node, l.sess, l.owner
	l.mu.Unlock()
	if !owner || sess == nil || sess.Err() != nil {
		return Fence{}, fmt.Errorf("latch %s: %w", l.path, ErrNotLeader)
	}
	return NewFence(ctx, l.c, node)
}

// SortLatchNodes sorts participant node names as Curator does: by the text
// after the last "latch-" (the whole name when absent).
func SortLatchNodes(names []string) {
	sort.SliceStable(names, func(i, j int) bool { return latchSortKey(names[i]) < latchSortKey(names[j]) })
}

func latchSortKey(name string) string {
	if i := strings.LastIndex(name, lockName); i >= 0 {
		return name[i+len(lockName):]
	}
	return name
}

// newUUID returns a random (version 4) UUID in Java's lower-case dashed form.
func newUUID() (string, error) {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("uuid: %w", err)
	}
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16]), nil
}

// ExecuteInLeader is upstream's executeInLeader: a one-shot latch at
// latchPath (participant id "") used as a mutex: acquire, run fn, release.
func ExecuteInLeader(ctx context.Context, c reg.Client, latchPath string, fn func(ctx context.Context) error) error {
	return executeInLeader(ctx, c, latchPath, func(ctx context.Context, _ *Latch) error { return fn(ctx) })
}

// executeInLeader is ExecuteInLeader with the latch passed to fn.
func executeInLeader(ctx context.Context, c reg.Client, latchPath string, fn func(ctx context.Context, l *Latch) error) error {
	l := NewLatch(c, latchPath, "")
	if err := l.Acquire(ctx); err != nil {
		return err
	}
	l.mu.Lock()
	sess := l.sess
	l.mu.Unlock()
	sctx, cancel := sess.Context(ctx)
	defer cancel()
	ferr := fn(sctx, l)
	rctx, rcancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer rcancel()
	return errors.Join(ferr, l.Release(rctx))
}

// Elect is ElasticJob's electLeader, generically: under the latch at
// latchPath, create the ephemeral leaderPath with data unless it exists.
// It reports whether this client's session now owns leaderPath.
func Elect(ctx context.Context, c reg.Client, latchPath, leaderPath string, data []byte) (bool, error) {
	return elect(ctx, c, latchPath, leaderPath, data, false)
}

// ElectVacant is Elect for a leader node that is likely absent (a cache
// shows none): once the latch is ours, the leader node's create and the
// release of the latch go in one transaction, instead of a check of the
// leader node, its create and the release (three requests). The other
// participants see the latch free only once the leader node exists, as
// after Elect's steps, and the tree is the same. If the transaction fails
// (the leader node exists after all, or its outcome is unknown), Elect's
// steps run: under the latch, unless a transaction of unknown outcome
// committed and released it, in which case they find this session's own
// leader node.
func ElectVacant(ctx context.Context, c reg.Client, latchPath, leaderPath string, data []byte) (bool, error) {
	return elect(ctx, c, latchPath, leaderPath, data, true)
}

func elect(ctx context.Context, c reg.Client, latchPath, leaderPath string, data []byte, vacant bool) (bool, error) {
	var leader bool
	err := executeInLeader(ctx, c, latchPath, func(ctx context.Context, l *Latch) error {
		if vacant {
			node := l.NodePath()
			_, err := c.Multi(ctx, reg.CreateOp(leaderPath, data, reg.Ephemeral), reg.DeleteOp(node, reg.AnyVersion))
			if err == nil {
				l.forget(node)
				leader = true
				return nil
			}
			if ctx.Err() != nil {
				return err
			}
		}
		st, ok, err := c.Exists(ctx, leaderPath)
		if err != nil {
			return err
		}
		if !ok {
			_, err = c.Create(ctx, leaderPath, data, reg.Ephemeral, reg.WithParents())
			if err != nil && !errors.Is(err, reg.ErrNodeExists) {
				return err
			}
			if err == nil {
				leader = true
				return nil
			}
			st, ok, err = c.Exists(ctx, leaderPath)
			if err != nil || !ok {
				return err
			}
		}
		leader = st.EphemeralOwner == c.Session().ID()
		return nil
	})
	return leader, err
}
