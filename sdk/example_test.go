package sdk_test

import (
	"context"

	"github.com/ejob-io/ejob/sdk"
	"github.com/ejob-io/ejob/spi"
)

// everyOther gives instance i every item n with n % len(instances) == i.
type everyOther struct{}

func (everyOther) Sharding(_ context.Context, req spi.ShardingRequest) (spi.ShardingResponse, error) {
	resp := spi.ShardingResponse{}
	for i, id := range req.Instances {
		a := spi.Assignment{InstanceID: id, Items: []int{}}
		for item := i; item < req.ShardingTotalCount; item += len(req.Instances) {
			a.Items = append(a.Items, item)
		}
		resp.Assignments = append(resp.Assignments, a)
	}
	return resp, nil
}

// The body of a plugin binary's main: build it as ejob-everyother and put
// it in the host's plugins directory. (Not run: Serve takes over the
// process.)
func ExampleServe() {
	sdk.Logger().Info("starting")
	sdk.Serve(sdk.Plugins{
		Version:  "1.0.0",
		Sharding: map[string]spi.ShardingStrategy{"EVERY_OTHER": everyOther{}},
	})
}
