package lifecycle

import (
	"errors"
	"fmt"
)

// Sentinel errors. Callers branch on the two categories, ErrNotFound and
// ErrInvalid (plus ErrConflict), to choose an exit code or an HTTP status;
// the specific errors wrap their category. Whenever a call returns one of
// them it has written nothing.
var (
	// ErrNotFound is wrapped by every "no such thing" error.
	ErrNotFound = errors.New("not found")
	// ErrJobNotFound: the job has no config node in the namespace.
	ErrJobNotFound = fmt.Errorf("job %w", ErrNotFound)
	// ErrServerNotFound: no servers/{ip} node for that IP (in that job,
	// or in any job).
	ErrServerNotFound = fmt.Errorf("server %w", ErrNotFound)

	// ErrInvalid is wrapped by every refusal of bad input: a configuration
	// that does not validate (a bad cron, shardingTotalCount < 1), an item
	// out of range, neither job nor server given.
	ErrInvalid = errors.New("invalid request")
	// ErrConflict: the configuration changed between the read and the
	// conditional write (UpdateConfig with IfVersion). ErrNotRunnable is
	// a conflict too: a request refused because of the job's state.
	ErrConflict = errors.New("configuration changed concurrently")
	// ErrNotRunnable: a trigger of a job that no instance would run: it
	// has no live instance, or every live instance is on a server where
	// the job is disabled. It matches ErrConflict (errors.Is) without
	// that error's message.
	ErrNotRunnable error = &refusal{msg: "job not runnable", category: ErrConflict}

	// ErrNoSuchJob is ErrJobNotFound under its former name.
	//
	// Deprecated: use ErrJobNotFound.
	ErrNoSuchJob = ErrJobNotFound
)

func invalidf(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrInvalid, fmt.Sprintf(format, args...))
}

// refusal is a sentinel error that belongs to a category (errors.Is
// matches both) but reads as its own message.
type refusal struct {
	msg      string
	category error
}

func (r *refusal) Error() string { return r.msg }
func (r *refusal) Unwrap() error { return r.category }
