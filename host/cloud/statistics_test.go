package cloud

import (
	"context"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/ejob-io/ejob/core/reg/embedded"
	"github.com/ejob-io/ejob/plugins/tracing/rdb"
	"github.com/ejob-io/ejob/spi"
)

// statsRig is a scheduler on an embedded registry whose tracer is the RDB
// plugin's library on an SQLite file.
type statsRig struct {
	t    *testing.T
	ctx  context.Context
	s    *Scheduler
	tr   *rdb.Tracer
	tcfg map[string]string
}

func newStatsRig(t *testing.T) *statsRig {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	c, err := embedded.NewServer().Connect("cloud")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	tr := rdb.New()
	t.Cleanup(func() { tr.Close() })
	tcfg := map[string]string{"driver": "sqlite", "url": filepath.Join(t.TempDir(), "trace.db")}
	r := &statsRig{t: t, ctx: ctx, tr: tr, tcfg: tcfg}
	r.s = r.scheduler(c)
	return r
}

func (r *statsRig) scheduler(c *embedded.Client) *Scheduler {
	return New(Options{Client: c, ID: "test:1", Tracer: r.tr, TracerConfig: r.tcfg})
}

// running records n running items of job.
func (r *statsRig) running(job string, n int) {
	r.t.Helper()
	_ = r.s.st.remove(r.ctx, pathRunning+"/"+job)
	for i := range n {
		tid := TaskID{Job: job, Item: i, Type: "READY", Slave: "node", Fire: "f1"}
		if err := r.s.st.create(r.ctx, pathRunning+"/"+job+"/"+itemNode(job, i), []byte(tid.String())); err != nil {
			r.t.Fatal(err)
		}
	}
	if err := r.s.st.put(r.ctx, pathJobs+"/"+job, marshalYAML(Job{JobName: job, AppName: "app", JobExecutionType: Transient, ShardingTotalCount: n})); err != nil {
		r.t.Fatal(err)
	}
}

func (r *statsRig) write(at time.Time) {
	r.t.Helper()
	if err := r.s.writeStatistics(r.ctx, at); err != nil {
		r.t.Fatal(err)
	}
}

// rows reads table as "HH:MM success/failed" or "HH:MM count".
type statRow struct {
	At            string
	Success, Fail int
	Count         int
}

func (r *statsRig) rows(table spi.StatisticsTable) []statRow {
	r.t.Helper()
	p, err := r.tr.QueryStatistics(r.ctx, spi.StatisticsQuery{Config: r.tcfg, Table: table})
	if err != nil {
		r.t.Fatal(err)
	}
	var out []statRow
	for _, x := range p.Rows {
		out = append(out, statRow{At: x.StatisticsTime.Format("01-02 15:04"), Success: x.SuccessCount, Fail: x.FailedCount, Count: x.Count})
	}
	return out
}

func at(day, hour, minute, second int) time.Time {
	return time.Date(2026, 3, day, hour, minute, second, 0, time.Local)
}

func TestStatisticsRowsAndGaps(t *testing.T) {
	r := newStatsRig(t)
	r.running("a", 2)
	r.running("b", 1)
	r.s.stats.count(true)
	r.s.stats.count(true)
	r.s.stats.count(false)
	r.write(at(1, 10, 0, 30))
	for table, want := range map[spi.StatisticsTable][]statRow{
		spi.TaskResultMinute:      {{At: "03-01 10:00", Success: 2, Fail: 1}},
		spi.TaskResultHour:        {{At: "03-01 10:00", Success: 2, Fail: 1}},
		spi.TaskResultDay:         {{At: "03-01 00:00", Success: 2, Fail: 1}},
		spi.TaskRunningStatistics: {{At: "03-01 10:00", Count: 3}},
		spi.JobRunningStatistics:  {{At: "03-01 10:00", Count: 2}},
		spi.JobRegisterStatistics: {{At: "03-01 00:00", Count: 2}},
	} {
		if got := r.rows(table); !reflect.DeepEqual(got, want) {
			t.Errorf("%s: %+v, want %+v", table, got, want)
		}
	}

	// Five minutes on: the empty minutes are filled, results with zeros
	// (nothing ended in them), running counts with the latest row's; the
	// hour and the day have their rows.
	r.running("b", 0)
	r.s.stats.count(true)
	r.write(at(1, 10, 3, 10))
	r.write(at(1, 10, 3, 50)) // same slot: nothing more
	if got, want := r.rows(spi.TaskResultMinute), []statRow{{At: "03-01 10:00", Success: 2, Fail: 1}, {At: "03-01 10:01"}, {At: "03-01 10:02"},
		{At: "03-01 10:03", Success: 1}}; !reflect.DeepEqual(got, want) {
		t.Errorf("minute results %+v, want %+v", got, want)
	}
	if got, want := r.rows(spi.TaskRunningStatistics), []statRow{{At: "03-01 10:00", Count: 3}, {At: "03-01 10:01", Count: 3}, {At: "03-01 10:02", Count: 3},
		{At: "03-01 10:03", Count: 2}}; !reflect.DeepEqual(got, want) {
		t.Errorf("running tasks %+v, want %+v", got, want)
	}
	if got := r.rows(spi.TaskResultHour); len(got) != 1 {
		t.Errorf("hour rows %+v, want the one of 10:00", got)
	}

	// The next hour's row counts what ended since the last hour row, once.
	r.s.stats.count(false)
	r.write(at(1, 11, 0, 5))
	if got, want := r.rows(spi.TaskResultHour), []statRow{{At: "03-01 10:00", Success: 2, Fail: 1}, {At: "03-01 11:00", Success: 1, Fail: 1}}; !reflect.DeepEqual(got, want) {
		t.Errorf("hour results %+v, want %+v", got, want)
	}
	if got := r.rows(spi.TaskResultMinute); len(got) != 61 || got[60] != (statRow{At: "03-01 11:00", Fail: 1}) {
		t.Errorf("%d minute rows (last %+v), want 61 ending with 11:00's one failure", len(got), got[len(got)-1])
	}

	// Another leader writing the same slot leaves the row there alone.
	other := r.scheduler(r.s.c.(*embedded.Client))
	other.stats.count(true)
	if err := other.writeStatistics(r.ctx, at(1, 11, 0, 40)); err != nil {
		t.Fatal(err)
	}
	if got := r.rows(spi.TaskResultMinute); len(got) != 61 {
		t.Errorf("%d minute rows after a second leader's write, want 61", len(got))
	}

	// After ten days without a leader, empty slots are filled for the last
	// seven days only.
	r.write(at(11, 11, 0, 5))
	days := r.rows(spi.TaskResultDay)
	if first := days[1].At; first != "03-04 00:00" || days[len(days)-1].At != "03-11 00:00" {
		t.Errorf("day rows after a gap: %+v, want 03-01, then 03-04 to 03-11", days)
	}
}
