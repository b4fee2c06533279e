package cloud

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/ejob-io/ejob/core/config"
	"github.com/ejob-io/ejob/host/httpapi"
	"github.com/ejob-io/ejob/spi"
)

// api serves upstream ElasticJob-Cloud's REST paths over s's state.
type api struct {
	s   *Scheduler
	srv *httpapi.Server
}

// Routes registers the cloud REST API on mux (httpapi.Options.Routes).
func (s *Scheduler) Routes(srv *httpapi.Server, mux *httpapi.Mux) {
	a := api{s: s, srv: srv}
	mux.HandleFunc("POST /api/app", a.registerApp)
	mux.HandleFunc("PUT /api/app", a.updateApp)
	mux.HandleFunc("GET /api/app/list", a.listApps)
	mux.HandleFunc("GET /api/app/{appName}", a.getApp)
	mux.HandleFunc("GET /api/app/{appName}/disable", a.appDisabled)
	mux.HandleFunc("POST /api/app/{appName}/disable", func(w http.ResponseWriter, r *http.Request) { a.setAppDisabled(w, r, true) })
	mux.HandleFunc("POST /api/app/{appName}/enable", func(w http.ResponseWriter, r *http.Request) { a.setAppDisabled(w, r, false) })
	mux.HandleFunc("DELETE /api/app/{appName}", a.deleteApp)

	mux.HandleFunc("POST /api/job/register", a.registerJob)
	mux.HandleFunc("PUT /api/job/update", a.updateJob)
	mux.HandleFunc("DELETE /api/job/{jobName}/deregister", a.deregisterJob)
	mux.HandleFunc("POST /api/job/trigger", a.trigger)
	mux.HandleFunc("POST /api/job/{jobName}/disable", func(w http.ResponseWriter, r *http.Request) { a.setJobDisabled(w, r, true) })
	mux.HandleFunc("POST /api/job/{jobName}/enable", func(w http.ResponseWriter, r *http.Request) { a.setJobDisabled(w, r, false) })
	mux.HandleFunc("GET /api/job/jobs", a.listJobs)
	// GET /api/job/jobs/{jobName} and GET /api/job/{jobName}/disable
	// overlap (a job named "jobs"), so one route serves both.
	mux.HandleFunc("GET /api/job/{a}/{b}", func(w http.ResponseWriter, r *http.Request) {
		switch x, y := r.PathValue("a"), r.PathValue("b"); {
		case x == "jobs":
			a.getJob(w, r, y)
		case y == "disable":
			a.jobDisabled(w, r, x)
		default:
			httpapi.Fail(w, http.StatusNotFound, fmt.Sprintf("no endpoint %s %s", r.Method, r.URL.Path))
		}
	})
	mux.HandleFunc("GET /api/job/tasks/running", a.runningTasks)
	mux.HandleFunc("GET /api/job/tasks/ready", a.readyTasks)
	mux.HandleFunc("GET /api/job/tasks/failover", a.failoverTasks)
	mux.HandleFunc("GET /api/job/events/executions", a.executions)
	mux.HandleFunc("GET /api/job/events/statusTraces", a.statusTraces)
	mux.HandleFunc("GET /api/job/statistics/jobs/executionType", a.executionTypes)
	mux.HandleFunc("GET /api/job/statistics/tasks/results", a.taskResultsSince)
	mux.HandleFunc("GET /api/job/statistics/tasks/results/{period}", a.taskResults)
	mux.HandleFunc("GET /api/job/statistics/tasks/running", func(w http.ResponseWriter, r *http.Request) { a.runningStatistics(w, r, spi.TaskRunningStatistics) })
	mux.HandleFunc("GET /api/job/statistics/jobs/running", func(w http.ResponseWriter, r *http.Request) { a.runningStatistics(w, r, spi.JobRunningStatistics) })
	mux.HandleFunc("GET /api/job/statistics/jobs/register", a.registerStatistics)
	mux.HandleFunc("POST /api/operate/reconcile/explicit", func(w http.ResponseWriter, r *http.Request) { a.reconcile(w, r, false) })
	mux.HandleFunc("POST /api/operate/reconcile/implicit", func(w http.ResponseWriter, r *http.Request) { a.reconcile(w, r, true) })
	mux.HandleFunc("GET /api/operate/sandbox", a.sandbox)
}

func (a api) ctx(r *http.Request) (context.Context, context.CancelFunc) {
	return context.WithTimeout(r.Context(), 30*time.Second)
}

