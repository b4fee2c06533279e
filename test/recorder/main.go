// Command recorder is the SCRIPT program of the chaos suite (test/chaos)
// and the end-to-end tests (test/e2e). Its command line is `recorder OUT`,
// to which ejob appends the item's sharding context JSON. It appends one line per event to OUT, each line one write(2) on a
// file opened with O_APPEND followed by fsync, so lines of concurrent items
// never interleave and every line written survives the recorder (or its
// host) being killed right after:
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
package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/signal"
	"strconv"
	"sync"
	"syscall"
	"time"
)

const heartbeat = 100 * time.Millisecond

func main() {
	if len(os.Args) != 3 {
		fmt.Fprintln(os.Stderr, "usage: recorder OUT SHARDING_CONTEXT_JSON")
		os.Exit(2)
	}
	out, raw := os.Args[1], os.Args[2]
	var sc struct {
		ShardingParameter string `json:"shardingParameter"`
	}
	if err := json.Unmarshal([]byte(raw), &sc); err != nil {
		fmt.Fprintln(os.Stderr, "recorder: bad sharding context:", err)
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
	r.write("S", raw)
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
			r.write("E", "")
			os.Exit(0)
		case s := <-sigs:
			r.write("C", s.String())
			os.Exit(143)
		}
	}
}

type rec struct {
	mu  sync.Mutex
	f   *os.File
	pid int
}

func (r *rec) write(ev, rest string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	line := fmt.Sprintf("%s %d %d", ev, time.Now().UnixNano(), r.pid)
	if rest != "" {
		line += " " + rest
	}
	if _, err := r.f.WriteString(line + "\n"); err != nil {
		fmt.Fprintln(os.Stderr, "recorder:", err)
		os.Exit(1)
	}
	_ = r.f.Sync()
}
