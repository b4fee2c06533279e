package coord

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/ejob-io/ejob/core/executor"
	"github.com/ejob-io/ejob/core/node"
	"github.com/ejob-io/ejob/core/reg"
	"github.com/ejob-io/ejob/core/reg/recipe"
)

// guaranteeRecheck is the fallback period at which a waiting instance
// re-reads the guarantee nodes (a watch ends without an event on session
// loss). The root's deletion event, or the watch on the instance's own
// registration, normally wakes it at once.
const guaranteeRecheck = time.Second

// TimeoutError is the failure of a distribute-once wait that ran past its
// timeout (upstream's JobSystemException "Job timeout. timeout mills is
// %s."). The waiting instance removed the guarantee root before returning
// it.
type TimeoutError struct {
	Timeout time.Duration
}

func (e *TimeoutError) Error() string {
	return fmt.Sprintf("Job timeout. timeout mills is %d.", e.Timeout.Milliseconds())
}

// guaranteePhase is "started" (before-listeners) or "completed"
// (after-listeners).
type guaranteePhase struct {
	root, latch string
	// all reports whether children registrations complete a round:
	// == total for started, >= total for completed (as upstream).
	all func(children, total int) bool
}

var (
	phaseStarted = guaranteePhase{root: node.GuaranteeStartedNode, latch: node.GuaranteeStartedLatchNode,
		all: func(n, total int) bool { return n == total }}
	phaseCompleted = guaranteePhase{root: node.GuaranteeCompletedNode, latch: node.GuaranteeCompletedLatchNode,
		all: func(n, total int) bool { return n >= total }}
)

// guaranteeWaiters wakes the instances waiting for a guarantee root to be
// deleted. The job's queue closes the channel of a root when it sees
// the root deleted (upstream's GuaranteeListenerManager).
type guaranteeWaiters struct {
	mu sync.Mutex
	ch map[string]chan struct{}
}

// wait returns a channel closed at the next deletion of root.
func (g *guaranteeWaiters) wait(root string) <-chan struct{} {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.ch == nil {
		g.ch = map[string]chan struct{}{}
	}
	c, ok := g.ch[root]
	if !ok {
		c = make(chan struct{})
		g.ch[root] = c
	}
	return c
}

// deleted wakes the waiters of root.
func (g *guaranteeWaiters) deleted(root string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if c, ok := g.ch[root]; ok {
		close(c)
		delete(g.ch, root)
	}
}

// guarantees is the job's distribute-once protocol on this instance
// (upstream's GuaranteeService with its listener): the registrations under
// guarantee/started and guarantee/completed, the latch the last instance
// runs its hook under, and the local waiters of a round. Its only state is
// the waiters.
type guarantees struct {
	*jobBase
	// waiters are woken by the job's queue (onEvent).
	waiters guaranteeWaiters
}

// onEvent is GuaranteeListenerManager: a deleted started or
// completed root wakes the local waiters.
func (g *guarantees) onEvent(rel string, ev reg.TreeEvent) {
	if ev.Type == reg.NodeDeleted && (rel == node.GuaranteeStartedNode || rel == node.GuaranteeCompletedNode) {
		g.waiters.deleted(rel)
	}
}

var _ executor.DistributeOnce = (*Job)(nil)

// AtLastStarted is the before half of upstream's
// AbstractDistributeOnceElasticJobListener (and its GuaranteeService): it
// registers guarantee/started/{item} for each of sc's items; the instance
// that completes the set (shardingTotalCount children, config read from the
// registry) runs hook inside the latch guarantee/started-latch, re-checking
// first, then deletes guarantee/started. The others wait until that
// deletion (woken by the tree cache's event) or timeout (<= 0: no
// timeout); on timeout they delete guarantee/started and return a
// *TimeoutError. With no items it returns nil at once.
//
// Unlike upstream, no wake-up is lost between the check and the wait: a
// waiter watches its own registration (read and watch are atomic) besides
// the tree cache's deletion event, and re-reads that registration after
// each wake-up, so a stale wake-up does not end its wait early.
func (j *Job) AtLastStarted(ctx context.Context, sc executor.ShardingContexts, timeout time.Duration, hook func(context.Context) error) error {
	return j.guar.distributeOnce(ctx, phaseStarted, sc.Items, timeout, hook)
}

// AtLastCompleted is AtLastStarted for the after-listeners, with
// guarantee/completed and guarantee/completed-latch; a round is complete
// with at least shardingTotalCount children.
func (j *Job) AtLastCompleted(ctx context.Context, sc executor.ShardingContexts, timeout time.Duration, hook func(context.Context) error) error {
	return j.guar.distributeOnce(ctx, phaseCompleted, sc.Items, timeout, hook)
}

