package console

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"time"

	"github.com/ejob-io/ejob/core/config"
	"github.com/ejob-io/ejob/core/cron"
	"github.com/ejob-io/ejob/core/lifecycle"
	"github.com/ejob-io/ejob/host/httpapi"
	"github.com/ejob-io/ejob/spi"
	"github.com/ejob-io/ejob/spi/redact"
	"github.com/hashicorp/go-hclog"
)

// The console's own endpoints (behind httpapi.Authenticate: a guest may
// only GET). Everything they read or write goes through core/lifecycle,
// core/cron and the host's tracing sink, as the REST API does.
func (c *Console) apiRoutes(mux *httpapi.Mux) {
	mux.HandleFunc("GET /console/api/overview", c.overview)
	mux.HandleFunc("GET /console/api/jobs", c.jobs)
	mux.HandleFunc("GET /console/api/cron/preview", c.cronPreview)
	mux.HandleFunc("GET /console/api/jobs/{jobName}/config", c.getConfig)
	mux.HandleFunc("PUT /console/api/jobs/{jobName}/config", c.putConfig)
	// The job detail and recent executions (host/httpapi/console.go).
	c.srv.ConsoleRoutes(mux)
	mux.HandleFunc("/console/api/", func(w http.ResponseWriter, r *http.Request) {
		httpapi.Fail(w, http.StatusNotFound, "no endpoint "+r.Method+" "+r.URL.Path)
	})
}

// Tuning of the endpoints.
const (
	// requestTimeout bounds one endpoint.
	requestTimeout = 30 * time.Second
	// recentWindow is how far back the overview and the jobs table look in
	// the event trace.
	recentWindow = 24 * time.Hour
	// recentRows bounds the executions read for the jobs' last results.
	recentRows = 2000
	// failureRows bounds the failed executions read for the overview.
	failureRows = 1000
	// lateGrace: a fire is late when no run started within this after it.
	lateGrace = time.Minute
	// lateChecks bounds the per-job trace queries of one overview.
	lateChecks = 100
	// previewMax bounds n of the cron preview.
	previewMax = 50
)

// JobRow is one row of the jobs page.
type JobRow struct {
	JobName string           `json:"jobName"`
	Status  lifecycle.Status `json:"status"`
	// State is ejob's own state of the job (lifecycle.State); Status is
	// upstream's.
	State              lifecycle.State `json:"state"`
	Description        string          `json:"description"`
	Cron               string          `json:"cron"`
	TimeZone           string          `json:"timeZone"`
	ShardingTotalCount int             `json:"shardingTotalCount"`
	InstanceCount      int             `json:"instanceCount"`
	// NextFireTime is the next fire after now (nil: none, a one-off job or
	// a cron that does not parse, then CronError says why).
	NextFireTime *time.Time `json:"nextFireTime"`
	CronError    string     `json:"cronError,omitempty"`
	// ConfigError is why the job's config node is refused (status
	// CONFIG_ERROR: it does not parse or breaks a bound); the job then
	// does not fire.
	ConfigError string `json:"configError,omitempty"`
	// LastRun is the newest execution in the event trace (nil: none in
	// the recent ones, or no event trace).
	LastRun *RunBrief `json:"lastRun"`
}

// RunBrief is one execution as the pages show it.
type RunBrief struct {
	Item         int        `json:"item"`
	IP           string     `json:"ip"`
	StartTime    time.Time  `json:"startTime"`
	CompleteTime *time.Time `json:"completeTime"`
	Success      bool       `json:"success"`
	FailureCause string     `json:"failureCause,omitempty"`
}

func runBrief(e spi.ExecutionEvent) *RunBrief {
	b := &RunBrief{Item: e.ShardingItem, IP: e.IP, StartTime: e.StartTime, Success: e.Success, FailureCause: e.FailureCause}
	if !e.CompleteTime.IsZero() {
		t := e.CompleteTime
		b.CompleteTime = &t
	}
	return b
}

// JobsModel is GET /console/api/jobs.
type JobsModel struct {
	Jobs []JobRow `json:"jobs"`
	// Trace says whether LastRun comes from an event trace, and TraceError
	// why it could not be read.
	Trace      bool      `json:"trace"`
	TraceError string    `json:"traceError,omitempty"`
	Now        time.Time `json:"now"`
}

