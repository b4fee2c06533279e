package chaos

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"
)

// hbGap: a gap between two lines of one run longer than this means the
// recorder was not running (frozen) in between. Heartbeats come every
// 100 ms; the margin absorbs scheduling delays on a loaded machine.
const hbGap = 700 * time.Millisecond

// run is one execution of one item, from the record file.
type run struct {
	job      string
	item     int
	instance string // ip@-@pid from the task id
	hostPID  int    // the host process (the instance id's suffix)
	recPID   int
	start    time.Time
	beats    []time.Time // start, heartbeats and end, in order
	end      time.Time   // last line written (end, cancel or last heartbeat)
	kind     byte        // 'E' ended, 'C' cancelled, 0 no end line (killed, or still running)
}

func (r *run) String() string {
	k := map[byte]string{'E': "ended", 'C': "cancelled", 0: "no end line"}[r.kind]
	return fmt.Sprintf("%s/%d on %s [%s, %s %s]", r.job, r.item, r.instance,
		r.start.Format("15:04:05.000"), r.end.Format("15:04:05.000"), k)
}

// segments are the intervals during which the recorder was seen running:
// consecutive lines closer than hbGap.
func (r *run) segments() [][2]time.Time {
	var out [][2]time.Time
	cur := [2]time.Time{r.beats[0], r.beats[0]}
	for _, b := range r.beats[1:] {
		if b.Sub(cur[1]) > hbGap {
			out = append(out, cur)
			cur = [2]time.Time{b, b}
			continue
		}
		cur[1] = b
	}
	return append(out, cur)
}

// readRuns parses the record file; malformed lines (a write cut by a
// crash) are counted, not fatal. A recorder pid reused later starts a new
// run at its next S line.
func readRuns(path string) ([]*run, int, error) {
	data, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		return nil, 0, nil
	}
	if err != nil {
		return nil, 0, err
	}
	byPID := map[int]*run{}
	var runs []*run
	bad := 0
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	for sc.Scan() {
		f := strings.SplitN(sc.Text(), " ", 4)
		if len(f) < 3 {
			bad++
			continue
		}
		ns, err1 := strconv.ParseInt(f[1], 10, 64)
		pid, err2 := strconv.Atoi(f[2])
		if err1 != nil || err2 != nil {
			bad++
			continue
		}
		at := time.Unix(0, ns)
		switch f[0] {
		case "S":
			if len(f) != 4 {
				bad++
				continue
			}
			var c struct {
				JobName      string `json:"jobName"`
				TaskID       string `json:"taskId"`
				ShardingItem int    `json:"shardingItem"`
			}
			if json.Unmarshal([]byte(f[3]), &c) != nil {
				bad++
				continue
			}
			parts := strings.Split(c.TaskID, "@-@") // job@-@items@-@READY@-@ip@-@pid
			if len(parts) != 5 {
				bad++
				continue
			}
			hp, _ := strconv.Atoi(parts[4])
			r := &run{job: c.JobName, item: c.ShardingItem, instance: parts[3] + "@-@" + parts[4],
				hostPID: hp, recPID: pid, start: at, beats: []time.Time{at}, end: at}
			byPID[pid] = r
			runs = append(runs, r)
		case "H", "E", "C":
			r := byPID[pid]
			if r == nil || r.kind != 0 {
				bad++
				continue
			}
			r.beats = append(r.beats, at)
			r.end = at
			if f[0] != "H" {
				r.kind = f[0][0]
			}
		default:
			bad++
		}
	}
	slices.SortStableFunc(runs, func(a, b *run) int { return a.start.Compare(b.start) })
	return runs, bad, sc.Err()
}
