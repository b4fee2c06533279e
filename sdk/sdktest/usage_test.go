package sdktest_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/ejob-io/ejob/sdk"
	"github.com/ejob-io/ejob/sdk/sdktest"
	"github.com/ejob-io/ejob/spi"
)

type single struct{}

func (single) Sharding(_ context.Context, req spi.ShardingRequest) (spi.ShardingResponse, error) {
	items := make([]int, req.ShardingTotalCount)
	for i := range items {
		items[i] = i
	}
	return spi.ShardingResponse{Assignments: []spi.Assignment{{InstanceID: req.Instances[0], Items: items}}}, nil
}

// A plugin author's test: the strategy as the host will see it.
func TestSingleOverGRPC(t *testing.T) {
	p := sdktest.Connect(t, sdk.Plugins{Sharding: map[string]spi.ShardingStrategy{"SINGLE": single{}}})
	resp, err := p.ShardingStrategy("single").Sharding(t.Context(), spi.ShardingRequest{
		JobName: "j", Instances: []string{"b", "a"}, ShardingTotalCount: 3,
	})
	if err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprint(resp.Assignments); got != "[{b [0 1 2]}]" {
		t.Errorf("assignments = %s", got)
	}
}
