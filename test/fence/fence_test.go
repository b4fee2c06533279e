package fence

import (
	"context"
	"fmt"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"
)

func open(t *testing.T, path string) *Store {
	t.Helper()
	s, err := Open(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

func put(t *testing.T, s *Store, w Write) bool {
	t.Helper()
	ok, err := s.Put(context.Background(), w)
	if err != nil {
		t.Fatal(err)
	}
	return ok
}

func TestLowerTokenRejectedEqualAndHigherAccepted(t *testing.T) {
	s := open(t, filepath.Join(t.TempDir(), "f.db"))
	t0 := time.Unix(100, 0)
	w := func(item int, token int64, run string, start int) Write {
		return Write{Job: "j", Item: item, Token: token, Fenced: true, Run: run, RunStart: t0.Add(time.Duration(start) * time.Second), At: time.Now()}
	}
	steps := []struct {
		w    Write
		want bool
	}{
		{w(0, 10, "a", 0), true},  // first token of the item
		{w(0, 10, "a", 0), true},  // the same run again (equal token)
		{w(0, 12, "b", 1), true},  // a later run
		{w(0, 10, "a", 0), false}, // the superseded run: lower token
		{w(0, 11, "c", 2), false}, // lower than the accepted 12 although started later
		{w(1, 5, "d", 0), true},   // another item has its own fence
		{w(0, 13, "e", 3), true},
	}
	for k, st := range steps {
		if got := put(t, s, st.w); got != st.want {
			t.Fatalf("step %d (item %d token %d): accepted %v, want %v", k, st.w.Item, st.w.Token, got, st.want)
		}
	}
	if tok, ok, err := s.Token(context.Background(), "j", 0); err != nil || !ok || tok != 13 {
		t.Fatalf("token of j/0 = %d, %v, %v; want 13", tok, ok, err)
	}
	if tok, ok, err := s.Token(context.Background(), "other", 0); err != nil || ok {
		t.Fatalf("token of other/0 = %d, %v, %v; want none", tok, ok, err)
	}
	log, err := s.Log(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(log) != len(steps) {
		t.Fatalf("%d logged writes, want %d", len(log), len(steps))
	}
	got := Count(log)
	want := Tally{Writes: 7, StaleRejected: 1, FreshRejected: 1}
	if got != want {
		t.Fatalf("tally %+v, want %+v", got, want)
	}
}

func TestUnfencedWritesAreAcceptedAndCountedApart(t *testing.T) {
	s := open(t, filepath.Join(t.TempDir(), "f.db"))
	now := time.Now()
	for k := range 3 {
		if !put(t, s, Write{Job: "j", Item: 0, Run: fmt.Sprint(k), RunStart: now.Add(-time.Duration(k) * time.Second), At: now}) {
			t.Fatal("unfenced write rejected")
		}
	}
	log, err := s.Log(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if got, want := Count(log), (Tally{Writes: 3, Unfenced: 3}); got != want {
		t.Fatalf("tally %+v, want %+v", got, want)
	}
	if _, ok, _ := s.Token(context.Background(), "j", 0); ok {
		t.Fatal("an unfenced write set a token")
	}
}

func TestCountFlagsAStaleWriteTheStoreAccepted(t *testing.T) {
	// A log the store cannot produce with honest tokens: a run that
	// started later wrote first, then the older run's write was accepted
	// (its token was higher: tokens out of the runs' order).
	t0 := time.Unix(100, 0)
	log := []Logged{
		{Seq: 1, Accepted: true, Write: Write{Job: "j", Item: 0, Token: 1, Fenced: true, Run: "new", RunStart: t0.Add(time.Second)}},
		{Seq: 2, Accepted: true, Write: Write{Job: "j", Item: 0, Token: 2, Fenced: true, Run: "old", RunStart: t0}},
	}
	if got := Count(log); got.StaleAccepted != 1 {
		t.Fatalf("tally %+v, want one stale write accepted", got)
	}
}

// checkLog verifies a concurrent run's log: accepted tokens never go down
// per item in commit order, every rejected one is below the highest
// accepted before it, and the fence holds the highest token.
func checkLog(t *testing.T, s *Store, items int, wantWrites int) {
	t.Helper()
	log, err := s.Log(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(log) != wantWrites {
		t.Fatalf("%d logged writes, want %d", len(log), wantWrites)
	}
	high := map[int]int64{}
	max := map[int]int64{}
	for _, l := range log {
		h, seen := high[l.Item]
		switch {
		case l.Accepted && seen && l.Token < h:
			t.Fatalf("write %d (item %d token %d) accepted after token %d", l.Seq, l.Item, l.Token, h)
		case !l.Accepted && (!seen || l.Token >= h):
			t.Fatalf("write %d (item %d token %d) rejected, highest accepted before it %d (seen %v)", l.Seq, l.Item, l.Token, h, seen)
		case l.Accepted:
			high[l.Item] = l.Token
		}
		if l.Token > max[l.Item] {
			max[l.Item] = l.Token
		}
	}
	for i := range items {
		tok, ok, err := s.Token(context.Background(), "j", i)
		if err != nil || !ok || tok != max[i] {
			t.Fatalf("token of item %d = %d (%v, %v), want the highest written %d", i, tok, ok, err, max[i])
		}
	}
}

func TestConcurrentWriters(t *testing.T) {
	path := filepath.Join(t.TempDir(), "f.db")
	const writers, each, items = 8, 40, 3
	var wg sync.WaitGroup
	errs := make(chan error, writers)
	for g := range writers {
		s := open(t, path) // a handle (connection) per writer, as separate processes have
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewSource(int64(g)))
			for k := range each {
				w := Write{Job: "j", Item: rng.Intn(items), Token: rng.Int63n(100), Fenced: true,
					Run: fmt.Sprintf("%d-%d", g, k), RunStart: time.Now(), At: time.Now()}
				if _, err := s.Put(context.Background(), w); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	checkLog(t, open(t, path), items, writers*each)
}

// TestConcurrentWriterProcesses runs the writers as separate processes
// (this test binary re-executed), as the recorders of a chaos run are.
func TestConcurrentWriterProcesses(t *testing.T) {
	if path := os.Getenv("FENCE_TEST_WRITER"); path != "" {
		seed, _ := strconv.Atoi(os.Getenv("FENCE_TEST_SEED"))
		s := open(t, path)
		rng := rand.New(rand.NewSource(int64(seed)))
		for k := range 30 {
			w := Write{Job: "j", Item: rng.Intn(2), Token: rng.Int63n(50), Fenced: true,
				Run: fmt.Sprintf("p%d-%d", seed, k), RunStart: time.Now(), At: time.Now()}
			if _, err := s.Put(context.Background(), w); err != nil {
				t.Fatal(err)
			}
		}
		return
	}
	path := filepath.Join(t.TempDir(), "f.db")
	open(t, path) // create the tables before the writers race to
	const procs = 4
	var wg sync.WaitGroup
	out := make([][]byte, procs)
	errs := make([]error, procs)
	for p := range procs {
		cmd := exec.Command(os.Args[0], "-test.run=^TestConcurrentWriterProcesses$", "-test.count=1")
		cmd.Env = append(os.Environ(), "FENCE_TEST_WRITER="+path, fmt.Sprintf("FENCE_TEST_SEED=%d", p))
		wg.Add(1)
		go func() {
			defer wg.Done()
			out[p], errs[p] = cmd.CombinedOutput()
		}()
	}
	wg.Wait()
	for p := range procs {
		if errs[p] != nil {
			t.Fatalf("writer %d: %v\n%s", p, errs[p], out[p])
		}
	}
	checkLog(t, open(t, path), 2, procs*30)
}
