// Command recorder is the SCRIPT program of the end-to-end tests. Its
// command line is `recorder OUT`, to which ejob appends the item's sharding
// context JSON. It appends "S <unix-ns> <pid> <json>" to OUT, sleeps for
// the item's sharding parameter when it is a number of seconds, then
// appends "E <unix-ns> <pid> <json>". Each line is one write(2) to a file
// opened with O_APPEND, so concurrent items never interleave lines.
package main

import (
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"time"
)

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
	record(out, "S", raw)
	if secs, err := strconv.ParseFloat(sc.ShardingParameter, 64); err == nil && secs > 0 {
		time.Sleep(time.Duration(secs * float64(time.Second)))
	}
	record(out, "E", raw)
}

func record(out, ev, raw string) {
	f, err := os.OpenFile(out, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		fmt.Fprintln(os.Stderr, "recorder:", err)
		os.Exit(1)
	}
	defer f.Close()
	line := fmt.Sprintf("%s %d %d %s\n", ev, time.Now().UnixNano(), os.Getpid(), raw)
	if _, err := f.WriteString(line); err != nil {
		fmt.Fprintln(os.Stderr, "recorder:", err)
		os.Exit(1)
	}
}