// answer writes model, or err with its status.
func (a api) answer(w http.ResponseWriter, r *http.Request, op, name string, model any, err error) {
	if r.Method != http.MethodGet {
		kv := []any{"user", httpapi.UserOf(r), "op", op, "name", name}
		if err != nil {
			a.srv.Audit(hclog.Warn, append(kv, "result", "error", "error", err)...)
		} else {
			a.srv.Audit(hclog.Info, append(kv, "result", "ok")...)
			a.s.nudge()
		}
	}
	if err == nil {
		httpapi.OK(w, model)
		return
	}
	httpapi.Fail(w, statusOf(err), err.Error())
}

// statusOf is the errorCode of err: its sentinel's, else 500.
func statusOf(err error) int {
	for _, m := range []struct {
		err    error
		status int
	}{
		{ErrInvalid, http.StatusBadRequest}, {ErrNotFound, http.StatusNotFound}, {ErrConflict, http.StatusConflict},
		{ErrNoStatistics, http.StatusNotImplemented}, {ErrStandby, http.StatusServiceUnavailable}, {ErrTooSoon, http.StatusTooManyRequests},
	} {
		if errors.Is(err, m.err) {
			return m.status
		}
	}
	return http.StatusInternalServerError
}

func (a api) registerApp(w http.ResponseWriter, r *http.Request) { a.putApp(w, r, true) }
func (a api) updateApp(w http.ResponseWriter, r *http.Request)   { a.putApp(w, r, false) }

func (a api) putApp(w http.ResponseWriter, r *http.Request, create bool) {
	data, ok := a.srv.ReadBody(w, r)
	if !ok {
		return
	}
	op := map[bool]string{true: "register app", false: "update app"}[create]
	app, err := DecodeApp(data)
	if err != nil {
		a.answer(w, r, op, "", nil, err)
		return
	}
	ctx, cancel := a.ctx(r)
	defer cancel()
	path := pathApps + "/" + app.AppName
	if create {
		err = a.s.st.create(ctx, path, marshalYAML(app))
		if errors.Is(err, errNodeExists) {
			err = fmt.Errorf("%w: app '%s' already existed.", ErrConflict, app.AppName)
		}
	} else {
		var there bool
		if there, err = a.s.st.exists(ctx, path); err == nil && !there {
			err = fmt.Errorf("%w: app '%s' does not exist; register it with POST /api/app", ErrNotFound, app.AppName)
		}
		if err == nil {
			err = a.s.st.put(ctx, path, marshalYAML(app))
		}
	}
	a.answer(w, r, op, app.AppName, true, err)
}

func (a api) listApps(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := a.ctx(r)
	defer cancel()
	apps, err := a.s.st.Apps(ctx)
	a.answer(w, r, "", "", apps, err)
}

func (a api) getApp(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := a.ctx(r)
	defer cancel()
	name := r.PathValue("appName")
	app, ok, err := a.s.st.App(ctx, name)
	if err == nil && !ok {
		err = fmt.Errorf("%w: no app '%s'", ErrNotFound, name)
	}
	a.answer(w, r, "", name, app, err)
}

func (a api) appDisabled(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := a.ctx(r)
	defer cancel()
	d, err := a.s.st.AppDisabled(ctx, r.PathValue("appName"))
	a.answer(w, r, "", "", d, err)
}

func (a api) setAppDisabled(w http.ResponseWriter, r *http.Request, disable bool) {
	ctx, cancel := a.ctx(r)
	defer cancel()
	name := r.PathValue("appName")
	op := map[bool]string{true: "disable app", false: "enable app"}[disable]
	_, ok, err := a.s.st.App(ctx, name)
	if err == nil && !ok {
		err = fmt.Errorf("%w: no app '%s'", ErrNotFound, name)
	}
	if err == nil {
		err = a.s.st.setFlag(ctx, pathDisableApp+"/"+name, disable, a.s.queueSize)
	}
	a.answer(w, r, op, name, true, err)
}

func (a api) deleteApp(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := a.ctx(r)
	defer cancel()
	name := r.PathValue("appName")
	_, ok, err := a.s.st.App(ctx, name)
	if err == nil && !ok {
		err = fmt.Errorf("%w: no app '%s'", ErrNotFound, name)
	}
	var jobs []Job
	if err == nil {
		jobs, err = a.s.st.Jobs(ctx)
	}
	for _, j := range jobs {
		if err == nil && j.AppName == name {
			err = a.s.st.deregister(ctx, j.JobName)
		}
	}
	for _, p := range []string{pathDisableApp + "/" + name, pathApps + "/" + name} {
		if err == nil {
			err = a.s.st.remove(ctx, p)
		}
	}
	a.answer(w, r, "delete app", name, true, err)
}

