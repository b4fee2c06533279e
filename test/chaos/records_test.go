package chaos

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
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

// runLog reads the record file incrementally: each read parses only the
// complete lines appended since the last one (a soak run's file grows to
// megabytes, and the suite polls it while it waits on a fault).
type runLog struct {
	mu    sync.Mutex
	path  string
	off   int64
	byPID map[int]*run
	runs  []*run
	bad   int
}

func newRunLog(path string) *runLog { return &runLog{path: path, byPID: map[int]*run{}} }

// read returns every run so far, sorted by start, and the count of
// malformed lines (a write cut by a crash) so far. A recorder pid reused
// later starts a new run at its next S line.
func (l *runLog) read() ([]*run, int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	f, err := os.Open(l.path)
	if os.IsNotExist(err) {
		return nil, 0, nil
	}
	if err != nil {
		return nil, 0, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.NewSectionReader(f, l.off, 1<<62))
	if err != nil {
		return nil, 0, err
	}
	if end := bytes.LastIndexByte(data, '\n'); end >= 0 {
		data = data[:end+1]
	} else {
		data = nil
	}
	l.off += int64(len(data))
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	for sc.Scan() {
		l.line(sc.Text())
	}
	if err := sc.Err(); err != nil {
		return nil, 0, err
	}
	slices.SortStableFunc(l.runs, func(a, b *run) int { return a.start.Compare(b.start) })
	return slices.Clone(l.runs), l.bad, nil
}

func (l *runLog) line(text string) {
	f := strings.SplitN(text, " ", 4)
	if len(f) < 3 {
		l.bad++
		return
	}
	ns, err1 := strconv.ParseInt(f[1], 10, 64)
	pid, err2 := strconv.Atoi(f[2])
	if err1 != nil || err2 != nil {
		l.bad++
		return
	}
	at := time.Unix(0, ns)
	switch f[0] {
	case "S":
		if len(f) != 4 {
			l.bad++
			return
		}
		var c struct {
			JobName      string `json:"jobName"`
			TaskID       string `json:"taskId"`
			ShardingItem int    `json:"shardingItem"`
		}
		if json.Unmarshal([]byte(f[3]), &c) != nil {
			l.bad++
			return
		}
		parts := strings.Split(c.TaskID, "@-@") // job@-@items@-@READY@-@ip@-@pid
		if len(parts) != 5 {
			l.bad++
			return
		}
		hp, _ := strconv.Atoi(parts[4])
		r := &run{job: c.JobName, item: c.ShardingItem, instance: parts[3] + "@-@" + parts[4],
			hostPID: hp, recPID: pid, start: at, beats: []time.Time{at}, end: at}
		l.byPID[pid] = r
		l.runs = append(l.runs, r)
	case "H", "E", "C":
		r := l.byPID[pid]
		if r == nil || r.kind != 0 {
			l.bad++
			return
		}
		r.beats = append(r.beats, at)
		r.end = at
		if f[0] != "H" {
			r.kind = f[0][0]
		}
	default:
		l.bad++
	}
}
