package coord

import (
	"testing"
	"time"

	"github.com/ejob-io/ejob/core/reg"
)

func TestLeaseDeadline(t *testing.T) {
	j := &Job{}
	if dl := j.LeaseDeadline(); !dl.IsZero() {
		t.Errorf("no lease: deadline %v, want zero", dl)
	}
	sess := reg.NewSession(1)
	j.rg.mu.Lock()
	j.rg.lease = newLease(sess)
	j.rg.mu.Unlock()
	if dl := j.LeaseDeadline(); !dl.IsZero() {
		t.Errorf("unknown session timeout: deadline %v, want zero", dl)
	}
	const timeout = 3 * time.Second
	sess.SetTimeout(timeout)
	heard := time.Now()
	sess.Touch(heard)
	// Default margin: a third of the timeout.
	if got, want := j.LeaseDeadline(), heard.Add(timeout-timeout/3); !got.Equal(want) {
		t.Errorf("deadline = %v, want lastHeard + T − T/3 = %v", got, want)
	}
	j.rg.margin = 500 * time.Millisecond
	if got, want := j.LeaseDeadline(), heard.Add(timeout-j.rg.margin); !got.Equal(want) {
		t.Errorf("deadline = %v, want lastHeard + T − margin = %v", got, want)
	}
	// It moves as the client keeps hearing from the server.
	old := j.ExecutionLease()
	heard = heard.Add(time.Second)
	sess.Touch(heard)
	if got, want := old(), heard.Add(timeout-j.rg.margin); !got.Equal(want) {
		t.Errorf("after Touch: deadline = %v, want %v", got, want)
	}
	// An execution's lease stays bound to its session after the lease is
	// replaced by a new session's.
	next := reg.NewSession(2)
	next.SetTimeout(time.Hour)
	j.rg.registered(next)
	if got, want := old(), heard.Add(timeout-j.rg.margin); !got.Equal(want) {
		t.Errorf("old execution's deadline = %v, want its own session's %v", got, want)
	}
	if got := j.LeaseDeadline(); got.Sub(next.LastHeard()) != time.Hour-j.rg.margin {
		t.Errorf("new lease deadline = %v, want the new session's", got)
	}
}
