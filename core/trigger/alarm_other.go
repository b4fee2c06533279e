//go:build !linux

package trigger

// newAlarm returns nil: PreciseClock waits as RealClock off Linux.
func newAlarm() *alarm { return nil }
