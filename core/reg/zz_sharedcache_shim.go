package reg

// TEMPORARY (branch actor): the API of nscache's SharedCache with a
// TreeCache per Track, until nscache commits it. Removed when merged.

import (
	"context"
	"sync"

	"github.com/hashicorp/go-hclog"
)

type TreeView interface {
	Get(path string) ([]byte, Stat, bool)
	Children(path string) ([]string, bool)
}

type SharedCache struct {
	c       Client
	log     hclog.Logger
	mu      sync.Mutex
	runCtx  context.Context
	pending []*CacheView
}

type SharedCacheOption func(*SharedCache)

func WithSharedLogger(l hclog.Logger) SharedCacheOption { return func(s *SharedCache) { s.log = l } }

func NewSharedCache(c Client, opts ...SharedCacheOption) *SharedCache {
	s := &SharedCache{c: c, log: hclog.NewNullLogger()}
	for _, o := range opts {
		o(s)
	}
	return s
}

type CacheView struct {
	tc     *TreeCache
	fn     func(TreeEvent)
	mu     sync.Mutex
	closed bool
	cancel context.CancelFunc
	done   chan struct{}
}

func (s *SharedCache) Track(root string, fn func(TreeEvent), opts ...TreeCacheOption) *CacheView {
	v := &CacheView{tc: NewTreeCache(s.c, root, opts...), fn: fn}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.runCtx == nil {
		s.pending = append(s.pending, v)
	} else {
		v.start(s.runCtx)
	}
	return v
}

func (v *CacheView) start(ctx context.Context) {
	ctx, v.cancel = context.WithCancel(ctx)
	v.done = make(chan struct{})
	go func() { _ = v.tc.Run(ctx) }()
	go func() {
		defer close(v.done)
		for ev := range v.tc.Events() {
			v.mu.Lock()
			if !v.closed {
				v.fn(ev)
			}
			v.mu.Unlock()
		}
	}()
}

func (s *SharedCache) Run(ctx context.Context) error {
	s.mu.Lock()
	s.runCtx = ctx
	for _, v := range s.pending {
		v.start(ctx)
	}
	s.pending = nil
	s.mu.Unlock()
	<-ctx.Done()
	return nil
}

func (v *CacheView) Get(path string) ([]byte, Stat, bool)  { return v.tc.Get(path) }
func (v *CacheView) Children(path string) ([]string, bool) { return v.tc.Children(path) }
func (v *CacheView) Initialized() <-chan struct{}          { return v.tc.Initialized() }
func (v *CacheView) Close() {
	v.mu.Lock()
	v.closed = true
	v.mu.Unlock()
	if v.cancel != nil {
		v.cancel()
	}
}
