package sdktest_test

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/ejob-io/ejob/sdk"
	"github.com/ejob-io/ejob/sdk/sdktest"
	"github.com/ejob-io/ejob/spi"
)

// fake implements every kind with function fields.
type fake struct {
	sharding func(context.Context, spi.ShardingRequest) (spi.ShardingResponse, error)
	execute  func(context.Context, spi.ExecuteRequest) (spi.ExecuteResponse, error)
}

func (f fake) Sharding(ctx context.Context, req spi.ShardingRequest) (spi.ShardingResponse, error) {
	return f.sharding(ctx, req)
}

func (f fake) HandleError(_ context.Context, req spi.HandleErrorRequest) (spi.HandleErrorResponse, error) {
	return spi.HandleErrorResponse{Propagate: req.Error.Message == "stop"}, nil
}

func (f fake) Validate(_ context.Context, req spi.ValidatePropsRequest) error {
	if req.Props["ok"] != "yes" {
		return fmt.Errorf("prop ok must be yes: %w", spi.ErrInvalidConfig)
	}
	return nil
}

func (f fake) Execute(ctx context.Context, req spi.ExecuteRequest) (spi.ExecuteResponse, error) {
	return f.execute(ctx, req)
}

func (f fake) PoolSize(_ context.Context, req spi.PoolSizeRequest) (spi.PoolSizeResponse, error) {
	return spi.PoolSizeResponse{Size: req.AvailableCPUs + 1}, nil
}

func TestConnect(t *testing.T) {
	t.Parallel()
	entered := make(chan struct{})
	sawCancel := make(chan error, 1)
	f := fake{
		sharding: func(_ context.Context, req spi.ShardingRequest) (spi.ShardingResponse, error) {
			if req.JobName == "panic" {
				panic("kaboom")
			}
			return spi.ShardingResponse{Assignments: []spi.Assignment{{InstanceID: req.Instances[0], Items: []int{0}}}}, nil
		},
		execute: func(ctx context.Context, req spi.ExecuteRequest) (spi.ExecuteResponse, error) {
			if req.Context.JobName == "hang" {
				close(entered)
				<-ctx.Done()
				sawCancel <- ctx.Err()
				return spi.ExecuteResponse{}, ctx.Err()
			}
			if req.Context.ShardingParameter == nil || *req.Context.ShardingParameter != "" {
				return spi.ExecuteResponse{}, errors.New("empty sharding parameter lost")
			}
			return spi.ExecuteResponse{}, nil
		},
	}
	p := sdktest.Connect(t, sdk.Plugins{
		Version:       "t",
		Sharding:      map[string]spi.ShardingStrategy{"FAKE": f},
		ErrorHandlers: map[string]spi.ErrorHandler{"FAKE": f},
		JobTypes:      map[string]spi.JobExecutor{"FAKE": f},
		ThreadPools:   map[string]spi.ThreadPoolSizeProvider{"FAKE": f},
	})
	ctx := t.Context()

	info, err := p.Info(ctx)
	if err != nil || len(info.Types) != 4 || info.APIVersion != spi.APIVersion {
		t.Errorf("Info = %+v, %v", info, err)
	}
	resp, err := p.ShardingStrategy("fake").Sharding(ctx, spi.ShardingRequest{JobName: "j", Instances: []string{"a"}, ShardingTotalCount: 1})
	if want := (spi.ShardingResponse{Assignments: []spi.Assignment{{InstanceID: "a", Items: []int{0}}}}); err != nil || !reflect.DeepEqual(resp, want) {
		t.Errorf("Sharding = %+v, %v", resp, err)
	}
	if _, err := p.ShardingStrategy("FAKE").Sharding(ctx, spi.ShardingRequest{JobName: "panic"}); err == nil || !strings.Contains(err.Error(), "plugin panicked: kaboom") {
		t.Errorf("panic: %v", err)
	}
	if _, err := p.ShardingStrategy("OTHER").Sharding(ctx, spi.ShardingRequest{}); !errors.Is(err, spi.ErrUnknownType) {
		t.Errorf("unknown type: %v", err)
	}
	if h, err := p.ErrorHandler("FAKE").HandleError(ctx, spi.HandleErrorRequest{Error: spi.JobError{Message: "stop"}}); err != nil || !h.Propagate {
		t.Errorf("HandleError = %+v, %v", h, err)
	}
	if err := p.ErrorHandler("FAKE").Validate(ctx, spi.ValidatePropsRequest{}); !errors.Is(err, spi.ErrInvalidConfig) || !strings.Contains(err.Error(), "prop ok must be yes") {
		t.Errorf("Validate: %v", err)
	}
	if err := p.JobExecutor("FAKE").Validate(ctx, spi.ValidatePropsRequest{Props: map[string]string{"ok": "yes"}}); err != nil {
		t.Errorf("Validate: %v", err)
	}
	empty := ""
	if _, err := p.JobExecutor("FAKE").Execute(ctx, spi.ExecuteRequest{Context: spi.ShardingContext{ShardingParameter: &empty}}); err != nil {
		t.Errorf("Execute: %v", err)
	}
	if n, err := p.ThreadPoolSizeProvider("FAKE").PoolSize(ctx, spi.PoolSizeRequest{AvailableCPUs: 2}); err != nil || n.Size != 3 {
		t.Errorf("PoolSize = %+v, %v", n, err)
	}

	cctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() {
		_, err := p.JobExecutor("FAKE").Execute(cctx, spi.ExecuteRequest{Context: spi.ShardingContext{JobName: "hang"}})
		done <- err
	}()
	<-entered
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled Execute: %v", err)
	}
	select {
	case err := <-sawCancel:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("implementation saw %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Error("implementation never saw the cancellation")
	}
}
