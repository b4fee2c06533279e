package chaos

import (
	"bytes"
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

var flagUpgradeFrom = flag.String("chaos.upgrade-from", "", "rolling upgrade: the git commit (or tag) whose ejob replaces each host of a running cluster one by one, then this tree's again (make upgrade)")

// TestRollingUpgrade replaces the hosts of a running 3-host cluster one by
// one (graceful stop, start) with ejob built from -chaos.upgrade-from,
// then one by one with this tree's ejob again, while both jobs fire. It
// checks what the chaos suite checks (every fire-item served, no item run
// twice at once, every cut-off failover item run again, the tree clean of
// dead instances at the end), and that no fire-item ran twice, and after
// each replacement that the new process runs items of both jobs (it reads
// the assignments the other version wrote) and that no node names a dead
// instance.
func TestRollingUpgrade(t *testing.T) {
	if !*flagRun || *flagUpgradeFrom == "" {
		t.Skip("the rolling upgrade runs with -chaos.run -chaos.upgrade-from=COMMIT: make upgrade")
	}
	old := buildAt(t, *flagUpgradeFrom)
	seed := *flagSeed
	if seed == 0 {
		seed = time.Now().UnixNano()
	}
	t.Logf("rolling upgrade from %s, seed %d", *flagUpgradeFrom, seed)
	s := newSuite(t, false, seed, 3)
	s.upgrade = true
	s.startAll()
	s.watchTimeline()
	if ok, why := waitFor(20*time.Second, func() (bool, string) { return s.everyHostFired(s.began) }); !ok {
		t.Fatalf("cluster never reached steady state: %s", why)
	}
	checkFrom := time.Now()
	sleep(steady)
	v := &violations{}
	for _, to := range []struct{ bin, label string }{{old, *flagUpgradeFrom}, {ejobBin, "this tree"}} {
		for _, h := range s.hosts {
			s.replace(v, h, to.bin, to.label)
			sleep(s.between(2*time.Second, 4*time.Second))
		}
	}
	s.finish(v, checkFrom, time.Now(), func(runs []*run, from, to time.Time) { s.checkOnce(v, runs, from, to) })
}

// replace stops h gracefully and starts it again running bin, records the
// replacement as a fault of kind "replace" (its items wait for the
// resharding its leaving and joining cause), then checks that the new
// process runs items of both jobs and that no node names a dead instance.
func (s *suite) replace(v *violations, h *host, bin, label string) {
	f := &fault{kind: "replace", target: h.name, at: time.Now(), pids: []int{h.pid()}, note: "with ejob of " + label}
	if err := h.stop(30 * time.Second); err != nil {
		s.t.Fatal(err)
	}
	h.bin = bin
	s.restart(h)
	f.healed = time.Now()
	f.recovered = maxTime(lostSession(f.at), f.healed.Add(rejoin))
	s.record(f)
	since := f.healed
	if ok, why := waitFor(30*time.Second, func() (bool, string) { return s.hostFired(h, since) }); !ok {
		v.add("upgrade", "%s running ejob of %s: %s within 30s of its start", h.name, label, why)
	}
	live := s.livePIDs()
	var stale []string
	if ok, _ := waitFor(15*time.Second, func() (bool, string) {
		var err error
		stale, err = s.staleNodes(live)
		if err != nil {
			return false, err.Error()
		}
		return len(stale) == 0, ""
	}); !ok {
		v.add("upgrade", "after %s started ejob of %s, nodes naming dead instances or queued failover remain: %s",
			h.name, label, strings.Join(stale, "; "))
	}
}

// hostFired: h's current process has started an item of both jobs since.
func (s *suite) hostFired(h *host, since time.Time) (bool, string) {
	seen := map[string]bool{}
	for _, r := range s.runs() {
		if r.start.After(since) && r.hostPID == h.pid() {
			seen[r.job] = true
		}
	}
	for _, j := range []string{jobFO, jobNoFO} {
		if !seen[j] {
			return false, "no run of " + j
		}
	}
	return true, ""
}

// checkOnce: no fire-item ran twice. The record does not say which fire a
// run served, so it counts: the runs of each item that ended normally and
// started in [first, to) (first: the first fire after from) are at most
// the item's fires in [first - P, to) (the fire before first may be
// caught up after it; a catch-up serves every fire it collapses; a
// cut-off run and its re-run count once).
func (s *suite) checkOnce(v *violations, runs []*run, from, to time.Time) {
	for _, job := range []string{jobFO, jobNoFO} {
		p := period(job)
		first := from.Truncate(p).Add(p)
		fires := 0
		for f := first.Add(-p); f.Before(to); f = f.Add(p) {
			fires++
		}
		for i := range items {
			n := 0
			for _, r := range runs {
				if r.job == job && r.item == i && r.kind == 'E' && !r.start.Before(first) && r.start.Before(to) {
					n++
				}
			}
			if n > fires {
				v.add("once", "%s item %d: %d runs ended normally in [%s, %s) for %d fires", job, i, n,
					first.Format("15:04:05.000"), to.Format("15:04:05.000"), fires)
			}
		}
	}
}

// buildAt builds cmd/ejob as of commit (git archive of this repository)
// into a temp dir and returns the binary.
func buildAt(t *testing.T, commit string) string {
	t.Helper()
	root, err := exec.Command("git", "rev-parse", "--show-toplevel").Output()
	if err != nil {
		t.Fatalf("git rev-parse --show-toplevel: %v", err)
	}
	dir := t.TempDir()
	src := filepath.Join(dir, "src")
	if err := os.Mkdir(src, 0o755); err != nil {
		t.Fatal(err)
	}
	archive := exec.Command("git", "-C", strings.TrimSpace(string(root)), "archive", "--format=tar", commit)
	var tarball, stderr bytes.Buffer
	archive.Stdout, archive.Stderr = &tarball, &stderr
	if err := archive.Run(); err != nil {
		t.Fatalf("git archive %s: %v\n%s", commit, err, stderr.String())
	}
	untar := exec.Command("tar", "-x", "-C", src)
	untar.Stdin = &tarball
	if out, err := untar.CombinedOutput(); err != nil {
		t.Fatalf("tar -x: %v\n%s", err, out)
	}
	bin := filepath.Join(dir, "ejob-"+commit)
	build := exec.Command("go", "build", "-o", bin, "./cmd/ejob")
	build.Dir = src
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build of %s: %v\n%s", commit, err, out)
	}
	t.Logf("built ejob of %s", commit)
	return bin
}
