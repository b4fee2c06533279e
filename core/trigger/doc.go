// Package trigger is the process-wide trigger loop: one goroutine owns a
// timer heap over every job of the process and one time.Timer for the
// earliest entry, so an idle job costs a heap entry, not a goroutine or a
// timer (the shape of robfig/cron's run loop).
//
// Executions run on worker goroutines the loop reuses: an execution goes
// to an idle worker, or to a new one when none is idle (executions never
// wait for one another), and a worker exits once idle for
// Options.WorkerIdle (within twice that), so an idle loop keeps none.
//
// A job runs at most one execution at a time. A fire that comes due while
// the job's previous execution is still going is not queued: the execution
// takes it (Fire.TakeMissed, woken by Fire.OnSkip) to serve it itself before
// it returns (ElasticJob's misfire loop re-runs the items right after the
// execution); what it does not take is reported to the job's MisfireFunc
// once it ends, which is what Quartz does with ElasticJob's settings (one
// worker thread per job, misfireThreshold 1 ms, misfire policy "do
// nothing", JobTriggerListener; upstream's JobScheduleController and its
// misfire handling). misfire.go holds this part, and names the packages
// that handle a misfire after it.
//
// A job added with AddAhead may have its schedule fires dispatched a short
// lead ahead of their time (ahead.go): its execution does its preparation
// (core/coord's registry requests) before the fire time and waits for it
// with Fire.AwaitScheduled. Misfires are still decided at the fire time.
package trigger