func (g *guarantees) distributeOnce(ctx context.Context, ph guaranteePhase, items []int, timeout time.Duration, hook func(context.Context) error) error {
	if len(items) == 0 {
		return nil
	}
	wake := g.waiters.wait(ph.root)
	if err := g.registerGuarantee(ctx, ph, items); err != nil {
		return err
	}
	var expired <-chan time.Time
	if timeout > 0 {
		t := time.NewTimer(timeout)
		defer t.Stop()
		expired = t.C
	}
	recheck := time.NewTicker(guaranteeRecheck)
	defer recheck.Stop()
	own := g.s.p.Full(ph.root + "/" + strconv.Itoa(items[0]))
	for {
		// Done when our registration is gone: the last instance (or one
		// that timed out) removed the root. The watch on our own node
		// catches a root created and removed before the tree cache saw it.
		_, mine, gone, err := g.s.c.ExistsW(ctx, own)
		if err != nil {
			return wrap("check "+own, err)
		}
		if !mine {
			return nil
		}
		all, err := g.isAllGuaranteed(ctx, ph)
		if err != nil {
			return err
		}
		if all {
			return g.executeInLeader(ctx, ph, hook)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-expired:
			if err := reg.DeleteRecursive(context.WithoutCancel(ctx), g.s.c, g.s.p.Full(ph.root)); err != nil {
				g.log.Warn("clear guarantee root after timeout failed", "path", ph.root, "error", err)
			}
			return &TimeoutError{Timeout: timeout}
		case <-wake:
			wake = g.waiters.wait(ph.root)
		case <-gone:
		case <-recheck.C:
		}
	}
}

// registerGuarantee is registerStart/registerComplete: create
// {root}/{item} for each item.
func (g *guarantees) registerGuarantee(ctx context.Context, ph guaranteePhase, items []int) error {
	for _, i := range items {
		if err := g.s.createIfNeeded(ctx, g.s.p.Full(ph.root+"/"+strconv.Itoa(i))); err != nil {
			return wrap("register "+ph.root, err)
		}
	}
	return nil
}

// isRegistered is isRegisterStartSuccess/isRegisterCompleteSuccess.
func (g *guarantees) isRegistered(ctx context.Context, ph guaranteePhase, items []int) (bool, error) {
	for _, i := range items {
		ok, err := g.s.exists(ctx, g.s.p.Full(ph.root+"/"+strconv.Itoa(i)))
		if err != nil || !ok {
			return false, err
		}
	}
	return true, nil
}

// isAllGuaranteed is isAllStarted/isAllCompleted: the root exists and its
// child count completes the round for the config's shardingTotalCount
// (read from the registry directly, as upstream).
func (g *guarantees) isAllGuaranteed(ctx context.Context, ph guaranteePhase) (bool, error) {
	ok, err := g.s.exists(ctx, g.s.p.Full(ph.root))
	if err != nil || !ok {
		return false, err
	}
	names, err := g.s.children(ctx, g.s.p.Full(ph.root))
	if err != nil {
		return false, err
	}
	cfg, err := g.job.conf.load(ctx)
	if err != nil {
		return false, err
	}
	return ph.all(len(names), cfg.ShardingTotalCount), nil
}

// executeInLeader is executeInLeaderForLastStarted/Completed: under the
// Curator latch, re-check and run hook; always delete the root afterwards.
func (g *guarantees) executeInLeader(ctx context.Context, ph guaranteePhase, hook func(context.Context) error) (err error) {
	latch := recipe.NewLatch(g.s.c, g.s.p.Full(ph.latch), "")
	if err := latch.Acquire(ctx); err != nil {
		return wrap("acquire "+ph.latch, err)
	}
	defer func() {
		// Cleanup runs even when ctx ended, bounded on its own.
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), g.poll*50)
		defer cancel()
		if derr := reg.DeleteRecursive(cctx, g.s.c, g.s.p.Full(ph.root)); derr != nil && !errors.Is(derr, reg.ErrNoNode) {
			err = errors.Join(err, wrap("clear "+ph.root, derr))
		}
		if rerr := latch.Release(cctx); rerr != nil {
			g.log.Warn("release guarantee latch failed", "path", ph.latch, "error", rerr)
		}
	}()
	all, err := g.isAllGuaranteed(ctx, ph)
	if err != nil || !all {
		return err
	}
	return hook(ctx)
}

// clearGuarantee is clearAllStartedInfo/clearAllCompletedInfo.
func (g *guarantees) clearGuarantee(ctx context.Context, ph guaranteePhase) error {
	return reg.DeleteRecursive(ctx, g.s.c, g.s.p.Full(ph.root))
}
