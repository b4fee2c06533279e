package coord

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/ejob-io/ejob/core/config"
	"github.com/ejob-io/ejob/core/node"
	"github.com/ejob-io/ejob/core/reg"
	"github.com/ejob-io/ejob/core/reg/embedded"
)

// handOvers is the staleJob of a sweeper tested alone: a fixed config
// and leadership, and the failover hand-overs the sweep asks for, recorded
// (the failover protocol itself is tested with real jobs: harness_test.go).
type handOvers struct {
	cfg     *config.JobConfiguration
	leader  bool
	crashed []string // "item/instance" of setCrashedFailoverFlag
	misfire []string // "item/owner" of queueMisfire
	queued  []string // "item/node/instance" of queueIfNames
	claims  int      // failoverIfNecessary calls
}

func (h *handOvers) config(context.Context) (*config.JobConfiguration, error) { return h.cfg, nil }
func (h *handOvers) isLeader(context.Context) (bool, error)                   { return h.leader, nil }
func (h *handOvers) setCrashedFailoverFlag(_ context.Context, i int, x string) error {
	h.crashed = append(h.crashed, fmt.Sprintf("%d/%s", i, x))
	return nil
}
func (h *handOvers) queueMisfire(_ context.Context, i int, x string) (bool, error) {
	h.misfire = append(h.misfire, fmt.Sprintf("%d/%s", i, x))
	return true, nil
}
func (h *handOvers) queueIfNames(_ context.Context, i int, name, x string) (bool, error) {
	h.queued = append(h.queued, fmt.Sprintf("%d/%s/%s", i, name, x))
	return true, nil
}
func (h *handOvers) failoverIfNecessary(context.Context) error { h.claims++; return nil }

// The sweep judges a node stale only when the instance it names has no
// instances/ node: nodes of live instances, of this instance and without a
// value are left. With failover on, a gone instance's running and
// failovering items and misfires are handed to failover; with it off, they
// are only removed (a gone owner's misfire flag with them, as an
// unassigned item's).
func TestStaleSweeper(t *testing.T) {
	const (
		me    = "10.0.0.1@-@1"
		live  = "10.0.0.2@-@2"
		ghost = "10.0.0.9@-@9"
	)
	for _, failover := range []bool{true, false} {
		t.Run(fmt.Sprintf("failover=%v", failover), func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			c, err := embedded.NewServer().Connect("ns")
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = c.Close() })
			p := node.New("job")
			put := func(path, v string) {
				t.Helper()
				if _, err := reg.Persist(ctx, c, path, []byte(v)); err != nil {
					t.Fatal(err)
				}
			}
			put(p.Instance(me), "")
			put(p.Instance(live), "")
			put(p.Running(0), ghost)     // stale
			put(p.Running(1), live)      // live
			put(p.Running(2), me)        // this instance's: recoverOwnRunning's
			put(p.Running(3), "")        // 3.0.0-1: not judged
			put(p.Failover(4), ghost)    // stale
			put(p.Failovering(5), ghost) // stale, with its running node
			put(p.Running(5), ghost)     // (deleted with it)
			put(p.ShardingInstance(6), ghost)
			put(p.Misfire(6), "") // owner gone
			put(p.ShardingInstance(7), live)
			put(p.Misfire(7), "") // owner alive
			put(p.Misfire(8), "") // unassigned
			cfg := config.New("job", 9)
			cfg.Failover = failover
			h := &handOvers{cfg: cfg}
			w := staleSweeper{s: store{c: c, p: p}, id: me, log: hclog.NewNullLogger(), job: h, fo: h}

			if err := w.sweepIfLeader(ctx); err != nil {
				t.Fatal(err)
			}
			if _, ok, _ := (store{c: c, p: p}).get(ctx, p.Running(0)); !ok {
				t.Fatal("a follower swept")
			}
			h.leader = true
			if err := w.sweepIfLeader(ctx); err != nil {
				t.Fatal(err)
			}

			exists := func(path string) bool {
				t.Helper()
				_, ok, err := (store{c: c, p: p}).get(ctx, path)
				if err != nil {
					t.Fatal(err)
				}
				return ok
			}
			gone := []string{p.Running(0), p.Failover(4), p.Failovering(5), p.Running(5), p.Misfire(8)}
			kept := []string{p.Running(1), p.Running(2), p.Running(3), p.Misfire(7)}
			if !failover {
				gone = append(gone, p.Misfire(6))
			}
			for _, path := range gone {
				if exists(path) {
					t.Errorf("%s kept, want it removed", path)
				}
			}
			for _, path := range kept {
				if !exists(path) {
					t.Errorf("%s removed, want it kept", path)
				}
			}
			if got := slices.Equal(h.queued, []string{"5/failovering/" + ghost}); got != failover {
				t.Errorf("failovering item queued for failover: %v (%v), want %v", got, h.queued, failover)
			}
			var wantCrashed, wantMisfire []string
			wantClaims := 0
			if failover {
				wantCrashed, wantMisfire, wantClaims = []string{"0/" + ghost}, []string{"6/" + ghost}, 1
			}
			if !slices.Equal(h.crashed, wantCrashed) || !slices.Equal(h.misfire, wantMisfire) || h.claims != wantClaims {
				t.Errorf("hand-overs: crashed %v, misfire %v, claims %d; want %v, %v, %d",
					h.crashed, h.misfire, h.claims, wantCrashed, wantMisfire, wantClaims)
			}
		})
	}
}

// A registry error ends the sweep with it.
func TestStaleSweeperError(t *testing.T) {
	c, err := embedded.NewServer().Connect("ns")
	if err != nil {
		t.Fatal(err)
	}
	p := node.New("job")
	if _, err := reg.Persist(context.Background(), c, p.Running(0), []byte("x@-@1")); err != nil {
		t.Fatal(err)
	}
	_ = c.Close()
	h := &handOvers{cfg: config.New("job", 1), leader: true}
	w := staleSweeper{s: store{c: c, p: p}, id: "me", log: hclog.NewNullLogger(), job: h, fo: h}
	if err := w.sweep(context.Background()); err == nil || errors.Is(err, reg.ErrNoNode) {
		t.Fatalf("sweep on a closed client = %v, want its error", err)
	}
}
