package coord

import (
	"context"
	"sync"
)

// ctxEnds ends the jobs of a Namespace when the ctx their Start was given
// ends, with one context.AfterFunc for all the jobs started under one ctx
// (a Scheduler starts every job under its own) rather than one a job: an
// AfterFunc and its entry in the ctx's children were about 200 bytes of
// an idle job. When a ctx ends, each of its jobs finishes on a goroutine
// of its own, as with an AfterFunc each.
type ctxEnds struct {
	mu sync.Mutex
	by map[context.Context]*ctxEnd
}

// ctxEnd is the jobs started under one ctx, and the stop of its AfterFunc.
type ctxEnd struct {
	ctx  context.Context
	stop func() bool
	jobs map[*lifecycle]struct{}
}

// add makes l finish (finish(true, nil)) when ctx ends, unless remove
// comes first; it returns what remove takes.
func (e *ctxEnds) add(ctx context.Context, l *lifecycle) *ctxEnd {
	e.mu.Lock()
	defer e.mu.Unlock()
	end := e.by[ctx]
	if end == nil {
		end = &ctxEnd{ctx: ctx, jobs: map[*lifecycle]struct{}{}}
		if e.by == nil {
			e.by = map[context.Context]*ctxEnd{}
		}
		e.by[ctx] = end
		end.stop = context.AfterFunc(ctx, func() { e.ended(end) })
	}
	end.jobs[l] = struct{}{}
	return end
}

// remove drops l from end: the end of its ctx no longer finishes it.
func (e *ctxEnds) remove(end *ctxEnd, l *lifecycle) {
	e.mu.Lock()
	defer e.mu.Unlock()
	delete(end.jobs, l)
	if len(end.jobs) == 0 && e.by[end.ctx] == end {
		end.stop()
		delete(e.by, end.ctx)
	}
}

// ended is end's ctx's AfterFunc: each of its jobs finishes.
func (e *ctxEnds) ended(end *ctxEnd) {
	e.mu.Lock()
	if e.by[end.ctx] == end {
		delete(e.by, end.ctx)
	}
	jobs := end.jobs
	end.jobs = map[*lifecycle]struct{}{}
	e.mu.Unlock()
	for l := range jobs {
		go l.finish(true, nil)
	}
}
