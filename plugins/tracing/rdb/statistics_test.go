package rdb_test

import (
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/ejob-io/ejob/plugins/tracing/rdb"
	"github.com/ejob-io/ejob/sdk"
	"github.com/ejob-io/ejob/sdk/sdktest"
	"github.com/ejob-io/ejob/spi"
)

// statisticsSuite adds rows to every statistics table, reads them back
// (all, from a time, the latest) and checks the columns are upstream's.
func statisticsSuite(t *testing.T, st spi.StatisticsStore, cfg map[string]string, columnsOf func(table string) []string) {
	ctx := ctxT(t)
	for _, table := range spi.StatisticsTables() {
		var rows []spi.StatisticsRow
		for i := range 3 {
			r := spi.StatisticsRow{StatisticsTime: base().Add(time.Duration(i) * time.Minute), CreationTime: base().Add(time.Duration(i)*time.Minute + time.Second)}
			if table.TaskResult() {
				r.SuccessCount, r.FailedCount = 10+i, i
			} else {
				r.Count = 5 + i
			}
			rows = append(rows, r)
		}
		// Added out of order: the query orders by statistics time.
		if _, err := st.AddStatistics(ctx, spi.StatisticsAddRequest{Config: cfg, Table: table, Rows: []spi.StatisticsRow{rows[2], rows[0]}}); err != nil {
			t.Fatalf("%s: add: %v", table, err)
		}
		if _, err := st.AddStatistics(ctx, spi.StatisticsAddRequest{Config: cfg, Table: table, Rows: rows[1:2]}); err != nil {
			t.Fatalf("%s: add: %v", table, err)
		}
		strip := func(rs []spi.StatisticsRow) []spi.StatisticsRow {
			out := []spi.StatisticsRow{}
			for _, r := range rs {
				if r.ID == 0 {
					t.Errorf("%s: row %+v has no id", table, r)
				}
				r.ID = 0
				out = append(out, r)
			}
			return out
		}
		all, err := st.QueryStatistics(ctx, spi.StatisticsQuery{Config: cfg, Table: table})
		if err != nil || all.More || !reflect.DeepEqual(strip(all.Rows), rows) {
			t.Errorf("%s: all rows %+v, %v; want %+v", table, all, err, rows)
		}
		from, err := st.QueryStatistics(ctx, spi.StatisticsQuery{Config: cfg, Table: table, From: rows[1].StatisticsTime, Limit: 1})
		if err != nil || !from.More || !reflect.DeepEqual(strip(from.Rows), rows[1:2]) {
			t.Errorf("%s: from the second, limit 1: %+v, %v", table, from, err)
		}
		latest, err := st.QueryStatistics(ctx, spi.StatisticsQuery{Config: cfg, Table: table, Latest: true})
		if err != nil || !reflect.DeepEqual(strip(latest.Rows), rows[2:]) {
			t.Errorf("%s: latest %+v, %v", table, latest, err)
		}
		if columnsOf != nil {
			want := map[bool]string{true: "id,success_count,failed_count,statistics_time,creation_time", false: "id,running_count,statistics_time,creation_time"}[table.TaskResult()]
			if table == spi.JobRegisterStatistics {
				want = "id,registered_count,statistics_time,creation_time"
			}
			if got := strings.ToLower(strings.Join(columnsOf(string(table)), ",")); got != want {
				t.Errorf("%s: columns %s, want upstream's %s", table, got, want)
			}
		}
	}
	_, err := st.QueryStatistics(ctx, spi.StatisticsQuery{Config: cfg, Table: "JOB_EXECUTION_LOG"})
	if !errors.Is(err, spi.ErrInvalidConfig) || !strings.Contains(err.Error(), "JOB_EXECUTION_LOG") {
		t.Errorf("query of a table that is not a statistics table: %v, want ErrInvalidConfig naming it", err)
	}
}

func TestStatisticsTables(t *testing.T) {
	forEach(t, func(t *testing.T, b backend) {
		cfg, db := b.fresh(t)
		statisticsSuite(t, newTracer(t), cfg, func(table string) []string {
			rows, err := db.Query("SELECT * FROM " + table + " WHERE 1 = 0")
			if err != nil {
				t.Fatal(err)
			}
			defer rows.Close()
			cols, _ := rows.Columns()
			return cols
		})
	})
}

func TestStatisticsThroughTheTransport(t *testing.T) {
	cfg, _ := backends()[0].fresh(t)
	p := sdktest.Connect(t, sdk.Plugins{Version: "test", Tracing: map[string]spi.Tracer{rdb.TypeName: newTracer(t)}})
	remote, ok := p.Tracer("rdb").(spi.StatisticsStore)
	if !ok {
		t.Fatal("the transport's tracer is not a StatisticsStore")
	}
	statisticsSuite(t, remote, cfg, nil)
}