// jobRows reads every job with its next fire time.
func (c *Console) jobRows(ctx context.Context, now time.Time) ([]JobRow, error) {
	briefs, err := lifecycle.Jobs(ctx, c.srv.Options().Client)
	if err != nil {
		return nil, err
	}
	rows := make([]JobRow, len(briefs))
	for i, b := range briefs {
		rows[i] = JobRow{JobName: b.JobName, Status: b.Status, State: b.State, Description: b.Description, Cron: b.Cron, TimeZone: b.TimeZone,
			ShardingTotalCount: b.ShardingTotalCount, InstanceCount: b.InstanceCount, ConfigError: b.ConfigError}
		if b.Cron == "" || b.Status == lifecycle.StatusConfigError {
			continue
		}
		s, err := schedule(b.Cron, b.TimeZone)
		if err != nil {
			rows[i].CronError = err.Error()
			continue
		}
		if next := s.Next(now); !next.IsZero() {
			rows[i].NextFireTime = &next
		}
	}
	return rows, nil
}

func schedule(expr, tz string) (cron.Schedule, error) {
	loc, err := cron.LoadZone(tz)
	if err != nil {
		return nil, err
	}
	return cron.ParseSchedule(expr, loc)
}

func (c *Console) jobs(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), requestTimeout)
	defer cancel()
	now := time.Now()
	rows, err := c.jobRows(ctx, now)
	if err != nil {
		httpapi.Answer(w, nil, err)
		return
	}
	m := JobsModel{Jobs: rows, Now: now}
	if tr, cfg := c.tracer(); tr != nil {
		m.Trace = true
		page, err := tr.QueryExecutions(ctx, spi.ExecutionQuery{Config: cfg, From: now.Add(-recentWindow), Limit: recentRows})
		if err != nil {
			m.TraceError = err.Error()
		} else {
			latest := map[string]*RunBrief{}
			for _, e := range page.Executions {
				if _, seen := latest[e.JobName]; !seen {
					latest[e.JobName] = runBrief(e)
				}
			}
			for i := range m.Jobs {
				m.Jobs[i].LastRun = latest[m.Jobs[i].JobName]
			}
		}
	}
	httpapi.OK(w, m)
}

// tracer is the host's event-trace sink, or nil.
func (c *Console) tracer() (spi.Tracer, map[string]string) {
	o := c.srv.Options()
	return o.Tracer, o.TracerConfig
}

// OverviewModel is GET /console/api/overview.
type OverviewModel struct {
	Now time.Time `json:"now"`
	// Jobs counts the jobs by state (lifecycle.State).
	Jobs struct {
		Total       int `json:"total"`
		Ready       int `json:"ready"`
		Running     int `json:"running"`
		NeverRun    int `json:"neverRun"`
		Resharding  int `json:"resharding"`
		Disabled    int `json:"disabled"`
		Crashed     int `json:"crashed"`
		ConfigError int `json:"configError"`
	} `json:"jobs"`
	// ConfigErrors names the jobs whose config node is refused (status
	// CONFIG_ERROR), with why.
	ConfigErrors []JobProblem `json:"configErrors"`
	// Crashed and Resharding name the jobs in those states.
	Crashed    []string `json:"crashed"`
	Resharding []string `json:"resharding"`
	// BadCron names the jobs whose cron does not parse, with why.
	BadCron []JobProblem `json:"badCron"`
	// Servers and Instances online (instances of any job).
	Servers   int `json:"servers"`
	Instances int `json:"instances"`
	// Registry is the registry and this server's session with it.
	Registry RegistryState `json:"registry"`
	// Trace: whether an event trace is configured; TraceError why it could
	// not be read. Failures are the jobs with failed executions since
	// Since; Late the jobs whose expected fire has no run.
	Trace      bool         `json:"trace"`
	TraceError string       `json:"traceError,omitempty"`
	Since      time.Time    `json:"since"`
	Failures   []JobFailure `json:"failures"`
	Late       []LateJob    `json:"late"`
	// LateUnchecked counts jobs whose lateness was not checked (more than
	// lateChecks candidates).
	LateUnchecked int `json:"lateUnchecked"`
}

// JobProblem names a job and what is wrong.
type JobProblem struct {
	JobName string `json:"jobName"`
	Problem string `json:"problem"`
}

// RegistryState is the registry as the overview shows it.
type RegistryState struct {
	ZKAddressList string `json:"zkAddressList"`
	Namespace     string `json:"namespace"`
	// Ready is /readyz: this server's registry session is live; NotReady
	// says why not.
	Ready    bool   `json:"ready"`
	NotReady string `json:"notReady,omitempty"`
}

// JobFailure is a job's failed executions in the window.
type JobFailure struct {
	JobName string    `json:"jobName"`
	Count   int       `json:"count"`
	Last    RunBrief  `json:"last"`
	Items   []int     `json:"items"`
	IPs     []string  `json:"ips"`
	First   time.Time `json:"first"`
}

