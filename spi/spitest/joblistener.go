package spitest

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"
	"testing"

	"github.com/ejob-io/ejob/spi"
)

// JobListenerOptions tells the job-listener suite what the implementation
// accepts. A nil *JobListenerOptions, or a zero field, skips the checks that
// need it (ValidProps defaults to one nil props map).
type JobListenerOptions struct {
	// ValidProps are props Describe must accept; nil means {nil}.
	ValidProps []map[string]string
	// InvalidProps are named props Describe must reject with an error
	// wrapping spi.ErrInvalidConfig.
	InvalidProps map[string]map[string]string
	// Want, if set, is the description expected for ValidProps[0].
	Want *spi.ListenerDescription
	// NoCalls skips the checks that call BeforeJobExecuted and
	// AfterJobExecuted (for a listener that needs a live service).
	NoCalls bool
}

// TestJobListener runs every check of JobListenerChecks(opts) against l,
// each as a subtest of t.
func TestJobListener(t *testing.T, l spi.JobListener, opts *JobListenerOptions) {
	t.Helper()
	RunChecks(t, l, JobListenerChecks(opts))
}

// ListenerContexts returns the sharding contexts the suite calls listeners
// with: items with and without parameters, and an instance with no items
// (listeners are called then too).
func ListenerContexts() map[string]spi.ShardingContexts {
	return map[string]spi.ShardingContexts{
		"items_with_parameters": {
			TaskID: "test_job@-@0,1,2@-@READY@-@192.168.1.1@-@100", JobName: "test_job", ShardingTotalCount: 3,
			JobParameter: "param", Items: []int{0, 1, 2}, ShardingItemParameters: map[int]string{0: "A", 2: "C"},
		},
		"one_item": {
			TaskID: "test_job@-@1@-@READY@-@192.168.1.2@-@200", JobName: "test_job", ShardingTotalCount: 3,
			Items: []int{1},
		},
		"no_items": {
			TaskID: "test_job@-@@-@READY@-@192.168.1.3@-@300", JobName: "test_job", ShardingTotalCount: 3,
		},
	}
}

// JobListenerChecks returns the conformance checks of the spi.JobListener
// contract:
//
//   - describe_accepts_valid_props: Describe accepts each of
//     opts.ValidProps, answers the same twice, and (with opts.Want)
//     answers opts.Want for the first;
//   - describe_rejects_invalid_props: Describe rejects each of
//     opts.InvalidProps with an error wrapping spi.ErrInvalidConfig;
//   - describe_errors_wrap_invalid_config: Describe of no props, empty
//     props and an unknown property answers a description or an error
//     wrapping spi.ErrInvalidConfig, never another error;
//   - before_and_after: BeforeJobExecuted then AfterJobExecuted succeed for
//     each of ListenerContexts, with the first valid props;
//   - concurrent_calls: many goroutines calling Describe, BeforeJobExecuted
//     and AfterJobExecuted at once succeed and get the lone caller's
//     description.
func JobListenerChecks(opts *JobListenerOptions) []Check[spi.JobListener] {
	var o JobListenerOptions
	if opts != nil {
		o = *opts
	}
	if len(o.ValidProps) == 0 {
		o.ValidProps = []map[string]string{nil}
	}
	describe := func(ctx context.Context, l spi.JobListener, props map[string]string) (spi.ListenerDescription, error) {
		return l.Describe(ctx, spi.ListenerDescribeRequest{JobName: "test_job", Props: props})
	}
	calls := func(ctx context.Context, l spi.JobListener, name string, sc spi.ShardingContexts) error {
		req := spi.ListenerRequest{JobName: sc.JobName, Props: o.ValidProps[0], Contexts: sc}
		if err := l.BeforeJobExecuted(ctx, req); err != nil {
			return caseErr(name, "BeforeJobExecuted returned error: %v", err)
		}
		if err := l.AfterJobExecuted(ctx, req); err != nil {
			return caseErr(name, "AfterJobExecuted returned error: %v", err)
		}
		return nil
	}
	return []Check[spi.JobListener]{
		{Name: "describe_accepts_valid_props", Run: func(ctx context.Context, l spi.JobListener) error {
			for i, p := range o.ValidProps {
				name := fmt.Sprintf("ValidProps[%d]", i)
				a, err := describe(ctx, l, p)
				if err != nil {
					return caseErr(name, "Describe(%v) returned error: %v", p, err)
				}
				b, err := describe(ctx, l, p)
				if err != nil {
					return caseErr(name, "second Describe(%v) returned error: %v", p, err)
				}
				if a != b {
					return caseErr(name, "two calls with the same request answered %+v and %+v", a, b)
				}
				if i == 0 && o.Want != nil && a != *o.Want {
					return caseErr(name, "Describe(%v) = %+v, want %+v", p, a, *o.Want)
				}
			}
			return nil
		}},
		{Name: "describe_rejects_invalid_props", Run: func(ctx context.Context, l spi.JobListener) error {
			if len(o.InvalidProps) == 0 {
				return Skip("no JobListenerOptions.InvalidProps given")
			}
			for _, name := range sortedKeys(o.InvalidProps) {
				p := o.InvalidProps[name]
				if _, err := describe(ctx, l, p); !errors.Is(err, spi.ErrInvalidConfig) {
					return caseErr(name, "Describe(%v) returned %v, want an error wrapping spi.ErrInvalidConfig", p, err)
				}
			}
			return nil
		}},
		{Name: "describe_errors_wrap_invalid_config", Run: func(ctx context.Context, l spi.JobListener) error {
			return errorsWrapInvalidConfig(ctx, "Describe", func(ctx context.Context, req spi.ValidatePropsRequest) error {
				_, err := describe(ctx, l, req.Props)
				return err
			})
		}},
		{Name: "before_and_after", Run: func(ctx context.Context, l spi.JobListener) error {
			if o.NoCalls {
				return Skip("JobListenerOptions.NoCalls set")
			}
			cs := ListenerContexts()
			for _, name := range sortedKeys(cs) {
				if err := calls(ctx, l, name, cs[name]); err != nil {
					return err
				}
			}
			return nil
		}},
		{Name: "concurrent_calls", Run: func(ctx context.Context, l spi.JobListener) error {
			want, err := describe(ctx, l, o.ValidProps[0])
			if err != nil {
				return caseErr("ValidProps[0]", "Describe returned error: %v", err)
			}
			cs := ListenerContexts()
			names := sortedKeys(cs)
			errs := make([]error, concurrency)
			var wg sync.WaitGroup
			for g := range concurrency {
				wg.Go(func() {
					name := fmt.Sprintf("goroutine=%d", g)
					got, err := describe(ctx, l, o.ValidProps[0])
					if err != nil {
						errs[g] = caseErr(name, "Describe returned error: %v", err)
						return
					}
					if got != want {
						errs[g] = caseErr(name, "concurrent Describe answered %+v, the lone caller %+v", got, want)
						return
					}
					if !o.NoCalls {
						c := names[g%len(names)]
						errs[g] = calls(ctx, l, name+"/"+c, cs[c])
					}
				})
			}
			wg.Wait()
			return errors.Join(errs...)
		}},
	}
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
