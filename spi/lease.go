package spi

import (
	"context"
	"errors"
	"time"
)

// ErrLeaseExpired is the cause of a job type's ctx cancelled because its
// execution lease ran out: the host stopped renewing it (it is paused,
// frozen or gone), so the item must stop before another instance may take
// it over.
var ErrLeaseExpired = errors.New("execution lease expired: the host stopped renewing it")

// Lease bounds an execution by the registry session it runs under. The
// kernel attaches one to an execution's ctx (WithLease); a transport that
// runs the execution in another process reads it (LeaseFrom), hands its
// deadline to that process and keeps renewing it while the host is alive,
// so that the execution stops at the deadline even when the host process
// is paused and cannot cancel it.
type Lease interface {
	// Deadline returns the time by which the execution must stop unless
	// the lease is renewed (it moves later while the host keeps hearing
	// from the registry); the zero Time means no bound is known. Called
	// from any goroutine, periodically; must be cheap.
	Deadline() time.Time
}

// LeaseFunc adapts a func to Lease.
type LeaseFunc func() time.Time

// Deadline calls f.
func (f LeaseFunc) Deadline() time.Time { return f() }

type leaseKey struct{}

// WithLease returns a copy of ctx carrying l.
func WithLease(ctx context.Context, l Lease) context.Context {
	return context.WithValue(ctx, leaseKey{}, l)
}

// LeaseFrom returns the Lease ctx carries, if any.
func LeaseFrom(ctx context.Context) (Lease, bool) {
	l, ok := ctx.Value(leaseKey{}).(Lease)
	return l, ok && l != nil
}
