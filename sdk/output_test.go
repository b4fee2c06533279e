package sdk_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/ejob-io/ejob/sdk"
	"github.com/ejob-io/ejob/sdk/sdktest"
	"github.com/ejob-io/ejob/spi"
)

// TestOutput checks that what a SIMPLE or DATAFLOW job type writes to
// sdk.Output reaches the host through the plugin transport as the item's
// output, a failed item's too, capped with the tail kept.
func TestOutput(t *testing.T) {
	t.Parallel()
	simple := sdk.SimpleJobType(func(ctx context.Context, sc spi.ShardingContext, props map[string]string) error {
		fmt.Fprintf(sdk.Output(ctx), "item %d: %s\n", sc.ShardingItem, props["say"])
		if props["fail"] == "true" {
			return errors.New("failed")
		}
		if props["flood"] != "" {
			fmt.Fprint(sdk.Output(ctx), strings.Repeat("z", spi.MaxOutputBytes)+"end")
		}
		if props["flood"] == "fail" {
			return errors.New("failed after a flood")
		}
		return nil
	})
	flow := sdk.DataflowJobType(sdk.DataflowFuncs[int]{
		Fetch: func(ctx context.Context, sc spi.ShardingContext, _ map[string]string) ([]int, error) {
			return []int{1, 2, 3}, nil
		},
		Process: func(ctx context.Context, _ spi.ShardingContext, _ map[string]string, data []int) error {
			fmt.Fprintf(sdk.Output(ctx), "processed %d\n", len(data))
			return nil
		},
	})
	p := sdktest.Connect(t, sdk.Plugins{JobTypes: map[string]spi.JobExecutor{"S": simple, "F": flow}})
	exec := func(typ string, props map[string]string) (spi.ExecuteResponse, error) {
		return p.JobExecutor(typ).Execute(t.Context(), spi.ExecuteRequest{Context: spi.ShardingContext{JobName: "j", ShardingItem: 2}, Props: props})
	}
	if resp, err := exec("S", map[string]string{"say": "hello"}); err != nil || resp.Output != (spi.Output{Text: "item 2: hello\n"}) {
		t.Errorf("simple: %+v, %v", resp.Output, err)
	}
	if resp, err := exec("S", map[string]string{"say": "bye", "fail": "true"}); err == nil || resp.Output.Text != "item 2: bye\n" {
		t.Errorf("failed simple: %+v, %v; want its output and an error", resp.Output, err)
	}
	resp, err := exec("S", map[string]string{"say": "x", "flood": "true"})
	if o := resp.Output; err != nil || len(o.Text) != spi.MaxOutputBytes || !strings.HasSuffix(o.Text, "zend") || o.Cut != int64(len("item 2: x\n")+3) {
		t.Errorf("flood: %d bytes cut %d, %v", len(o.Text), o.Cut, err)
	}
	// A failed item's output travels in the error's status: the cap's
	// worth of it too.
	resp, err = exec("S", map[string]string{"say": "x", "flood": "fail"})
	if o := resp.Output; err == nil || len(o.Text) != spi.MaxOutputBytes || !strings.HasSuffix(o.Text, "zend") {
		t.Errorf("failed flood: %d bytes, %v", len(o.Text), err)
	}
	if resp, err := exec("F", nil); err != nil || resp.Output.Text != "processed 3\n" {
		t.Errorf("dataflow: %+v, %v", resp.Output, err)
	}
	if n, err := fmt.Fprint(sdk.Output(t.Context()), "nowhere"); n != 7 || err != nil {
		t.Errorf("Output outside an item: %d, %v; want it to discard", n, err)
	}
}
