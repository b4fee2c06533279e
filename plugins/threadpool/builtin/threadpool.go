package threadpoolbuiltin

import (
	"context"

	"github.com/ejob-io/ejob/spi"
)

// The type names the providers are registered under. Lookups are
// case-insensitive (spi.NormalizeType); these are the canonical spellings.
const (
	TypeCPU          = "CPU"
	TypeSingleThread = "SINGLE_THREAD"
)

// Providers returns a new instance of every provider in this package, keyed
// by its canonical type name.
func Providers() map[string]spi.ThreadPoolSizeProvider {
	return map[string]spi.ThreadPoolSizeProvider{
		TypeCPU:          NewCPU(),
		TypeSingleThread: NewSingleThread(),
	}
}

// CPU is the CPU provider, upstream's default: AvailableCPUs × 2, where an
// AvailableCPUs below 1 counts as 1. It is safe for concurrent use.
type CPU struct{}

var _ spi.ThreadPoolSizeProvider = (*CPU)(nil)

// NewCPU returns the CPU provider.
func NewCPU() *CPU { return &CPU{} }

// PoolSize implements spi.ThreadPoolSizeProvider. It returns ctx.Err() if
// ctx is already done.
func (*CPU) PoolSize(ctx context.Context, req spi.PoolSizeRequest) (spi.PoolSizeResponse, error) {
	if err := ctx.Err(); err != nil {
		return spi.PoolSizeResponse{}, err
	}
	return spi.PoolSizeResponse{Size: max(req.AvailableCPUs, 1) * 2}, nil
}

// SingleThread is the SINGLE_THREAD provider: size 1, so a job's items run
// one after another. It is safe for concurrent use.
type SingleThread struct{}

var _ spi.ThreadPoolSizeProvider = (*SingleThread)(nil)

// NewSingleThread returns the SINGLE_THREAD provider.
func NewSingleThread() *SingleThread { return &SingleThread{} }

// PoolSize implements spi.ThreadPoolSizeProvider. It returns ctx.Err() if
// ctx is already done.
func (*SingleThread) PoolSize(ctx context.Context, req spi.PoolSizeRequest) (spi.PoolSizeResponse, error) {
	if err := ctx.Err(); err != nil {
		return spi.PoolSizeResponse{}, err
	}
	return spi.PoolSizeResponse{Size: 1}, nil
}
