package sdk_test

import (
	"context"
	"fmt"
	"strings"

	"github.com/ejob-io/ejob/sdk"
	"github.com/ejob-io/ejob/spi"
)

// A SIMPLE job type: the function runs once per sharding item. Serve it
// with sdk.Serve(sdk.Plugins{JobTypes: map[string]spi.JobExecutor{"HELLO": hello}})
// and name it in a job's config: elasticJobType: HELLO.
func ExampleSimpleJobType() {
	hello := sdk.SimpleJobType(func(ctx context.Context, sc spi.ShardingContext, props map[string]string) error {
		fmt.Printf("hello from item %d of %s, greeting %s\n", sc.ShardingItem, sc.JobName, props["who"])
		return nil
	})

	// The host calls Execute once per item; here we call it directly.
	_, err := hello.Execute(context.Background(), spi.ExecuteRequest{
		Context: spi.ShardingContext{JobName: "greeter", ShardingTotalCount: 2, ShardingItem: 1},
		Props:   map[string]string{"who": "world"},
	})
	fmt.Println(err)
	// Output:
	// hello from item 1 of greeter, greeting world
	// <nil>
}

// A DATAFLOW job type: with streaming.process true, one Execute call
// fetches and processes batches until a fetch comes back empty. Here the
// item's "queue" is a slice; a real type fetches from a database or files
// and records its progress there, since calls are stateless.
func ExampleDataflowJobType() {
	queue := []string{"a", "b", "c", "d", "e"}
	upper := sdk.DataflowJobType(sdk.DataflowFuncs[string]{
		Fetch: func(ctx context.Context, sc spi.ShardingContext, props map[string]string) ([]string, error) {
			n := min(2, len(queue))
			batch := queue[:n]
			queue = queue[n:]
			return batch, nil
		},
		Process: func(ctx context.Context, sc spi.ShardingContext, props map[string]string, data []string) error {
			fmt.Println(strings.ToUpper(strings.Join(data, " ")))
			return nil
		},
	})

	_, err := upper.Execute(context.Background(), spi.ExecuteRequest{
		Context: spi.ShardingContext{JobName: "upper", ShardingTotalCount: 1},
		Props:   map[string]string{sdk.PropStreamingProcess: "true"},
	})
	fmt.Println(err)
	// Output:
	// A B
	// C D
	// E
	// <nil>
}