func (a api) registerJob(w http.ResponseWriter, r *http.Request) { a.putJob(w, r, true) }
func (a api) updateJob(w http.ResponseWriter, r *http.Request)   { a.putJob(w, r, false) }

func (a api) putJob(w http.ResponseWriter, r *http.Request, create bool) {
	data, ok := a.srv.ReadBody(w, r)
	if !ok {
		return
	}
	op := map[bool]string{true: "register job", false: "update job"}[create]
	j, err := DecodeJob(data)
	if err != nil {
		a.answer(w, r, op, "", nil, err)
		return
	}
	ctx, cancel := a.ctx(r)
	defer cancel()
	err = a.s.st.checkJob(ctx, j, create)
	if err == nil && create {
		err = a.s.st.create(ctx, pathJobs+"/"+j.JobName, marshalYAML(j))
		if errors.Is(err, errNodeExists) {
			err = fmt.Errorf("%w: Job '%s' already existed.", ErrConflict, j.JobName)
		}
	} else if err == nil {
		err = a.s.st.put(ctx, pathJobs+"/"+j.JobName, marshalYAML(j))
	}
	a.answer(w, r, op, j.JobName, true, err)
}

func (a api) deregisterJob(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := a.ctx(r)
	defer cancel()
	name := r.PathValue("jobName")
	_, ok, err := a.s.st.Job(ctx, name)
	if err == nil && !ok {
		err = fmt.Errorf("%w: no job '%s'", ErrNotFound, name)
	}
	if err == nil {
		err = a.s.st.deregister(ctx, name)
	}
	a.answer(w, r, "deregister job", name, true, err)
}

// trigger is POST /api/job/trigger; the body is the job name, as text or
// as a JSON string.
func (a api) trigger(w http.ResponseWriter, r *http.Request) {
	data, ok := a.srv.ReadBody(w, r)
	if !ok {
		return
	}
	name := strings.TrimSpace(string(data))
	if strings.HasPrefix(name, `"`) {
		if err := json.Unmarshal([]byte(name), &name); err != nil {
			a.answer(w, r, "trigger job", "", nil, fmt.Errorf("%w: body: %v (want the job name, as text or a JSON string)", ErrInvalid, err))
			return
		}
	}
	if err := config.CheckJobName(name); err != nil {
		a.answer(w, r, "trigger job", "", nil, fmt.Errorf("%w: body: %v (want the job name)", ErrInvalid, err))
		return
	}
	ctx, cancel := a.ctx(r)
	defer cancel()
	j, ok, err := a.s.st.Job(ctx, name)
	switch {
	case err != nil:
	case !ok:
		err = fmt.Errorf("%w: no job '%s'", ErrNotFound, name)
	case j.JobExecutionType == Daemon:
		err = fmt.Errorf("%w: Daemon job '%s' cannot support trigger.", ErrInvalid, name)
	default:
		var disabled bool
		if disabled, err = a.s.st.JobDisabled(ctx, name); err == nil && disabled {
			err = fmt.Errorf("%w: job '%s' is disabled; enable it first", ErrConflict, name)
		}
		if err == nil {
			err = a.s.st.AddRound(ctx, name, j.Misfire, a.s.queueSize)
		}
	}
	a.answer(w, r, "trigger job", name, true, err)
}

func (a api) jobDisabled(w http.ResponseWriter, r *http.Request, name string) {
	ctx, cancel := a.ctx(r)
	defer cancel()
	d, err := a.s.st.jobOff(ctx, name)
	a.answer(w, r, "", name, d, err)
}

func (a api) setJobDisabled(w http.ResponseWriter, r *http.Request, disable bool) {
	ctx, cancel := a.ctx(r)
	defer cancel()
	name := r.PathValue("jobName")
	op := map[bool]string{true: "disable job", false: "enable job"}[disable]
	_, ok, err := a.s.st.Job(ctx, name)
	if err == nil && !ok {
		err = fmt.Errorf("%w: no job '%s'", ErrNotFound, name)
	}
	if err == nil {
		err = a.s.st.setFlag(ctx, pathDisableJob+"/"+name, disable, a.s.queueSize)
	}
	a.answer(w, r, op, name, true, err)
}

