package executor_test

import (
	"context"
	"regexp"
	"slices"
	"testing"

	"github.com/ejob-io/ejob/core/executor"
)

// seen records the events it gets, by name.
type seen struct {
	executor.NopEvents
	got []string
}

func (s *seen) TaskStaging(context.Context, executor.StatusEvent)  { s.got = append(s.got, "staging") }
func (s *seen) TaskRunning(context.Context, executor.StatusEvent)  { s.got = append(s.got, "running") }
func (s *seen) TaskFinished(context.Context, executor.StatusEvent) { s.got = append(s.got, "finished") }
func (s *seen) TaskError(context.Context, executor.StatusEvent)    { s.got = append(s.got, "error") }
func (s *seen) ItemStarted(_ context.Context, ev executor.ItemEvent) {
	s.got = append(s.got, "started "+ev.JobName)
}
func (s *seen) ItemCompleted(_ context.Context, ev executor.ItemEvent) {
	s.got = append(s.got, "completed "+ev.JobName)
}

// Every member of MultiEvents gets every event (a host's tracing and its
// metrics); a nil member (tracing off) is skipped.
func TestMultiEventsReachesEveryMember(t *testing.T) {
	a, b := &seen{}, &seen{}
	m := executor.MultiEvents{a, nil, b}
	ctx := context.Background()
	m.TaskStaging(ctx, executor.StatusEvent{})
	m.TaskRunning(ctx, executor.StatusEvent{})
	m.ItemStarted(ctx, executor.ItemEvent{JobName: "j"})
	m.ItemCompleted(ctx, executor.ItemEvent{JobName: "j"})
	m.TaskError(ctx, executor.StatusEvent{})
	m.TaskFinished(ctx, executor.StatusEvent{})
	want := []string{"staging", "running", "started j", "completed j", "error", "finished"}
	for name, s := range map[string]*seen{"first": a, "second": b} {
		if !slices.Equal(s.got, want) {
			t.Errorf("%s member got %q, want %q", name, s.got, want)
		}
	}
}

// Event ids are random version 4 UUIDs in their canonical text form, as
// upstream's UUID.randomUUID().toString() (the tracing tables store them).
func TestNewEventIDIsAVersion4UUID(t *testing.T) {
	re := regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`)
	seen := map[string]bool{}
	for range 1000 {
		id := executor.NewEventID()
		if !re.MatchString(id) {
			t.Fatalf("NewEventID() = %q, not a version 4 UUID", id)
		}
		if seen[id] {
			t.Fatalf("NewEventID() repeated %q", id)
		}
		seen[id] = true
	}
}
