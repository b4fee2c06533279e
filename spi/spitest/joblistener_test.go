package spitest_test

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/ejob-io/ejob/spi"
	"github.com/ejob-io/ejob/spi/spitest"
)

// funcListener is a JobListener made of function fields.
type funcListener struct {
	describe func(spi.ListenerDescribeRequest) (spi.ListenerDescription, error)
	call     func(spi.ListenerRequest) error
}

func (f funcListener) Describe(_ context.Context, r spi.ListenerDescribeRequest) (spi.ListenerDescription, error) {
	return f.describe(r)
}
func (f funcListener) BeforeJobExecuted(_ context.Context, r spi.ListenerRequest) error {
	return f.call(r)
}
func (f funcListener) AfterJobExecuted(_ context.Context, r spi.ListenerRequest) error {
	return f.call(r)
}

func refListener() funcListener {
	return funcListener{
		describe: func(r spi.ListenerDescribeRequest) (spi.ListenerDescription, error) {
			if r.Props["bad"] != "" {
				return spi.ListenerDescription{}, fmt.Errorf("property bad: %w", spi.ErrInvalidConfig)
			}
			return spi.ListenerDescription{Order: spi.DefaultListenerOrder}, nil
		},
		call: func(spi.ListenerRequest) error { return nil },
	}
}

func TestJobListenerSuitePassesReference(t *testing.T) {
	t.Parallel()
	opts := &spitest.JobListenerOptions{InvalidProps: map[string]map[string]string{"bad": {"bad": "x"}},
		Want: &spi.ListenerDescription{Order: spi.DefaultListenerOrder}}
	spitest.TestJobListener(t, refListener(), opts)
	expectAllChecksPass[spi.JobListener](t, refListener(), spitest.JobListenerChecks(opts))
}

func TestJobListenerChecksCatchBrokenImplementations(t *testing.T) {
	t.Parallel()
	var n atomic.Int64
	accepting := refListener()
	accepting.describe = func(spi.ListenerDescribeRequest) (spi.ListenerDescription, error) {
		return spi.ListenerDescription{}, nil
	}
	flaky := refListener()
	flaky.describe = func(spi.ListenerDescribeRequest) (spi.ListenerDescription, error) {
		return spi.ListenerDescription{Order: int(n.Add(1))}, nil
	}
	failing := refListener()
	failing.call = func(r spi.ListenerRequest) error {
		if len(r.Contexts.Items) == 0 {
			return errors.New("no items")
		}
		return nil
	}
	plain := refListener()
	plain.describe = func(r spi.ListenerDescribeRequest) (spi.ListenerDescription, error) {
		if _, ok := r.Props["ejob.spitest.unknown"]; ok {
			return spi.ListenerDescription{}, errors.New("unknown property")
		}
		return refListener().describe(r)
	}
	opts := &spitest.JobListenerOptions{InvalidProps: map[string]map[string]string{"bad": {"bad": "x"}}}
	tests := map[string]struct {
		impl      spi.JobListener
		wantFails string
	}{
		"accepts_invalid_props": {accepting, "describe_rejects_invalid_props"},
		"nondeterministic":      {flaky, "describe_accepts_valid_props"},
		"fails_without_items":   {failing, "before_and_after"},
		"plain_describe_error":  {plain, "describe_errors_wrap_invalid_config"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			expectCheckFails(t, tc.impl, spitest.JobListenerChecks(opts), tc.wantFails)
		})
	}
}
