// Command ejob-broken is a plugin that breaks two contracts, for the test
// of `ejob plugins check`: its sharding strategy BROKEN_SHARDING accepts a
// repeated instance id (it must refuse it with spi.ErrInvalidConfig), and
// its error handler BROKEN_HANDLER refuses props with a plain error.
package main

import (
	"context"
	"errors"

	"github.com/ejob-io/ejob/sdk"
	"github.com/ejob-io/ejob/spi"
)

type sharding struct{}

// Sharding gives every item to the first instance and none to the others.
func (sharding) Sharding(ctx context.Context, req spi.ShardingRequest) (spi.ShardingResponse, error) {
	if err := ctx.Err(); err != nil {
		return spi.ShardingResponse{}, err
	}
	if req.ShardingTotalCount <= 0 {
		return spi.ShardingResponse{}, spi.ErrInvalidConfig
	}
	var resp spi.ShardingResponse
	for i, id := range req.Instances {
		a := spi.Assignment{InstanceID: id, Items: []int{}}
		if i == 0 {
			for item := range req.ShardingTotalCount {
				a.Items = append(a.Items, item)
			}
		}
		resp.Assignments = append(resp.Assignments, a)
	}
	return resp, nil
}

type handler struct{}

func (handler) HandleError(context.Context, spi.HandleErrorRequest) (spi.HandleErrorResponse, error) {
	return spi.HandleErrorResponse{}, nil
}

func (handler) Validate(_ context.Context, req spi.ValidatePropsRequest) error {
	if req.Props["broken.address"] == "" {
		return errors.New("broken.address is required")
	}
	return nil
}

func main() {
	sdk.Serve(sdk.Plugins{
		Version:       "0.0.1",
		Sharding:      map[string]spi.ShardingStrategy{"BROKEN_SHARDING": sharding{}},
		ErrorHandlers: map[string]spi.ErrorHandler{"BROKEN_HANDLER": handler{}},
	})
}
