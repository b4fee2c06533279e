package main

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/ejob-io/ejob/sdk"
	"github.com/ejob-io/ejob/sdk/sdktest"
	"github.com/ejob-io/ejob/spi"
	"github.com/ejob-io/ejob/spi/spitest"
)

// lines records what GREET logs.
type lines struct {
	mu  sync.Mutex
	got []string
}

func (l *lines) Info(msg string, args ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.got = append(l.got, fmt.Sprintln(append([]any{msg}, args...)...))
}

func (l *lines) all() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.got)
}

func conformance() *spitest.JobExecutorOptions {
	return &spitest.JobExecutorOptions{
		ValidProps: []map[string]string{{PropName: "ejob"}, {PropName: "ejob", "other": "x"}},
		InvalidProps: map[string]map[string]string{
			"missing_name": {},
			"blank_name":   {PropName: "  "},
		},
		Succeed: &spi.ExecuteRequest{
			Context: spi.ShardingContext{JobName: "hello", TaskID: "t", ShardingTotalCount: 3},
			Props:   map[string]string{PropName: "ejob"},
		},
		// GREET has no request that fails or blocks: it only logs. Its
		// cancellation is the SDK's (an item under an ended ctx does not
		// start), which sdk's own tests cover.
	}
}

func TestConformanceInProcess(t *testing.T) {
	spitest.TestJobExecutor(t, NewGreet(&lines{}), conformance())
}

func TestConformanceOverGRPC(t *testing.T) {
	p := sdktest.Connect(t, sdk.Plugins{Version: "test", JobTypes: map[string]spi.JobExecutor{"GREET": NewGreet(&lines{})}})
	spitest.TestJobExecutor(t, p.JobExecutor("greet"), conformance())
}

func TestGreetsEveryItem(t *testing.T) {
	t.Parallel()
	log := &lines{}
	g := NewGreet(log)
	beijing, empty := "Beijing", ""
	for _, sc := range []spi.ShardingContext{
		{JobName: "hello", ShardingTotalCount: 3, ShardingItem: 0, ShardingParameter: &beijing},
		{JobName: "hello", ShardingTotalCount: 3, ShardingItem: 1, ShardingParameter: &empty},
		{JobName: "hello", ShardingTotalCount: 3, ShardingItem: 2},
	} {
		if _, err := g.Execute(t.Context(), spi.ExecuteRequest{Context: sc, Props: map[string]string{PropName: "ejob"}}); err != nil {
			t.Fatal(err)
		}
	}
	want := []string{
		"greeting job hello item 0 text Hello, Beijing! -- ejob\n",
		"greeting job hello item 1 text Hello, item 1! -- ejob\n",
		"greeting job hello item 2 text Hello, item 2! -- ejob\n",
	}
	if got := log.all(); !slices.Equal(got, want) {
		t.Errorf("logged %q\nwant   %q", got, want)
	}
}

func TestValidateNamesTheProp(t *testing.T) {
	t.Parallel()
	p := sdktest.Connect(t, sdk.Plugins{JobTypes: map[string]spi.JobExecutor{"GREET": NewGreet(&lines{})}})
	err := p.JobExecutor("GREET").Validate(context.Background(), spi.ValidatePropsRequest{JobName: "hello"})
	if !errors.Is(err, spi.ErrInvalidConfig) || !strings.Contains(err.Error(), PropName) {
		t.Errorf("Validate = %v, want spi.ErrInvalidConfig naming %s", err, PropName)
	}
}
