package regtest

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/ejob-io/ejob/core/reg"
)

// testSharedWatchesOwnRoots: on a remote registry the cache watches the
// roots it tracks, not the namespace: the changes of other subtrees are
// never sent to it. With one watch on "/" every host got every change of
// the namespace, its other hosts' jobs included: at 10 hosts each
// following its own jobs, nine notifications in ten were dropped on
// arrival, and sending them was about half of ZooKeeper's CPU while the
// hosts started.
func (s *suite) testSharedWatchesOwnRoots(t *testing.T) {
	ctx := ctxFor(t)
	ns := namespace(t)
	w := s.client(t, ns)
	jobTree(t, w, "/job")
	jobTree(t, w, "/job2")
	c := remote(t, s.client(t, ns))
	sc := reg.NewSharedCache(c)
	v := sc.Track("/job", nil)
	t.Cleanup(v.Close)
	v2 := sc.Track("/job2/sharding", nil)
	t.Cleanup(v2.Close)
	runShared(t, sc)
	<-v.Initialized()
	<-v2.Initialized()
	for i := range 20 {
		str(t)(w.Create(ctx, fmt.Sprintf("/other/n%d", i), nil, reg.Persistent, reg.WithParents()))
		stat(t)(w.Set(ctx, "/job2/config", []byte{byte(i)}, reg.AnyVersion))
	}
	stat(t)(w.Set(ctx, "/job/config", []byte("barrier"), reg.AnyVersion))
	stat(t)(w.Set(ctx, "/job2/sharding/0/instance", []byte("barrier"), reg.AnyVersion))
	s.eventually(t, "the barriers", func() bool {
		d, _, _ := v.Get("/job/config")
		d2, _, _ := v2.Get("/job2/sharding/0/instance")
		return string(d) == "barrier" && string(d2) == "barrier"
	})
	watched, delivered := c.record()
	slices.Sort(watched)
	if want := []string{"/job", "/job2/sharding"}; !slices.Equal(watched, want) {
		t.Errorf("watched %q, want %q", watched, want)
	}
	for _, ev := range delivered {
		if ev.Type == reg.EventResync || ev.Type == reg.EventNotWatching {
			continue
		}
		if !within(ev.Path, "/job") && !within(ev.Path, "/job2/sharding") {
			t.Errorf("the cache was sent a change outside its subtrees: %v %s", ev.Type, ev.Path)
		}
	}
}

// within reports whether p is root or below it.
func within(p, root string) bool { return p == root || strings.HasPrefix(p, root+"/") }

// testSharedRewatchAfterClose: closing a root's last view ends its watch,
// and tracking the root again arms a new one, whose view loads and
// follows the subtree.
func (s *suite) testSharedRewatchAfterClose(t *testing.T) {
	ctx := ctxFor(t)
	ns := namespace(t)
	w := s.client(t, ns)
	jobTree(t, w, "/job")
	c := remote(t, s.client(t, ns))
	sc := reg.NewSharedCache(c)
	runShared(t, sc)
	v := sc.Track("/job", nil)
	<-v.Initialized()
	v.Close()
	s.eventually(t, "the closed view's watch ended", func() bool {
		_, delivered := c.record()
		return slices.ContainsFunc(delivered, func(ev reg.WatchEvent) bool {
			return ev.Type == reg.EventNotWatching && ev.Path == "/job"
		})
	})
	stat(t)(w.Set(ctx, "/job/config", []byte("meanwhile"), reg.AnyVersion))
	v2 := sc.Track("/job", nil)
	t.Cleanup(v2.Close)
	<-v2.Initialized()
	if d, _, _ := v2.Get("/job/config"); string(d) != "meanwhile" {
		t.Errorf("the new view loaded config %q, want %q", d, "meanwhile")
	}
	str(t)(w.Create(ctx, "/job/sharding/0/running", nil, reg.Ephemeral))
	s.eventually(t, "the new view follows the subtree", func() bool {
		_, _, ok := v2.Get("/job/sharding/0/running")
		return ok
	})
	if watched, _ := c.record(); !slices.Equal(watched, []string{"/job", "/job"}) {
		t.Errorf("watched %q, want /job twice", watched)
	}
	s.eventuallySame(t, w, v2, "/job")
}
