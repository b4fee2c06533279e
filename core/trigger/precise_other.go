//go:build !linux

package trigger

import (
	"context"
	"time"
)

// awaitPrecise is Linux's only: elsewhere PreciseClock waits as RealClock.
func awaitPrecise(context.Context, time.Duration, <-chan struct{}) bool { return false }