func (a api) listJobs(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := a.ctx(r)
	defer cancel()
	jobs, err := a.s.st.Jobs(ctx)
	a.answer(w, r, "", "", jobs, err)
}

func (a api) getJob(w http.ResponseWriter, r *http.Request, name string) {
	ctx, cancel := a.ctx(r)
	defer cancel()
	j, ok, err := a.s.st.Job(ctx, name)
	if err == nil && !ok {
		err = fmt.Errorf("%w: no job '%s'", ErrNotFound, name)
	}
	a.answer(w, r, "", name, j, err)
}

// MetaInfo names a task's job and items.
type MetaInfo struct {
	JobName       string `json:"jobName"`
	ShardingItems []int  `json:"shardingItems"`
}

// RunningTask is one entry of GET /api/job/tasks/running. State, Reason
// and StartTime are the launcher's view (the leader's latest pass; a
// standby asks the launcher); StartTime is when the item's process
// started (nil before). Idle is a DAEMON item between two fires.
type RunningTask struct {
	ID        string     `json:"id"`
	MetaInfo  MetaInfo   `json:"metaInfo"`
	Type      string     `json:"type"`
	SlaveID   string     `json:"slaveId"`
	Idle      bool       `json:"idle"`
	State     string     `json:"state"`
	Reason    string     `json:"reason"`
	StartTime *time.Time `json:"startTime,omitempty"`
}

// ReadyTask is one entry of GET /api/job/tasks/ready.
type ReadyTask struct {
	JobName string `json:"jobName"`
	Times   string `json:"times"`
}

// FailoverTask is one entry of GET /api/job/tasks/failover.
type FailoverTask struct {
	TaskInfo       MetaInfo `json:"taskInfo"`
	OriginalTaskID string   `json:"originalTaskId"`
}

func (a api) runningTasks(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := a.ctx(r)
	defer cancel()
	running, err := a.s.st.Running(ctx)
	reasons, lerr := a.s.itemStatuses(ctx)
	if err == nil {
		err = lerr
	}
	out := []RunningTask{}
	for _, job := range slices.Sorted(maps.Keys(running)) {
		for _, item := range slices.Sorted(maps.Keys(running[job])) {
			tid := running[job][item]
			t := RunningTask{ID: tid.String(), MetaInfo: MetaInfo{JobName: job, ShardingItems: []int{item}}, Type: tid.Type, SlaveID: tid.Slave}
			if st, ok := reasons[fireItem{job, tid.Fire, item}]; ok {
				t.State, t.Reason, t.Idle = string(st.State), st.Reason, st.Idle
				if !st.Started.IsZero() {
					t.StartTime = &st.Started
				}
			}
			out = append(out, t)
		}
	}
	a.answer(w, r, "", "", out, err)
}

func (a api) readyTasks(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := a.ctx(r)
	defer cancel()
	ready, err := a.s.st.Ready(ctx)
	out := []ReadyTask{}
	for _, job := range slices.Sorted(maps.Keys(ready)) {
		out = append(out, ReadyTask{JobName: job, Times: strconv.Itoa(ready[job])})
	}
	a.answer(w, r, "", "", out, err)
}

func (a api) failoverTasks(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := a.ctx(r)
	defer cancel()
	fo, err := a.s.st.Failover(ctx)
	out := []FailoverTask{}
	for _, job := range slices.Sorted(maps.Keys(fo)) {
		for _, item := range slices.Sorted(maps.Keys(fo[job])) {
			out = append(out, FailoverTask{TaskInfo: MetaInfo{JobName: job, ShardingItems: []int{item}}, OriginalTaskID: fo[job][item].String()})
		}
	}
	a.answer(w, r, "", "", out, err)
}

func (a api) executionTypes(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := a.ctx(r)
	defer cancel()
	jobs, err := a.s.st.Jobs(ctx)
	var t, d int
	for _, j := range jobs {
		switch j.JobExecutionType {
		case Transient:
			t++
		case Daemon:
			d++
		}
	}
	a.answer(w, r, "", "", map[string]int{"transientJobCount": t, "daemonJobCount": d}, err)
}

// MaxPerPage bounds per_page of the event queries.
const MaxPerPage = 500

