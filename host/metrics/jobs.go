package metrics

import (
	"context"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/ejob-io/ejob/core/executor"
	"github.com/ejob-io/ejob/core/kernel"
	"github.com/ejob-io/ejob/host/pluginhost"
)

// jobMetrics are the per-job and per-plugin collectors.
type jobMetrics struct {
	fires, items, retries, misfires, failovers, reshardings, late *prometheus.CounterVec
	itemDuration, fireDelay                                       *prometheus.HistogramVec
	pluginRestarts, pluginCallErrors                              *prometheus.CounterVec
}

func newJobMetrics(r *prometheus.Registry) jobMetrics {
	counter := func(name, help string, labels ...string) *prometheus.CounterVec {
		c := prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: Namespace, Name: name, Help: help}, labels)
		r.MustRegister(c)
		return c
	}
	hist := func(name, help string) *prometheus.HistogramVec {
		h := prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: Namespace, Name: name, Help: help,
			Buckets: []float64{.005, .01, .05, .1, .5, 1, 5, 10, 30, 60, 300, 900, 3600}}, []string{"job"})
		r.MustRegister(h)
		return h
	}
	return jobMetrics{
		fires:        counter("job_fires_total", "Fires of a job that started on this instance (scheduled, triggered, failover and misfire catch-up runs).", "job"),
		items:        counter("job_items_total", "Sharding items run on this instance, by result: success, or failure after the last try.", "job", "result"),
		retries:      counter("job_item_retries_total", "Retries of failed items (ejob.retry.max).", "job"),
		misfires:     counter("job_misfires_total", "Fires skipped because the job was still running.", "job"),
		failovers:    counter("job_failovers_total", "Items of crashed instances this instance claimed and ran.", "job"),
		reshardings:  counter("job_reshardings_total", "Assignments of the items committed by this instance as leader.", "job"),
		late:         counter("job_late_total", "Watchdog checks that found the job past its fire time by more than the late threshold (1 min).", "job"),
		itemDuration: hist("job_item_duration_seconds", "Run time of one sharding item, retries included."),
		fireDelay:    hist("job_fire_delay_seconds", "Delay from a fire's scheduled time to its start."),
		pluginRestarts: counter("plugin_restarts_total",
			"Launches of a plugin process after its previous process exited or was killed.", "plugin"),
		pluginCallErrors: counter("plugin_call_errors_total", "Calls to a plugin that returned an error.", "plugin"),
	}
}

// Jobs is what a host hands the kernel and the plugin catalog: the
// scheduler's Observer, the executor's Events and the catalog's Observer,
// all counting into m.
type Jobs struct {
	executor.NopEvents
	m jobMetrics
}

var (
	_ kernel.Observer     = (*Jobs)(nil)
	_ executor.Events     = (*Jobs)(nil)
	_ pluginhost.Observer = (*Jobs)(nil)
)

// Jobs returns the observers that count into m.
func (m *Metrics) Jobs() *Jobs { return m.jobs }

// Fired implements kernel.Observer.
func (j *Jobs) Fired(job string, delay time.Duration) {
	j.m.fires.WithLabelValues(job).Inc()
	j.m.fireDelay.WithLabelValues(job).Observe(delay.Seconds())
}

// ItemRetried implements kernel.Observer.
func (j *Jobs) ItemRetried(job string, _ int) { j.m.retries.WithLabelValues(job).Inc() }

// Misfired implements kernel.Observer.
func (j *Jobs) Misfired(job string, skipped int) {
	j.m.misfires.WithLabelValues(job).Add(float64(skipped))
}

// FailedOver implements kernel.Observer.
func (j *Jobs) FailedOver(job string, _ int) { j.m.failovers.WithLabelValues(job).Inc() }

// Resharded implements kernel.Observer.
func (j *Jobs) Resharded(job string) { j.m.reshardings.WithLabelValues(job).Inc() }

// Late implements kernel.Observer.
func (j *Jobs) Late(job string, _ time.Duration) { j.m.late.WithLabelValues(job).Inc() }

// ItemCompleted implements executor.Events.
func (j *Jobs) ItemCompleted(_ context.Context, ev executor.ItemEvent) {
	result := "success"
	if !ev.Success {
		result = "failure"
	}
	j.m.items.WithLabelValues(ev.JobName, result).Inc()
	j.m.itemDuration.WithLabelValues(ev.JobName).Observe(ev.Complete.Sub(ev.Start).Seconds())
}

// Restarted implements pluginhost.Observer.
func (j *Jobs) Restarted(plugin string) { j.m.pluginRestarts.WithLabelValues(plugin).Inc() }

// CallFailed implements pluginhost.Observer.
func (j *Jobs) CallFailed(plugin string) { j.m.pluginCallErrors.WithLabelValues(plugin).Inc() }
