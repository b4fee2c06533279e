package coord

import "time"

// LeaseDeadline returns the presumed-expiry deadline of the lease
// executions currently start under: the session's last contact with the
// server plus its timeout, less the presumed-expiry margin. It moves later
// as the client keeps hearing from the server. The zero Time when there is
// no lease or the session's timeout is unknown (a registry without one).
func (j *Job) LeaseDeadline() time.Time {
	return j.ExecutionLease()()
}

// ExecutionLease returns a func reporting the presumed-expiry deadline (as
// LeaseDeadline) of the lease current now. It keeps reporting that lease's
// session's deadline after the lease is replaced, so an execution started
// under one session is never extended by the next one. Executions hand it
// to their plugin (spi.WithLease), which stops them at the deadline unless
// the host renews it.
func (j *Job) ExecutionLease() func() time.Time { return j.rg.executionLease() }