// LateJob is a job whose expected fire has no recorded run.
type LateJob struct {
	JobName  string    `json:"jobName"`
	Expected time.Time `json:"expected"`
	// LastStart is the newest recorded run's start (nil: none in the
	// window).
	LastStart *time.Time `json:"lastStart"`
}

func (c *Console) overview(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), requestTimeout)
	defer cancel()
	now := time.Now()
	o := c.srv.Options()
	m := OverviewModel{Now: now, Since: now.Add(-recentWindow), Crashed: []string{}, Resharding: []string{}, BadCron: []JobProblem{}, ConfigErrors: []JobProblem{},
		Failures: []JobFailure{}, Late: []LateJob{}}
	m.Registry = RegistryState{ZKAddressList: o.Registry.ZKAddressList, Namespace: o.Registry.Namespace, Ready: true}
	if o.Ready != nil {
		if err := o.Ready(); err != nil {
			m.Registry.Ready, m.Registry.NotReady = false, err.Error()
		}
	}
	rows, err := c.jobRows(ctx, now)
	if err != nil {
		httpapi.Answer(w, nil, err)
		return
	}
	m.Jobs.Total = len(rows)
	for _, j := range rows {
		switch j.State {
		case lifecycle.StateReady:
			m.Jobs.Ready++
		case lifecycle.StateRunning:
			m.Jobs.Running++
		case lifecycle.StateNeverRun:
			m.Jobs.NeverRun++
		case lifecycle.StateDisabled:
			m.Jobs.Disabled++
		case lifecycle.StateCrashed:
			m.Jobs.Crashed++
			m.Crashed = append(m.Crashed, j.JobName)
		case lifecycle.StateResharding:
			m.Jobs.Resharding++
			m.Resharding = append(m.Resharding, j.JobName)
		case lifecycle.StateConfigError:
			m.Jobs.ConfigError++
			m.ConfigErrors = append(m.ConfigErrors, JobProblem{JobName: j.JobName, Problem: j.ConfigError})
		}
		if j.CronError != "" {
			m.BadCron = append(m.BadCron, JobProblem{JobName: j.JobName, Problem: j.CronError})
		}
	}
	servers, err := lifecycle.Servers(ctx, o.Client)
	if err != nil {
		httpapi.Answer(w, nil, err)
		return
	}
	instances := map[string]bool{}
	for _, s := range servers {
		if s.InstancesNum > 0 {
			m.Servers++
		}
		for _, id := range s.Instances {
			instances[id] = true
		}
	}
	m.Instances = len(instances)
	if tr, cfg := c.tracer(); tr != nil {
		m.Trace = true
		if err := c.traceOverview(ctx, tr, cfg, rows, now, &m); err != nil {
			m.TraceError = err.Error()
		}
	}
	httpapi.OK(w, m)
}

// traceOverview fills the failures and late jobs of m from the trace.
func (c *Console) traceOverview(ctx context.Context, tr spi.Tracer, cfg map[string]string, rows []JobRow, now time.Time, m *OverviewModel) error {
	no := false
	failed, err := tr.QueryExecutions(ctx, spi.ExecutionQuery{Config: cfg, Success: &no, From: m.Since, Limit: failureRows})
	if err != nil {
		return err
	}
	byJob := map[string]*JobFailure{}
	var order []string
	for _, e := range failed.Executions {
		if e.CompleteTime.IsZero() && e.FailureCause == "" {
			continue // still running, not failed (a failure stored before its start has no complete time)
		}
		f, ok := byJob[e.JobName]
		if !ok {
			f = &JobFailure{JobName: e.JobName, Last: *runBrief(e)}
			byJob[e.JobName] = f
			order = append(order, e.JobName)
		}
		f.Count++
		f.First = e.StartTime
		if !slices.Contains(f.Items, e.ShardingItem) {
			f.Items = append(f.Items, e.ShardingItem)
		}
		if !slices.Contains(f.IPs, e.IP) {
			f.IPs = append(f.IPs, e.IP)
		}
	}
	for _, name := range order {
		slices.Sort(byJob[name].Items)
		m.Failures = append(m.Failures, *byJob[name])
	}
	// Late: a running job (OK, instances, a cron) whose last expected fire
	// before now-lateGrace, within the window, has no run started at or
	// after it.
	recent, err := tr.QueryExecutions(ctx, spi.ExecutionQuery{Config: cfg, From: m.Since, Limit: recentRows})
	if err != nil {
		return err
	}
	lastStart := map[string]time.Time{}
	for _, e := range recent.Executions {
		if _, ok := lastStart[e.JobName]; !ok {
			lastStart[e.JobName] = e.StartTime
		}
	}
	checks := 0
	for _, j := range rows {
		if j.Status != lifecycle.StatusOK || j.InstanceCount == 0 || j.Cron == "" || j.CronError != "" {
			continue
		}
		s, err := schedule(j.Cron, j.TimeZone)
		if err != nil {
			continue
		}
		expected, ok := previousFire(s, now.Add(-lateGrace), m.Since)
		if !ok {
			continue
		}
		// Fire times are whole seconds; a run starts a little after.
		if last, seen := lastStart[j.JobName]; seen && !last.Before(expected.Add(-time.Second)) {
			continue
		}
		if !recent.More {
			// Every run of the window was read: none since expected.
			m.Late = append(m.Late, lateJob(j.JobName, expected, lastStart))
			continue
		}
		if checks >= lateChecks {
			m.LateUnchecked++
			continue
		}
		checks++
		page, err := tr.QueryExecutions(ctx, spi.ExecutionQuery{Config: cfg, JobName: j.JobName, From: m.Since, Limit: 1})
		if err != nil {
			return err
		}
		if len(page.Executions) > 0 {
			lastStart[j.JobName] = page.Executions[0].StartTime
			if !page.Executions[0].StartTime.Before(expected.Add(-time.Second)) {
				continue
			}
		}
		m.Late = append(m.Late, lateJob(j.JobName, expected, lastStart))
	}
	return nil
}

