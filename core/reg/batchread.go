package reg

import "context"

// BatchReader coalesces the reads of concurrent callers into few
// MultiReads (a host starting 1,000 jobs reads each job's root and config:
// as plain reads that is 2,000 requests, as MultiReads a few).
// A call made while no batch is in flight goes out at once, alone; calls
// made while one is in flight wait for it to end and then go out together
// as the next batch (ReadMany: multiRead requests of a few hundred ops).
// Each op therefore sees the registry as a plain read made after its call
// began would. Safe for concurrent use; it holds no goroutine while idle.
type BatchReader struct {
	r Reader
	q coalescer[*batchCall]
}

type batchCall struct {
	ops  []ReadOp
	res  []ReadResult
	err  error
	done chan struct{}
}

// NewBatchReader returns a BatchReader over r.
func NewBatchReader(r Reader) *BatchReader { return &BatchReader{r: r} }

// Read runs ops as ReadMany would (one result per op, in order; an absent
// node is its op's Err) and returns when they are done or ctx ends. The
// call's error is for what fails every op of its batch (a connection or
// session loss, a closed client) or ctx's.
func (b *BatchReader) Read(ctx context.Context, ops ...ReadOp) ([]ReadResult, error) {
	for _, op := range ops {
		if err := ValidateReadOp(op); err != nil {
			return nil, err
		}
	}
	if len(ops) == 0 {
		return nil, nil
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	c := &batchCall{ops: ops, done: make(chan struct{})}
	b.q.add(c, b.send)
	select {
	case <-c.done:
		return c.res, c.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// send reads a batch of calls. It runs to its end even when its callers
// gave up (the client's own timeouts and retries bound it).
func (b *BatchReader) send(batch []*batchCall) {
	n := 0
	for _, c := range batch {
		n += len(c.ops)
	}
	ops := make([]ReadOp, 0, n)
	for _, c := range batch {
		ops = append(ops, c.ops...)
	}
	res, err := ReadMany(context.Background(), b.r, ops...)
	for _, c := range batch {
		if err != nil {
			c.err = err
		} else {
			c.res, res = res[:len(c.ops):len(c.ops)], res[len(c.ops):]
		}
		close(c.done)
	}
}