// paging reads per_page (default 10) and page (default 1).
func paging(r *http.Request) (offset, limit int, err error) {
	limit, page := 10, 1
	for name, dst := range map[string]*int{"per_page": &limit, "page": &page} {
		if v := r.URL.Query().Get(name); v != "" {
			n, perr := strconv.Atoi(v)
			if perr != nil || n < 1 || name == "per_page" && n > MaxPerPage || n > 1<<20 {
				return 0, 0, fmt.Errorf("%w: query parameter %s: %q: want 1 to %d", ErrInvalid, name, v, map[string]int{"per_page": MaxPerPage, "page": 1 << 20}[name])
			}
			*dst = n
		}
	}
	return (page - 1) * limit, limit, nil
}

// total is what a page tells of the rows: the rows up to its end, plus one
// when more follow (a lower bound then).
func total(offset, n int, more bool) int {
	if more {
		return offset + n + 1
	}
	return offset + n
}

// executions is GET /api/job/events/executions: the items' execution
// events, newest first, from elasticjob.tracing ({total: 0, rows: []}
// without it, as upstream without an event-trace database).
func (a api) executions(w http.ResponseWriter, r *http.Request) {
	offset, limit, err := paging(r)
	if err != nil || a.s.tracer == nil {
		a.answer(w, r, "", "", httpapi.Page[httpapi.ExecutionRow]{Rows: []httpapi.ExecutionRow{}}, err)
		return
	}
	q := r.URL.Query()
	eq := spi.ExecutionQuery{Config: a.s.tcfg, JobName: q.Get("jobName"), TaskID: q.Get("taskId"), IP: q.Get("ip"), Offset: offset, Limit: limit}
	if v := q.Get("isSuccess"); v != "" {
		b, perr := strconv.ParseBool(v)
		if perr != nil {
			a.answer(w, r, "", "", nil, fmt.Errorf("%w: query parameter isSuccess: %q: want true or false", ErrInvalid, v))
			return
		}
		eq.Success = &b
	}
	ctx, cancel := a.ctx(r)
	defer cancel()
	p, err := a.s.tracer.QueryExecutions(ctx, eq)
	out := httpapi.Page[httpapi.ExecutionRow]{Rows: []httpapi.ExecutionRow{}, Total: total(offset, len(p.Executions), p.More)}
	for _, x := range p.Executions {
		row := httpapi.ExecutionRow{ID: x.ID, Hostname: x.Hostname, IP: x.IP, TaskID: x.TaskID, JobName: x.JobName, Source: x.Source,
			ShardingItem: x.ShardingItem, Success: x.Success, FailureCause: x.FailureCause}
		if !x.StartTime.IsZero() {
			row.StartTime = &x.StartTime
		}
		if !x.CompleteTime.IsZero() {
			row.CompleteTime = &x.CompleteTime
		}
		out.Rows = append(out.Rows, row)
	}
	a.answer(w, r, "", "", out, err)
}

// statusTraces is GET /api/job/events/statusTraces: the items' status
// events (TASK_STAGING, TASK_RUNNING, TASK_FINISHED, TASK_FAILED,
// TASK_LOST), newest first.
func (a api) statusTraces(w http.ResponseWriter, r *http.Request) {
	offset, limit, err := paging(r)
	if err != nil || a.s.tracer == nil {
		a.answer(w, r, "", "", httpapi.Page[httpapi.StatusRow]{Rows: []httpapi.StatusRow{}}, err)
		return
	}
	q := r.URL.Query()
	ctx, cancel := a.ctx(r)
	defer cancel()
	p, err := a.s.tracer.QueryStatuses(ctx, spi.StatusQuery{Config: a.s.tcfg, JobName: q.Get("jobName"), TaskID: q.Get("taskId"),
		State: q.Get("state"), ExecutionType: q.Get("executionType"), Offset: offset, Limit: limit})
	out := httpapi.Page[httpapi.StatusRow]{Rows: []httpapi.StatusRow{}, Total: total(offset, len(p.Statuses), p.More)}
	for _, x := range p.Statuses {
		row := httpapi.StatusRow{ID: x.ID, JobName: x.JobName, OriginalTaskID: x.OriginalTaskID, TaskID: x.TaskID, SlaveID: x.SlaveID,
			ExecutionType: x.ExecutionType, ShardingItems: x.ShardingItems, State: x.State, Message: x.Message}
		if !x.CreationTime.IsZero() {
			row.CreationTime = &x.CreationTime
		}
		out.Rows = append(out.Rows, row)
	}
	a.answer(w, r, "", "", out, err)
}
