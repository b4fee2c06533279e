package trigger

import (
	"context"
	"errors"
	"os"
	"time"

	"golang.org/x/sys/unix"
)

// awaitPrecise waits d (PreciseClock): on a timerfd of CLOCK_MONOTONIC,
// which the runtime's poller watches like a socket, so the process wakes
// when the kernel's timer fires. It returns when d has passed, ctx ended
// or abandoned was closed; false when it could not wait that way (no
// timerfd, or a read that failed), having waited at most d: the caller then
// waits the rest with a runtime timer.
func awaitPrecise(ctx context.Context, d time.Duration, abandoned <-chan struct{}) bool {
	fd, err := unix.TimerfdCreate(unix.CLOCK_MONOTONIC, unix.TFD_NONBLOCK|unix.TFD_CLOEXEC)
	if err != nil {
		return false
	}
	f := os.NewFile(uintptr(fd), "await-scheduled")
	defer func() { _ = f.Close() }()
	// A file the poller does not watch has no deadline, and its Read would
	// return at once: only a watched timerfd waits.
	if f.SetReadDeadline(time.Time{}) != nil {
		return false
	}
	spec := unix.ItimerSpec{Value: unix.NsecToTimespec(int64(d))}
	if unix.TimerfdSettime(fd, 0, &spec, nil) != nil {
		return false
	}
	stop := make(chan struct{})
	defer close(stop) // before the Close above
	go func() {
		select {
		case <-ctx.Done():
		case <-abandoned:
		case <-stop:
			return
		}
		_ = f.SetReadDeadline(time.Unix(1, 0)) // ends the Read below
	}()
	var expirations [8]byte
	_, err = f.Read(expirations[:])
	return err == nil || errors.Is(err, os.ErrDeadlineExceeded)
}