func lateJob(name string, expected time.Time, lastStart map[string]time.Time) LateJob {
	l := LateJob{JobName: name, Expected: expected}
	if t, ok := lastStart[name]; ok {
		l.LastStart = &t
	}
	return l
}

// previousFire is s's last fire time at or before before and after
// since, if any. It searches forward from growing windows, so a
// frequent cron costs few steps and a rare one few windows.
func previousFire(s cron.Schedule, before, since time.Time) (time.Time, bool) {
	for window := 2 * time.Minute; ; window *= 8 {
		from := before.Add(-window)
		if from.Before(since) {
			from = since
		}
		var last time.Time
		for t := s.Next(from.Add(-time.Second)); !t.IsZero() && !t.After(before); t = s.Next(t) {
			last = t
		}
		if !last.IsZero() {
			return last, true
		}
		if !from.After(since) {
			return time.Time{}, false
		}
	}
}

// PreviewModel is GET /console/api/cron/preview.
type PreviewModel struct {
	Cron      string      `json:"cron"`
	TimeZone  string      `json:"timeZone"`
	Kind      string      `json:"kind"`
	FireTimes []time.Time `json:"fireTimes"`
	// Error is why cron does not parse in timeZone (then FireTimes is
	// empty): an answer, not a failed request, so a form typing a cron
	// asks without filling the browser's console with errors.
	Error string `json:"error,omitempty"`
}

// cronPreview is GET /console/api/cron/preview?cron=&timeZone=&n=: the
// next n (default 5) fire times of any cron ejob accepts, or the parser's
// message in Error.
func (c *Console) cronPreview(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	n := 5
	if s := q.Get("n"); s != "" {
		v, err := strconv.Atoi(s)
		if err != nil || v < 1 || v > previewMax {
			httpapi.Fail(w, http.StatusBadRequest, fmt.Sprintf("n: want 1 to %d, got %q", previewMax, s))
			return
		}
		n = v
	}
	expr, tz := q.Get("cron"), q.Get("timeZone")
	if expr == "" {
		httpapi.Fail(w, http.StatusBadRequest, "cron is empty (a one-off job has no fire times)")
		return
	}
	m := PreviewModel{Cron: expr, TimeZone: tz, Kind: cron.KindOf(expr).String(), FireTimes: []time.Time{}}
	times, err := cron.Preview(expr, tz, time.Now(), n)
	if err != nil {
		m.Error = err.Error()
	} else if times != nil {
		m.FireTimes = times
	}
	httpapi.OK(w, m)
}

// ConfigModel is a job's configuration for the edit form.
type ConfigModel struct {
	Config lifecycle.ConfigJSON `json:"config"`
	// Version is the config node's version: PUT writes only over it.
	Version int32 `json:"version"`
	// MaskedProps are the props whose value is shown masked (a secret);
	// sent back unchanged, they keep their stored value.
	MaskedProps []string `json:"maskedProps"`
}

func (c *Console) getConfig(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), requestTimeout)
	defer cancel()
	st, err := lifecycle.GetConfig(ctx, c.srv.Options().Client, r.PathValue("jobName"))
	if err != nil {
		httpapi.Answer(w, nil, err)
		return
	}
	httpapi.OK(w, configModel(st))
}

