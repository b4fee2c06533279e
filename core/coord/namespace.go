package coord

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/hashicorp/go-hclog"

	"github.com/ejob-io/ejob/core/config"
	"github.com/ejob-io/ejob/core/node"
	"github.com/ejob-io/ejob/core/reg"
)

// ErrNamespaceStopped: the Namespace a job follows its tree and the
// connection through has stopped (its Run returned) while the job ran.
var ErrNamespaceStopped = errors.New("coord: namespace stopped")

// Namespace is the machinery the jobs of one registry client share (issue
// 16: an idle job is data, not goroutines): one cache of their subtrees
// (reg.SharedCache: one recursive watch and one goroutine where the
// registry supports it) and one subscription to the client's connection
// state, fanned out to every job. Run it for as long as jobs use it (a
// Scheduler runs one for all its jobs); a Job given none makes its own.
type Namespace struct {
	c     reg.Client
	log   hclog.Logger
	cache *reg.SharedCache
	// reads coalesces the jobs' fresh startup reads (setUpConfig, and
	// afterRegistration's): a host starting many jobs at once reads them
	// in a few MultiReads.
	reads *reg.BatchReader
	// writes coalesces the registration transactions of the jobs (a new
	// job's, registerNew; a restarted one's server and instance nodes,
	// registerNodes) into a few Multis.
	writes *reg.BatchWriter
	// pumps runs the jobs' failover and misfire pump ticks and their
	// reconcile ticks.
	pumps pumpClock
	// marshal writes the configs of the jobs new to the registry, each
	// key and value they share once (most of a config's: jobs differ
	// mostly by name).
	marshal config.Marshaller
	// ends finishes the jobs when the ctx of their Start ends.
	ends ctxEnds
	// values are the node values the jobs write alike, one slice each.
	values sharedValues

	mu      sync.Mutex
	last    reg.ConnEvent // the current state, as WatchConnection's first event (State 0: none yet)
	subs    map[nsSubscriber]struct{}
	started bool
	ended   bool
	endErr  error
}

// sharedValues hands out the node values that the jobs of a namespace
// write alike (the instance node's, the leader node's, the server node's,
// the root's class name), one slice for every job: an embedded registry's
// node keeps the slice it was written with (reg.Writer: data written is
// not modified afterwards, and nothing modifies these), and 10,000 jobs
// kept 10,000 copies of a few values.
type sharedValues struct {
	mu sync.Mutex
	m  map[string][]byte
	// inst is the last instance value (instance), by id and IP.
	inst atomic.Pointer[instanceValue]
}

type instanceValue struct {
	id, ip string
	v      []byte
}

// of returns v's bytes, the same slice for every call with v.
func (sv *sharedValues) of(v string) []byte {
	sv.mu.Lock()
	defer sv.mu.Unlock()
	b, ok := sv.m[v]
	if !ok {
		if sv.m == nil {
			sv.m = map[string][]byte{}
		}
		b = []byte(v)
		sv.m[v] = b
	}
	return b
}

// instance returns node.InstanceValue(id, ip), the same slice while id and
// ip are those of the last call (a namespace's jobs share an instance).
func (sv *sharedValues) instance(id, ip string) []byte {
	if iv := sv.inst.Load(); iv != nil && iv.id == id && iv.ip == ip {
		return iv.v
	}
	iv := &instanceValue{id: id, ip: ip, v: node.InstanceValue(id, ip)}
	sv.inst.Store(iv)
	return iv.v
}

// nsSubscriber is one job's subscription (its lifecycle): nsConn gets every
// connection event, nsEnd the namespace's end. Both are called with
// Namespace.mu held and must only post (never block, never call the
// Namespace). An interface rather than two funcs: a job's subscription
// costs no closures.
type nsSubscriber interface {
	nsConn(reg.ConnEvent)
	nsEnd(error)
}

// NewNamespace returns the shared machinery of the jobs on c; Run runs it.
func NewNamespace(c reg.Client, log hclog.Logger) *Namespace {
	if log == nil {
		log = hclog.NewNullLogger()
	}
	return &Namespace{
		c: c, log: log,
		cache:  reg.NewSharedCache(c, reg.WithSharedLogger(log)),
		reads:  reg.NewBatchReader(c),
		writes: reg.NewBatchWriter(c),
		subs:   map[nsSubscriber]struct{}{},
	}
}

// Run follows the client's connection state and the jobs' subtrees until
// ctx ends (it returns nil then) or the client closes (an error wrapping
// reg.ErrClosed). Jobs still subscribed then are told (ErrNamespaceStopped).
// It returns once its goroutines have exited. It may run once.
func (n *Namespace) Run(ctx context.Context) error {
	n.mu.Lock()
	if n.started {
		n.mu.Unlock()
		return errors.New("coord: Namespace.Run called twice")
	}
	n.started = true
	n.mu.Unlock()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	conn := n.c.WatchConnection(ctx)
	cacheDone := make(chan error, 1)
	go func() { cacheDone <- n.cache.Run(ctx) }()
	var err error
loop:
	for {
		select {
		case ce, ok := <-conn:
			if !ok {
				if ctx.Err() == nil {
					err = fmt.Errorf("coord: connection watch ended: %w", reg.ErrClosed)
				}
				break loop
			}
			n.mu.Lock()
			n.last = ce
			if ce.State == reg.StateReconnected || ce.State == reg.StateNewSession {
				// What a new subscription would hear first.
				n.last.State = reg.StateConnected
			}
			for s := range n.subs {
				s.nsConn(ce)
			}
			n.mu.Unlock()
		case err = <-cacheDone:
			cacheDone = nil
			break loop
		}
	}
	cancel()
	if cacheDone != nil {
		<-cacheDone
	}
	if ctx.Err() != nil && errors.Is(err, context.Canceled) {
		err = nil
	}
	n.mu.Lock()
	n.ended, n.endErr = true, err
	why := err
	if why == nil {
		why = ErrNamespaceStopped
	} else {
		why = fmt.Errorf("%w: %w", ErrNamespaceStopped, err)
	}
	for s := range n.subs {
		s.nsEnd(why)
	}
	n.subs = nil
	n.mu.Unlock()
	return err
}

// subscribe adds a job: its nsConn gets the current state at once (as a
// new WatchConnection subscription would: Connected, Suspended or Lost,
// once the namespace has heard from the client) and every later event, in
// order; its nsEnd is called once if the namespace stops first.
// unsubscribe removes it.
func (n *Namespace) subscribe(s nsSubscriber) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.ended {
		why := ErrNamespaceStopped
		if n.endErr != nil {
			why = fmt.Errorf("%w: %w", ErrNamespaceStopped, n.endErr)
		}
		s.nsEnd(why)
		return
	}
	if n.last.State != 0 {
		s.nsConn(n.last)
	}
	n.subs[s] = struct{}{}
}

// unsubscribe removes s: neither of its methods is called after it
// returns.
func (n *Namespace) unsubscribe(s nsSubscriber) {
	n.mu.Lock()
	defer n.mu.Unlock()
	delete(n.subs, s)
}

// track mirrors the job subtree at root in the shared cache (see
// reg.SharedCache.Track).
func (n *Namespace) track(root string, fn func(reg.TreeEvent), opts ...reg.TreeCacheOption) *reg.CacheView {
	return n.cache.Track(root, fn, opts...)
}
