package transport

import (
	"context"
	"sync"
	"time"

	pb "github.com/ejob-io/ejob/internal/transport/pluginpb"
	"github.com/ejob-io/ejob/spi"
)

// Execution leases: an item never outlives its host's registry session,
// even while the host process is paused.
//
// The host cancels an execution when its registry session is lost or
// presumed expired (coord's presumed-expiry deadline: last contact + session
// timeout − margin). A host that is paused (SIGSTOP, a long GC pause, a
// frozen VM) cannot, while its plugin process and the scripts it started
// run on; after the server expires the session another instance takes the
// item over. So when the execution's ctx carries an spi.Lease, Conn's
// Execute sends the lease's deadline with the request, and the plugin
// cancels the call's ctx (cause spi.ErrLeaseExpired; a SCRIPT kills its
// process group) when it passes. While the host is alive, one goroutine per
// Conn renews the leases of all its in-flight executions in one RenewLease
// call every quarter of the shortest remaining lease (at most every
// leaseMinPeriod, at least every leaseMaxPeriod), with each lease's current
// deadline, which moves later as the host keeps hearing from the registry.
// A paused host renews nothing, so the plugin stops the item at the
// deadline the host would have stopped it at.
//
// Deadlines travel as durations from "now" and the plugin measures them on
// its monotonic clock, so clock differences between the processes do not
// matter; the plugin's deadline is later than the host's by one transit
// time (well under a millisecond here), which the presumed-expiry margin
// covers. Every plugin of this protocol version serves RenewLease (an older
// one is refused at the handshake, see ProtocolVersion); a failed renewal
// is tried again the next period, which the lease's several periods cover.

const (
	leaseMinPeriod = 5 * time.Millisecond
	leaseMaxPeriod = time.Second
)

// leaseTimer is the plugin side of one execution's lease: it cancels the
// execution when its ttl passes without a renewal.
type leaseTimer struct {
	mu      sync.Mutex
	t       *time.Timer
	expired bool
}

// leaseExpired is the cause of an execution's ctx whose lease ran out.
var leaseExpired = spi.ErrLeaseExpired

func startLease(ttl time.Duration, cancel context.CancelCauseFunc) *leaseTimer {
	lt := &leaseTimer{}
	lt.mu.Lock()
	defer lt.mu.Unlock()
	lt.t = time.AfterFunc(max(ttl, 0), func() {
		lt.mu.Lock()
		lt.expired = true
		lt.mu.Unlock()
		cancel(leaseExpired)
	})
	return lt
}

// renew moves the lease's end to ttl from now (<= 0: now). It reports
// false when the lease had already expired.
func (lt *leaseTimer) renew(ttl time.Duration) bool {
	lt.mu.Lock()
	defer lt.mu.Unlock()
	if lt.expired || !lt.t.Stop() {
		return false
	}
	lt.t.Reset(max(ttl, 0))
	return true
}

// stop releases the timer once the execution has returned.
func (lt *leaseTimer) stop() { lt.t.Stop() }

// renew renews the lease of running execution id; false when it is not
// running, has no lease, or its lease already expired.
func (e *executions) renew(id string, ttl time.Duration) bool {
	e.mu.Lock()
	x, ok := e.running[id]
	e.mu.Unlock()
	if !ok || x.lease == nil {
		return false
	}
	return x.lease.renew(ttl)
}

// leaseRenewer is the host side: it renews the leases of one Conn's
// in-flight executions while any is registered.
type leaseRenewer struct {
	c *Conn

	mu      sync.Mutex
	leases  map[string]spi.Lease
	running bool // the renewal goroutine runs
}

// ttl returns the lease's remaining time to send, and false when l knows
// no deadline.
func leaseTTL(l spi.Lease) (time.Duration, bool) {
	dl := l.Deadline()
	if dl.IsZero() {
		return 0, false
	}
	// Never send 0 ("no lease" in ExecuteRequest) for a passed deadline.
	return max(time.Until(dl), time.Nanosecond), true
}

// add registers execution id's lease for renewal and returns the ttl to
// send with its Execute (0: no lease) and a func that unregisters it.
func (r *leaseRenewer) add(id string, l spi.Lease) (ttl time.Duration, remove func()) {
	ttl, ok := leaseTTL(l)
	if !ok {
		return 0, func() {}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.leases == nil {
		r.leases = map[string]spi.Lease{}
	}
	r.leases[id] = l
	if !r.running {
		r.running = true
		go r.loop(period(ttl))
	}
	return ttl, func() {
		r.mu.Lock()
		defer r.mu.Unlock()
		delete(r.leases, id)
	}
}

// period is how long after a renewal with shortest ttl the next one goes.
func period(ttl time.Duration) time.Duration {
	return min(max(ttl/4, leaseMinPeriod), leaseMaxPeriod)
}

// loop renews the registered leases until none is left or the process
// has exited.
func (r *leaseRenewer) loop(next time.Duration) {
	timer := time.NewTimer(next)
	defer timer.Stop()
	for {
		select {
		case <-timer.C:
		case <-r.c.done:
			r.mu.Lock()
			r.running = false
			r.mu.Unlock()
			return
		}
		r.mu.Lock()
		if len(r.leases) == 0 {
			r.running = false
			r.mu.Unlock()
			return
		}
		req := &pb.RenewLeaseRequest{Renewals: make([]*pb.LeaseRenewal, 0, len(r.leases))}
		shortest := leaseMaxPeriod * 4
		for id, l := range r.leases {
			ttl, ok := leaseTTL(l)
			if !ok {
				continue
			}
			shortest = min(shortest, ttl)
			req.Renewals = append(req.Renewals, &pb.LeaseRenewal{ExecutionId: id, TtlNanos: int64(ttl)})
		}
		r.mu.Unlock()
		next = period(shortest)
		if len(req.Renewals) > 0 {
			ctx, cancel := context.WithTimeout(context.Background(), max(next, 100*time.Millisecond))
			// An error (a slow or busy plugin): try again next period; the
			// lease covers several periods.
			_, _ = r.c.client.RenewLease(ctx, req)
			cancel()
		}
		timer.Reset(next)
	}
}
