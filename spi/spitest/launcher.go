package spitest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/ejob-io/ejob/spi"
)

// LauncherCheckScript is the bootstrap script the launcher suite's app
// runs: it exits with 9 when SPITEST_NODE still holds
// spi.LaunchNodePlaceholder, else sleeps SPITEST_SLEEP seconds (0 when
// unset), then exits with SPITEST_EXIT (0 when unset). The suite sets them
// per item through spi.LaunchItem.Env, so an item's outcome shows that its
// environment reached it.
const LauncherCheckScript = `case "${SPITEST_NODE:-}" in *ejob.node*) exit 9 ;; esac; sleep "${SPITEST_SLEEP:-0}"; exit "${SPITEST_EXIT:-0}"`

// LauncherOptions tells the launcher suite how to reach a cluster.
type LauncherOptions struct {
	// Config returns the launcher's settings; each check calls it once.
	// Required.
	Config func() map[string]string
	// App returns an app that runs LauncherCheckScript with a POSIX shell
	// (an image with sh, or an AppURL the launcher can fetch). Required.
	App func() spi.LaunchApp
	// InvalidConfig are named settings Validate must reject with an error
	// wrapping spi.ErrInvalidConfig.
	InvalidConfig map[string]map[string]string
}

// TestLauncher runs every check of LauncherChecks(opts) against l, each as
// a subtest of t.
func TestLauncher(t *testing.T, l spi.Launcher, opts LauncherOptions) {
	t.Helper()
	RunChecks(t, l, LauncherChecks(opts))
}

// suiteName is a fresh job or fire name, valid as a Kubernetes name.
func suiteName(prefix string) string {
	b := make([]byte, 5)
	_, _ = rand.Read(b)
	return prefix + "-" + hex.EncodeToString(b)
}

func (o LauncherOptions) launch(job, fire string, cfg map[string]string, env ...map[string]string) spi.LaunchRequest {
	items := make([]spi.LaunchItem, len(env))
	for i, e := range env {
		items[i] = spi.LaunchItem{Item: i, Env: e}
	}
	return spi.LaunchRequest{Config: cfg, FireID: fire, ExecutionType: "READY", App: o.App(),
		Job:   spi.LaunchJob{Name: job, ExecutionType: "TRANSIENT", ShardingTotalCount: len(env), CPUCount: 0.01, MemoryMB: 8},
		Items: items, Labels: map[string]string{"job": job, "fire": fire}}
}

// fireItems returns the items of fire in l's list for job.
func fireItems(ctx context.Context, l spi.Launcher, cfg map[string]string, job, fire string) ([]spi.ItemStatus, error) {
	list, err := l.List(ctx, spi.LaunchListRequest{Config: cfg, JobName: job})
	if err != nil {
		return nil, fmt.Errorf("List: %w", err)
	}
	var out []spi.ItemStatus
	for _, s := range list.Items {
		if s.JobName != job {
			return nil, fmt.Errorf("List(JobName %q) returned an item of job %q", job, s.JobName)
		}
		if s.FireID == fire {
			out = append(out, s)
		}
	}
	return out, nil
}

