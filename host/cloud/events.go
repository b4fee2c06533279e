package cloud

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"strconv"
	"time"

	"github.com/ejob-io/ejob/spi"
)

// events collects a pass's status and execution events for the tracer
// (upstream's JobStatusTraceEvent and JobExecutionEvent); a batch the
// tracer did not take is written again with the next pass's.
type events struct {
	pending spi.TraceWriteRequest
	// originals are the original task ids of the FAILOVER items this
	// leader launched, by job, fire and item, for their status events.
	originals map[fireItem]string
}

// eventID is the id an item run's start and completion share: derived
// from its job, item and fire (not the slave, known later), so a new
// leader completes the start its predecessor wrote.
func eventID(tid TaskID) string {
	h := sha256.Sum256([]byte(tid.Job + "\x00" + strconv.Itoa(tid.Item) + "\x00" + tid.Fire))
	return hex.EncodeToString(h[:16])
}

func randomID() string { return newFireID()[1:] + strconv.FormatInt(time.Now().UnixNano()%1e6, 36) }

// status records a status event of tid.
func (ev *events) status(tid TaskID, state, message string) {
	orig := ev.originals[fireItem{tid.Job, tid.Fire, tid.Item}]
	if state == "TASK_FINISHED" || state == "TASK_FAILED" || state == "TASK_LOST" {
		delete(ev.originals, fireItem{tid.Job, tid.Fire, tid.Item})
	}
	ev.pending.Statuses = append(ev.pending.Statuses, spi.StatusEvent{ID: randomID(), JobName: tid.Job, TaskID: tid.String(), OriginalTaskID: orig,
		SlaveID: tid.Slave, ExecutionType: tid.Type, ShardingItems: "[" + strconv.Itoa(tid.Item) + "]", State: state,
		Message: message, CreationTime: time.Now()})
}

func source(tid TaskID) string {
	if tid.Type == "FAILOVER" {
		return "FAILOVER"
	}
	return "NORMAL_TRIGGER"
}

// started records an item's start.
func (ev *events) started(tid TaskID, st spi.ItemStatus) {
	start := st.Started
	if start.IsZero() {
		start = time.Now()
	}
	ev.pending.Executions = append(ev.pending.Executions, spi.ExecutionEvent{ID: eventID(tid), Hostname: st.Node, IP: st.Node,
		TaskID: tid.String(), JobName: tid.Job, Source: source(tid), ShardingItem: tid.Item, StartTime: start})
}

// finished records an item's completion, after its start when none was
// recorded (the item ended between two passes): a store takes a
// completion as the update of its start.
func (ev *events) finished(tid TaskID, st spi.ItemStatus, startRecorded bool) {
	if !startRecorded {
		ev.started(tid, st)
	}
	start, end := st.Started, st.Finished
	if end.IsZero() {
		end = time.Now()
	}
	if start.IsZero() {
		start = end
	}
	x := spi.ExecutionEvent{ID: eventID(tid), Hostname: st.Node, IP: st.Node, TaskID: tid.String(), JobName: tid.Job,
		Source: source(tid), ShardingItem: tid.Item, StartTime: start, CompleteTime: end, Success: st.State == spi.ItemSucceeded}
	if !x.Success {
		x.FailureCause = string(st.State) + ": " + st.Reason
	}
	ev.pending.Executions = append(ev.pending.Executions, x)
	state := map[spi.ItemState]string{spi.ItemSucceeded: "TASK_FINISHED", spi.ItemFailed: "TASK_FAILED", spi.ItemLost: "TASK_LOST"}[st.State]
	ev.status(tid, state, st.Reason)
}

// flush writes the pending events; on failure they are kept.
func (s *Scheduler) flush(ctx context.Context, ev *events) {
	if s.tracer == nil || len(ev.pending.Executions)+len(ev.pending.Statuses) == 0 {
		ev.pending = spi.TraceWriteRequest{}
		return
	}
	ev.pending.Config = s.tcfg
	if _, err := s.tracer.Write(ctx, ev.pending); err != nil {
		s.log.Warn("event trace not written; retrying with the next pass", "events", len(ev.pending.Executions)+len(ev.pending.Statuses), "error", err)
		return
	}
	ev.pending = spi.TraceWriteRequest{}
}
