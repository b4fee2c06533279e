package reg

import (
	"context"
	"errors"
	"slices"
	"sync"
)

// BatchMaxOps bounds the ops of one batched Multi (BatchWriter): a job's
// registration is about a dozen creates of a few hundred bytes, so a
// request stays far below ZooKeeper's packet limit (jute.maxbuffer, 1 MB).
const BatchMaxOps = 1000

// BatchWriter coalesces the transactions of concurrent callers into few
// Multi requests (a host registering 1,000 new jobs makes 1,000
// transactions of a dozen creates; in a few Multis the ZooKeeper server
// spends 10-25% less CPU on them). A call made while no batch is in flight goes
// out at once, alone; calls made while one is in flight wait for it to end and
// then go out together, in Multis of at most BatchMaxOps ops. A Multi commits
// all its calls' ops or none: when one carrying several calls fails on an op,
// the call of that op fails and the others are sent again together, so that
// a call fails only for its own ops; when its outcome is unknown, each call is
// sent again alone.
//
// So a call's ops may be sent twice when the first outcome is unknown (a
// connection loss; MultiResults calls are not): use Multi only for ops that
// fail rather than apply twice
// (creates of fixed paths, sets and deletes of a given version, checks),
// or whose second application changes nothing but a version (a set of
// the same value). Safe for
// concurrent use; it holds no goroutine while idle.
type BatchWriter struct {
	w Writer
	q coalescer[*writeCall]
}

type writeCall struct {
	ops []Op
	// once: a MultiResults call, never sent again after an unknown
	// outcome, and dropped unsent once ctx has ended.
	once bool
	ctx  context.Context
	res  []OpResult // its ops' results, on success
	err  error
	done chan struct{}
}

// NewBatchWriter returns a BatchWriter over w.
func NewBatchWriter(w Writer) *BatchWriter { return &BatchWriter{w: w} }

// Multi applies ops atomically, as Writer.Multi does, and returns when
// they are committed, have failed, or ctx ends (the ops may then still be
// committed).
func (b *BatchWriter) Multi(ctx context.Context, ops ...Op) error {
	if len(ops) == 0 {
		return nil
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	c := &writeCall{ops: ops, done: make(chan struct{})}
	b.q.add(c, b.sendBatch)
	select {
	case <-c.done:
		return c.err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// MultiResults is Multi for a call that needs its ops' results and must
// not be applied twice (a trigger's running-node transaction, whose nodes
// a second application would find as another's): it returns its own ops'
// results, in order. When the batch's Multi fails on an op (a *MultiError:
// nothing was applied) the call fails if the op is its own and is sent
// again with the others otherwise, as Multi's are; when
// the outcome is unknown (the connection lost) the call gets that error
// and is not sent again. It returns only once the outcome is known or
// unknown for good, ctx or not, so that whatever the caller sends next
// (the deletion of what may have been created) goes after it; a call not
// yet sent when ctx ends is dropped, with ctx's error, and applies
// nothing.
func (b *BatchWriter) MultiResults(ctx context.Context, ops ...Op) ([]OpResult, error) {
	if len(ops) == 0 {
		return nil, nil
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	c := &writeCall{ops: ops, once: true, ctx: ctx, done: make(chan struct{})}
	b.q.add(c, b.sendBatch)
	<-c.done
	return c.res, c.err
}

// sendBatch sends a batch of calls in Multis of at most BatchMaxOps ops,
// at once. It runs to its end even when its callers gave up (the client's
// own timeouts and retries bound it).
func (b *BatchWriter) sendBatch(batch []*writeCall) {
	batch = slices.DeleteFunc(batch, func(c *writeCall) bool {
		if c.once && c.ctx.Err() != nil {
			c.err = c.ctx.Err()
			close(c.done)
			return true
		}
		return false
	})
	var wg sync.WaitGroup
	for len(batch) > 0 {
		n, ops := 1, len(batch[0].ops)
		for n < len(batch) && ops+len(batch[n].ops) <= BatchMaxOps {
			ops += len(batch[n].ops)
			n++
		}
		part := batch[:n]
		batch = batch[n:]
		wg.Add(1)
		go func() {
			defer wg.Done()
			b.send(part, ops)
		}()
	}
	wg.Wait()
}

// send commits calls in one Multi of n ops. When the Multi fails on an op
// (a *MultiError: nothing was applied), the call that op belongs to fails
// with it (its index made the call's own) and the others are sent again
// together, until they commit or each has failed: a job whose transaction
// conflicts costs the others one more round trip, not one each. When the
// outcome is unknown (the connection lost), each call is sent again alone,
// but a MultiResults call, which gets the error.
func (b *BatchWriter) send(calls []*writeCall, n int) {
	ops := make([]Op, 0, n)
	for len(calls) > 0 {
		ops = ops[:0]
		for _, c := range calls {
			ops = append(ops, c.ops...)
		}
		res, err := b.w.Multi(context.Background(), ops...)
		if err == nil || len(calls) == 1 {
			off := 0
			for _, c := range calls {
				if err == nil && len(res) >= off+len(c.ops) {
					c.res = res[off : off+len(c.ops) : off+len(c.ops)]
				}
				off += len(c.ops)
				c.err = err
				close(c.done)
			}
			return
		}
		var me *MultiError
		if !errors.As(err, &me) {
			b.sendAlone(calls, err)
			return
		}
		k, off := 0, 0
		for k < len(calls) && off+len(calls[k].ops) <= me.Index {
			off += len(calls[k].ops)
			k++
		}
		if k == len(calls) || me.Index < 0 {
			b.sendAlone(calls, nil) // the client named no op of the batch
			return
		}
		c := calls[k]
		c.err = &OpError{Op: "multi", Path: me.Op.Path, Err: &MultiError{Index: me.Index - off, Op: me.Op, Err: me.Err}}
		close(c.done)
		calls = slices.Delete(calls, k, k+1)
	}
}

// sendAlone sends each call again alone after its batch failed with err,
// but a MultiResults call when err says the outcome is unknown (non-nil).
func (b *BatchWriter) sendAlone(calls []*writeCall, err error) {
	var wg sync.WaitGroup
	for _, c := range calls {
		if c.once && err != nil {
			c.err = err
			close(c.done)
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			c.res, c.err = b.w.Multi(context.Background(), c.ops...)
			close(c.done)
		}()
	}
	wg.Wait()
}