// awaitItems polls until done accepts the fire's items or ctx ends.
func awaitItems(ctx context.Context, l spi.Launcher, cfg map[string]string, job, fire string, what string, done func([]spi.ItemStatus) bool) ([]spi.ItemStatus, error) {
	for {
		items, err := fireItems(ctx, l, cfg, job, fire)
		if err != nil {
			return nil, err
		}
		if done(items) {
			return items, nil
		}
		select {
		case <-ctx.Done():
			return items, fmt.Errorf("waiting for %s: %w (last list: %+v)", what, ctx.Err(), items)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func allFinal(n int) func([]spi.ItemStatus) bool {
	return func(items []spi.ItemStatus) bool {
		if len(items) != n {
			return false
		}
		for _, s := range items {
			if !s.State.Final() {
				return false
			}
		}
		return true
	}
}

// LauncherChecks returns the conformance checks of the spi.Launcher
// contract:
//
//   - runs_items_with_env: a fire of two items, item 1 told by its
//     environment to exit 3, ends with item 0 succeeded (its environment's
//     spi.LaunchNodePlaceholder replaced by its node) and item 1 failed
//     with exit code 3, each listed once under its job and fire;
//   - launch_is_idempotent: a second Launch of the same fire adds nothing;
//   - stop_fire: a fire whose item sleeps is running, then Stop ends it:
//     nothing of the fire is listed as ready or running afterwards;
//   - stop_unknown_is_noop: Stop of a job that never ran returns nil;
//   - invalid_config: Validate rejects each of opts.InvalidConfig with an
//     error wrapping spi.ErrInvalidConfig.
func LauncherChecks(opts LauncherOptions) []Check[spi.Launcher] {
	return []Check[spi.Launcher]{
		{Name: "runs_items_with_env", Run: func(ctx context.Context, l spi.Launcher) error {
			cfg, job, fire := opts.Config(), suiteName("spitest"), suiteName("f")
			item0 := map[string]string{"SPITEST_NODE": "on " + spi.LaunchNodePlaceholder}
			if _, err := l.Launch(ctx, opts.launch(job, fire, cfg, item0, map[string]string{"SPITEST_EXIT": "3"})); err != nil {
				return fmt.Errorf("Launch: %w", err)
			}
			defer l.Stop(context.WithoutCancel(ctx), spi.LaunchStopRequest{Config: cfg, JobName: job}) //nolint:errcheck // cleanup
			items, err := awaitItems(ctx, l, cfg, job, fire, "both items final", allFinal(2))
			if err != nil {
				return err
			}
			for _, s := range items {
				switch {
				case s.Item == 0 && s.State != spi.ItemSucceeded:
					return fmt.Errorf("item 0: %+v, want succeeded (exit code 9: its environment still holds %s)", s, spi.LaunchNodePlaceholder)
				case s.Item == 1 && (s.State != spi.ItemFailed || s.ExitCode != 3):
					return fmt.Errorf("item 1 (SPITEST_EXIT=3): %+v, want failed with exit code 3", s)
				case s.Item != 0 && s.Item != 1:
					return fmt.Errorf("unexpected item %+v", s)
				}
			}
			if items[0].Item == items[1].Item {
				return fmt.Errorf("item %d listed twice: %+v", items[0].Item, items)
			}
			return nil
		}},
		{Name: "launch_is_idempotent", Run: func(ctx context.Context, l spi.Launcher) error {
			cfg, job, fire := opts.Config(), suiteName("spitest"), suiteName("f")
			req := opts.launch(job, fire, cfg, nil)
			for i := 0; i < 2; i++ {
				if _, err := l.Launch(ctx, req); err != nil {
					return fmt.Errorf("Launch #%d: %w", i+1, err)
				}
			}
			defer l.Stop(context.WithoutCancel(ctx), spi.LaunchStopRequest{Config: cfg, JobName: job}) //nolint:errcheck // cleanup
			items, err := awaitItems(ctx, l, cfg, job, fire, "the item final", func(items []spi.ItemStatus) bool {
				return len(items) > 1 || allFinal(1)(items)
			})
			if err != nil {
				return err
			}
			if len(items) != 1 || items[0].State != spi.ItemSucceeded {
				return fmt.Errorf("after two Launches of one fire: %+v, want one succeeded item", items)
			}
			return nil
		}},
		{Name: "stop_fire", Run: func(ctx context.Context, l spi.Launcher) error {
			cfg, job, fire := opts.Config(), suiteName("spitest"), suiteName("f")
			if _, err := l.Launch(ctx, opts.launch(job, fire, cfg, map[string]string{"SPITEST_SLEEP": "600"})); err != nil {
				return fmt.Errorf("Launch: %w", err)
			}
			if _, err := awaitItems(ctx, l, cfg, job, fire, "the item running", func(items []spi.ItemStatus) bool {
				return len(items) == 1 && items[0].State == spi.ItemRunning
			}); err != nil {
				return err
			}
			resp, err := l.Stop(ctx, spi.LaunchStopRequest{Config: cfg, JobName: job, FireID: fire})
			if err != nil {
				return fmt.Errorf("Stop: %w", err)
			}
			if resp.Stopped != 1 {
				return fmt.Errorf("Stop: Stopped = %d, want 1", resp.Stopped)
			}
			items, err := fireItems(ctx, l, cfg, job, fire)
			if err != nil {
				return err
			}
			for _, s := range items {
				if !s.State.Final() {
					return fmt.Errorf("after Stop: %+v still listed as %s", s, s.State)
				}
			}
			return nil
		}},
		{Name: "stop_unknown_is_noop", Run: func(ctx context.Context, l spi.Launcher) error {
			resp, err := l.Stop(ctx, spi.LaunchStopRequest{Config: opts.Config(), JobName: suiteName("spitest-none")})
			if err != nil || resp.Stopped != 0 {
				return fmt.Errorf("Stop of a job that never ran = %+v, %v; want 0, nil", resp, err)
			}
			return nil
		}},
		{Name: "invalid_config", Run: func(ctx context.Context, l spi.Launcher) error {
			if len(opts.InvalidConfig) == 0 {
				return Skip("no InvalidConfig given")
			}
			for name, cfg := range opts.InvalidConfig {
				if err := l.Validate(ctx, spi.LaunchValidateRequest{Config: cfg}); !errors.Is(err, spi.ErrInvalidConfig) {
					return fmt.Errorf("Validate(%s) = %v, want an error wrapping spi.ErrInvalidConfig", name, err)
				}
			}
			return nil
		}},
	}
}
