// Command recorder is the SCRIPT program of the chaos suite (test/chaos)
// and the end-to-end tests (test/e2e). Its command line is
// `recorder [-fence DB] OUT`, to which ejob appends the item's sharding
// context JSON. It appends one line per event to OUT, each line one
// write(2) on a file opened with O_APPEND followed by fsync, so lines of
// concurrent items never interleave and every line written survives the
// recorder (or its host) being killed right after:
//
//	S <unix-ns> <pid> <json>   the item started
//	H <unix-ns> <pid>          heartbeat, every 100 ms while it runs
//	E <unix-ns> <pid>          the item ended normally
//	C <unix-ns> <pid> <signal> the item was cancelled (SIGTERM/SIGINT)
//
// The item runs for its sharding parameter in seconds (a decimal number;
// none or not a number: 0). Heartbeats make the record show when the
// process really ran: a frozen (SIGSTOPped) recorder writes none, and one
// killed with SIGKILL ends at its last line.
//
// With -fence, the run also makes two side effects in the fenced store DB
// (test/fence), right after its start line and right before its end or
// cancel line, keyed by the fencing token in EJOB_FENCING_TOKEN. A run
// without the variable writes unfenced. The writes carry the run's start
// as the process's creation (processStart), which a freeze right after
// ejob started the recorder does not move.
//
// `recorder -stalls OUT [-stall-threshold D]` is the chaos suite's stall
// probe instead, a process beside the hosts: until it is killed it ticks
// every millisecond and appends each stall longer than D (default 50 ms)
// to OUT as "FROM TO" in Unix nanoseconds (testkit.WriteStalls), the
// evidence of how long the machine kept a process of the hosts' kind from
// running.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/ejob-io/ejob/internal/testkit"
	"github.com/ejob-io/ejob/test/fence"
)

const heartbeat = 100 * time.Millisecond

func main() {
	fencePath := flag.String("fence", "", "the fenced store (SQLite file) the run writes its side effects to")
	stallsPath := flag.String("stalls", "", "run as a stall probe until killed, appending each stall to this file")
	stallThreshold := flag.Duration("stall-threshold", 50*time.Millisecond, "with -stalls: the shortest stall recorded")
	flag.Parse()
	if *stallsPath != "" {
		if err := probe(*stallsPath, *stallThreshold); err != nil {
			fmt.Fprintln(os.Stderr, "recorder:", err)
			os.Exit(1)
		}
		return
	}
	if flag.NArg() != 2 {
		fmt.Fprintln(os.Stderr, "usage: recorder [-fence DB] OUT SHARDING_CONTEXT_JSON")
		os.Exit(2)
	}
	out, raw := flag.Arg(0), flag.Arg(1)
	var sc struct {
		JobName           string `json:"jobName"`
		ShardingItem      int    `json:"shardingItem"`
		ShardingParameter string `json:"shardingParameter"`
	}
	if err := json.Unmarshal([]byte(raw), &sc); err != nil {
		fmt.Fprintln(os.Stderr, "recorder: bad sharding context:", err)
		os.Exit(2)
	}
	token, fenced, err := fencingToken()
	if err != nil {
		fmt.Fprintln(os.Stderr, "recorder:", err)
		os.Exit(2)
	}
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT)
	f, err := os.OpenFile(out, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		fmt.Fprintln(os.Stderr, "recorder:", err)
		os.Exit(1)
	}
	r := &rec{f: f, pid: os.Getpid()}
	start := r.write("S", raw)
	if created, err := processStart(r.pid, time.Now()); err == nil && created.Before(start) {
		start = created // the run's start for the fenced store
	}
	var effect func()
	if *fencePath != "" {
		store, err := fence.Open(context.Background(), *fencePath)
		if err != nil {
			fmt.Fprintln(os.Stderr, "recorder:", err)
			os.Exit(1)
		}
		w := fence.Write{Job: sc.JobName, Item: sc.ShardingItem, Token: token, Fenced: fenced,
			Run: strconv.Itoa(r.pid), RunStart: start}
		effect = func() {
			w.At = time.Now()
			if _, err := store.Put(context.Background(), w); err != nil {
				fmt.Fprintln(os.Stderr, "recorder:", err)
			}
		}
		effect()
	}
	var d time.Duration
	if secs, err := strconv.ParseFloat(sc.ShardingParameter, 64); err == nil && secs > 0 {
		d = time.Duration(secs * float64(time.Second))
	}
	done := time.NewTimer(d)
	tick := time.NewTicker(heartbeat)
	for {
		select {
		case <-tick.C:
			r.write("H", "")
		case <-done.C:
			if effect != nil {
				effect()
			}
			r.write("E", "")
			os.Exit(0)
		case s := <-sigs:
			if effect != nil {
				effect()
			}
			r.write("C", s.String())
			os.Exit(143)
		}
	}
}

// probe records the stalls of this process in the file at path until
// SIGTERM or SIGINT.
func probe(path string, threshold time.Duration) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return err
	}
	defer f.Close()
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	return testkit.WriteStalls(ctx, f, threshold)
}

// fencingToken is the run's fencing token, from EJOB_FENCING_TOKEN (ok
// false when the variable is unset).
func fencingToken() (token int64, ok bool, err error) {
	v, ok := os.LookupEnv("EJOB_FENCING_TOKEN")
	if !ok {
		return 0, false, nil
	}
	token, err = strconv.ParseInt(v, 10, 64)
	if err != nil {
		return 0, false, fmt.Errorf("EJOB_FENCING_TOKEN %q: %w", v, err)
	}
	return token, true, nil
}

type rec struct {
	mu  sync.Mutex
	f   *os.File
	pid int
}

// write appends one line and returns the time it carries.
func (r *rec) write(ev, rest string) time.Time {
	r.mu.Lock()
	defer r.mu.Unlock()
	now := time.Now()
	line := fmt.Sprintf("%s %d %d", ev, now.UnixNano(), r.pid)
	if rest != "" {
		line += " " + rest
	}
	if _, err := r.f.WriteString(line + "\n"); err != nil {
		fmt.Fprintln(os.Stderr, "recorder:", err)
		os.Exit(1)
	}
	_ = r.f.Sync()
	return now
}
