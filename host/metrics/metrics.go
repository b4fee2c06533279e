package metrics

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/ejob-io/ejob/core/reg"
)

// Namespace prefixes every metric name.
const Namespace = "ejob"

// Metrics holds one process's collectors, on a registry of its own.
type Metrics struct {
	reg *prometheus.Registry

	sessionUp  prometheus.Gauge
	reconnects *prometheus.CounterVec

	jobs *Jobs

	live      atomic.Bool
	jobsReady atomic.Bool
	needsJobs atomic.Bool
	// configErrs are the jobs' configuration errors (JobConfigErrors).
	configErrs atomic.Pointer[func() map[string]error]
}

// New returns the collectors, registered on a new registry with the Go
// runtime and process collectors.
func New() *Metrics {
	m := &Metrics{reg: prometheus.NewRegistry()}
	m.reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	m.sessionUp = prometheus.NewGauge(prometheus.GaugeOpts{Namespace: Namespace, Name: "registry_session_up",
		Help: "1 while the registry (ZooKeeper) connection has a live session, 0 while it is suspended or lost."})
	m.reconnects = prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: Namespace, Name: "registry_reconnects_total",
		Help: "Registry connection changes after the first connection, by kind: reconnected (same session), new_session (after a lost one)."},
		[]string{"kind"})
	m.reg.MustRegister(m.sessionUp, m.reconnects)
	m.jobs = &Jobs{m: newJobMetrics(m.reg)}
	return m
}

// Registry is the registry the collectors are on.
func (m *Metrics) Registry() *prometheus.Registry { return m.reg }

// Handler serves /metrics.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{Registry: m.reg})
}

// WatchSession follows c's connection state until ctx ends: the session
// gauge, the reconnect counters and readiness.
func (m *Metrics) WatchSession(ctx context.Context, c reg.Client) {
	for ev := range c.WatchConnection(ctx) {
		switch ev.State {
		case reg.StateConnected:
			m.setLive(true)
		case reg.StateReconnected:
			m.setLive(true)
			m.reconnects.WithLabelValues("reconnected").Inc()
		case reg.StateNewSession:
			m.setLive(true)
			m.reconnects.WithLabelValues("new_session").Inc()
		case reg.StateSuspended, reg.StateLost:
			m.setLive(false)
		}
	}
}

func (m *Metrics) setLive(up bool) {
	m.live.Store(up)
	if up {
		m.sessionUp.Set(1)
	} else {
		m.sessionUp.Set(0)
	}
}

// ExpectJobs makes Ready require JobsRegistered (a host's; `ejob serve`
// runs no jobs).
func (m *Metrics) ExpectJobs() { m.needsJobs.Store(true) }

// JobsRegistered records that the host's jobs have registered.
func (m *Metrics) JobsRegistered() { m.jobsReady.Store(true) }

// Errors of Ready.
var (
	ErrSessionDown   = errors.New("the registry session is not live (ZooKeeper unreachable or session lost)")
	ErrNoJobsStarted = errors.New("no job is registered yet")
)

// Ready is nil when the process is ready: its registry session is live
// and, for a host, its jobs have registered.
func (m *Metrics) Ready() error {
	var errs []error
	if m.needsJobs.Load() && !m.jobsReady.Load() {
		errs = append(errs, ErrNoJobsStarted)
	}
	if !m.live.Load() {
		errs = append(errs, ErrSessionDown)
	}
	return errors.Join(errs...)
}

// TraceCounts are the counters of the host's event-tracing writer
// (core/tracing.Recorder).
type TraceCounts interface {
	Dropped() int64
	Written() int64
	FailedWrites() int64
}

// Tracing registers the event-tracing writer's counters, read from rec at
// each scrape. Called once, by a host with elasticjob.tracing.
func (m *Metrics) Tracing(rec TraceCounts) {
	counter := func(name, help string, read func() int64) prometheus.Collector {
		return prometheus.NewCounterFunc(prometheus.CounterOpts{Namespace: Namespace, Name: name, Help: help},
			func() float64 { return float64(read()) })
	}
	m.reg.MustRegister(
		counter("tracing_events_dropped_total", "Execution events not recorded: the tracing queue was full, or the store unreachable at shutdown.", rec.Dropped),
		counter("tracing_events_written_total", "Execution events the tracing sink accepted.", rec.Written),
		counter("tracing_write_errors_total", "Tracing sink writes that failed (each batch is retried).", rec.FailedWrites),
	)
}

// JobConfigErrors registers ejob_job_config_error: per job of the host, 1
// while its configuration in the registry is invalid (it does not fire), 0
// otherwise, read from errs at each scrape (nil for a valid one); and
// makes ReadyDetail name the invalid ones. Called once, by a host.
func (m *Metrics) JobConfigErrors(errs func() map[string]error) {
	m.configErrs.Store(&errs)
	m.reg.MustRegister(configErrorCollector{errs: errs, desc: prometheus.NewDesc(prometheus.BuildFQName(Namespace, "", "job_config_error"),
		"1 while the job's configuration in the registry does not parse or breaks a bound (the job does not fire), else 0.",
		[]string{"job"}, nil)})
}

// ReadyDetail is what /readyz adds to a ready answer: a line per job of
// the host whose configuration in the registry is invalid, sorted by job.
// Such a job does not fire, but the host runs its other jobs, so it is
// still ready.
func (m *Metrics) ReadyDetail() []string {
	p := m.configErrs.Load()
	if p == nil {
		return nil
	}
	var out []string
	for job, err := range (*p)() {
		if err != nil {
			out = append(out, fmt.Sprintf("job %q: configuration error, not firing: %v", job, err))
		}
	}
	slices.Sort(out)
	return out
}

// configErrorCollector is ejob_job_config_error.
type configErrorCollector struct {
	errs func() map[string]error
	desc *prometheus.Desc
}

func (c configErrorCollector) Describe(ch chan<- *prometheus.Desc) { ch <- c.desc }

func (c configErrorCollector) Collect(ch chan<- prometheus.Metric) {
	for job, err := range c.errs() {
		v := 0.0
		if err != nil {
			v = 1
		}
		ch <- prometheus.MustNewConstMetric(c.desc, prometheus.GaugeValue, v, job)
	}
}
