//go:build !linux

package pagetrim

// ReleaseExecutable returns ErrUnsupported: only Linux is supported.
func ReleaseExecutable() (Released, error) { return Released{}, ErrUnsupported }

// ResidentKiB is 0: only Linux is supported.
func ResidentKiB() int64 { return 0 }
