package trigger

import (
	"os"
	"time"

	"golang.org/x/sys/unix"
)

// newAlarm returns an alarm on a timerfd of CLOCK_REALTIME, or nil when
// there is none.
func newAlarm() *alarm {
	fd, err := unix.TimerfdCreate(unix.CLOCK_REALTIME, unix.TFD_NONBLOCK|unix.TFD_CLOEXEC)
	if err != nil {
		return nil
	}
	f := os.NewFile(uintptr(fd), "trigger-alarm")
	// A file the poller does not watch has no deadline, and its Read
	// would return at once: only a watched timerfd will do.
	if f.SetReadDeadline(time.Time{}) != nil {
		_ = f.Close()
		return nil
	}
	return newAlarmOn(timerFD{f: f, fd: fd})
}

// timerFD is a timerfd as the alarm's timer.
type timerFD struct {
	f  *os.File
	fd int
}

func (t timerFD) arm(at int64) error {
	spec := unix.ItimerSpec{Value: unix.NsecToTimespec(max(at, 1))}
	return unix.TimerfdSettime(t.fd, unix.TFD_TIMER_ABSTIME, &spec, nil)
}

func (t timerFD) wait() error {
	var expirations [8]byte
	_, err := t.f.Read(expirations[:])
	return err
}

func (t timerFD) close() { _ = t.f.Close() }
