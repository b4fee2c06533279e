package instance

import (
	"fmt"
	"strconv"
	"strings"
)

// ExecutionTypeReady is the only execution type Lite puts in a task id.
const ExecutionTypeReady = "READY"

// TaskID is the task id of one getShardingContexts call:
// "{jobName}@-@{items joined by ,}@-@READY@-@{ip}@-@{pid}". It has no
// UUID or timestamp: the same instance with the same items gets the same
// task id on every trigger, misfire re-runs included.
type TaskID struct {
	JobName string
	// Items in the order of the local item list (ascending from sharding,
	// or the failover list's order).
	Items         []int
	ExecutionType string // "READY"
	// Instance is the executing instance; its IP is upstream's slaveId.
	Instance ID
}

// NewTaskID returns the task id string for a job, its items and the
// executing instance id (use FallbackInstanceID when it is unknown).
func NewTaskID(jobName string, items []int, instanceID string) string {
	if len(items) == 1 { // most executions: one allocation
		return jobName + Separator + strconv.Itoa(items[0]) + Separator + ExecutionTypeReady + Separator + instanceID
	}
	parts := make([]string, len(items))
	for i, it := range items {
		parts[i] = strconv.Itoa(it)
	}
	return jobName + Separator + strings.Join(parts, ",") + Separator + ExecutionTypeReady + Separator + instanceID
}

// String formats t.
func (t TaskID) String() string {
	typ := t.ExecutionType
	if typ == "" {
		typ = ExecutionTypeReady
	}
	parts := make([]string, len(t.Items))
	for i, it := range t.Items {
		parts[i] = strconv.Itoa(it)
	}
	return t.JobName + Separator + strings.Join(parts, ",") + Separator + typ + Separator + t.Instance.String()
}

// ParseTaskID parses a task id as upstream's TaskContext.from: split on
// "@-@" (Java String.split, trailing empty parts dropped) into exactly 5
// parts; the items part is empty or a ","-separated list of ints.
func ParseTaskID(s string) (TaskID, error) {
	parts := strings.Split(s, Separator)
	for len(parts) > 0 && parts[len(parts)-1] == "" {
		parts = parts[:len(parts)-1]
	}
	if len(parts) != 5 {
		return TaskID{}, fmt.Errorf("%w: task id %q has %d parts separated by %q, want 5", ErrInvalidID, s, len(parts), Separator)
	}
	t := TaskID{JobName: parts[0], ExecutionType: parts[2], Instance: ID{IP: parts[3], PID: parts[4]}}
	if parts[1] != "" {
		for _, p := range strings.Split(parts[1], ",") {
			it, err := strconv.ParseInt(p, 10, 32)
			if err != nil {
				return TaskID{}, fmt.Errorf("%w: task id %q: item %q is not an integer", ErrInvalidID, s, p)
			}
			t.Items = append(t.Items, int(it))
		}
	}
	return t, nil
}
