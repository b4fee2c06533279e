package spi

import "context"

// PoolSizeRequest asks how many items of a job may run at once.
type PoolSizeRequest struct {
	JobName string
	// AvailableCPUs is the number of CPUs the host process may use.
	AvailableCPUs int
}

// PoolSizeResponse carries the pool size, >= 1.
type PoolSizeResponse struct {
	Size int
}

// ThreadPoolSizeProvider sizes the pool that runs a job's items.
//
// Caller: the kernel, when a job is built and when its configured type
// changes. Concurrency: may be called from several goroutines at once.
//
// Contract: Size >= 1; anything else is treated by callers as an invalid
// answer.
type ThreadPoolSizeProvider interface {
	PoolSize(ctx context.Context, req PoolSizeRequest) (PoolSizeResponse, error)
}