func configModel(st lifecycle.StoredConfig) ConfigModel {
	cj := lifecycle.ToConfigJSON(st.Config)
	keys := []string{}
	for k, v := range cj.Props {
		if v != st.Config.Props[k] {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	return ConfigModel{Config: cj, Version: st.Version, MaskedProps: keys}
}

// SaveError is the answer of a refused PUT: the message and, per key,
// what is wrong.
type SaveError struct {
	Message string            `json:"message"`
	Fields  map[string]string `json:"fields"`
}

// putConfig is PUT /console/api/jobs/{jobName}/config: {config, version}
// from the edit form, validated as `ejob job set` validates
// (lifecycle.ValidateConfig, every key, the cron in its zone), written
// only when valid and when the stored version is still version. Refused:
// 400 (or 409) with a SaveError model and nothing written.
func (c *Console) putConfig(w http.ResponseWriter, r *http.Request) {
	job := r.PathValue("jobName")
	data, err := io.ReadAll(http.MaxBytesReader(w, r.Body, httpapi.DefaultMaxBody))
	if err != nil {
		httpapi.Fail(w, http.StatusRequestEntityTooLarge, "read request body: "+err.Error())
		return
	}
	var req struct {
		Config  json.RawMessage `json:"config"`
		Version *int32          `json:"version"`
	}
	ctx, cancel := context.WithTimeout(r.Context(), requestTimeout)
	defer cancel()
	err = func() error {
		if err := json.Unmarshal(data, &req); err != nil {
			return fmt.Errorf("%w: malformed JSON body: %w", lifecycle.ErrInvalid, err)
		}
		if req.Version == nil || len(req.Config) == 0 {
			return fmt.Errorf("%w: want {config, version}", lifecycle.ErrInvalid)
		}
		cj, err := lifecycle.DecodeConfigJSON(req.Config)
		if err != nil {
			return err
		}
		if cj.JobName != job {
			return fmt.Errorf("%w: jobName is %q: the job name cannot be changed (it is %q)", lifecycle.ErrInvalid, cj.JobName, job)
		}
		client := c.srv.Options().Client
		stored, err := lifecycle.GetConfig(ctx, client, job)
		if err != nil {
			return err
		}
		if stored.Version != *req.Version {
			return fmt.Errorf("%w: the configuration of %s changed since the form was opened (version %d, now %d): reload it",
				lifecycle.ErrConflict, job, *req.Version, stored.Version)
		}
		if cj.Props, err = redact.Unmask(cj.Props, stored.Config.Props); err != nil {
			return fmt.Errorf("%w: %w", lifecycle.ErrInvalid, err)
		}
		cfg := cj.Apply(stored.Config)
		if err := lifecycle.ValidateConfig(cfg); err != nil {
			return err
		}
		return lifecycle.UpdateConfig(ctx, client, cfg, lifecycle.IfVersion(stored.Version))
	}()
	user := httpapi.UserOf(r)
	if err != nil {
		c.srv.Audit(hclog.Warn, "user", user, "op", "update config", "job", job, "result", "error", "error", err)
		st := httpapi.Status(err)
		msg := err.Error()
		httpapi.WriteEnvelope(w, st, httpapi.Envelope{ErrorCode: st, ErrorMsg: &msg, Model: SaveError{Message: msg, Fields: fieldErrors(err)}})
		return
	}
	c.srv.Audit(hclog.Info, "user", user, "op", "update config", "job", job, "result", "ok")
	st, err := lifecycle.GetConfig(ctx, c.srv.Options().Client, job)
	if err != nil {
		httpapi.Answer(w, nil, err)
		return
	}
	httpapi.OK(w, configModel(st))
}

// fieldErrors collects the config.FieldError values in err's tree by key.
func fieldErrors(err error) map[string]string {
	out := map[string]string{}
	var walk func(error)
	walk = func(err error) {
		if err == nil {
			return
		}
		if fe, ok := err.(*config.FieldError); ok {
			msg := fe.Msg
			if fe.Err != nil {
				if msg != "" {
					msg += ": "
				}
				msg += fe.Err.Error()
			}
			if prev, dup := out[fe.Field]; dup {
				msg = prev + "; " + msg
			}
			out[fe.Field] = msg
			return
		}
		switch u := err.(type) {
		case interface{ Unwrap() []error }:
			for _, e := range u.Unwrap() {
				walk(e)
			}
		case interface{ Unwrap() error }:
			walk(u.Unwrap())
		}
	}
	walk(err)
	return out
}
