// Command ejob-hosttest is a plugin used by host/pluginhost tests. Its
// behaviour is chosen by the job name of each request:
//
//	"hang"   blocks until the call is cancelled
//	"panic"  panics
//	"exit"   kills its own process mid-call
//	"stdout" prints to stdout before answering
//	"pid"    answers normally; PoolSize returns the process id as Size
//
// Any other job name answers normally. Its job type HOSTTEST_JOB's Execute
// also knows
//
//	"ignore" touches props["started"] and ignores cancellation: it returns
//	         only when the process ends. With props["child"] it first starts
//	         `sleep 600` as the leader of its own process group (as SCRIPT
//	         runs scripts) and writes its pid to that file.
//
// It serves sharding type HOSTTEST, thread-pool type HOSTTEST_POOL and job
// type HOSTTEST_JOB; built with -ldflags "-X main.typeName=X"
// it serves X instead of HOSTTEST (to test duplicates and overrides).
package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"syscall"

	"github.com/ejob-io/ejob/sdk"
	"github.com/ejob-io/ejob/spi"
)

var typeName = "HOSTTEST"

type strategy struct{}

func behave(ctx context.Context, job string) error {
	switch job {
	case "hang":
		sdk.Logger().Info("hosttest is hanging until cancelled")
		<-ctx.Done()
		return ctx.Err()
	case "panic":
		panic("hosttest asked to panic")
	case "exit":
		os.Exit(3)
	case "stdout":
		fmt.Println("this line goes to stdout and must not break the plugin protocol")
	}
	return nil
}

func (strategy) Sharding(ctx context.Context, req spi.ShardingRequest) (spi.ShardingResponse, error) {
	if err := behave(ctx, req.JobName); err != nil {
		return spi.ShardingResponse{}, err
	}
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

type pool struct{}

func (pool) PoolSize(ctx context.Context, req spi.PoolSizeRequest) (spi.PoolSizeResponse, error) {
	if err := behave(ctx, req.JobName); err != nil {
		return spi.PoolSizeResponse{}, err
	}
	return spi.PoolSizeResponse{Size: os.Getpid()}, nil
}

type job struct{}

func (job) Execute(ctx context.Context, req spi.ExecuteRequest) (spi.ExecuteResponse, error) {
	if req.Context.JobName == "ignore" {
		if f := req.Props["child"]; f != "" {
			cmd := exec.Command("sleep", "600")
			cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
			if err := cmd.Start(); err != nil {
				return spi.ExecuteResponse{}, err
			}
			if err := os.WriteFile(f, []byte(strconv.Itoa(cmd.Process.Pid)), 0o600); err != nil {
				return spi.ExecuteResponse{}, err
			}
		}
		_ = os.WriteFile(req.Props["started"], nil, 0o600)
		select {}
	}
	return spi.ExecuteResponse{}, behave(ctx, req.Context.JobName)
}

func (job) Validate(context.Context, spi.ValidatePropsRequest) error { return nil }

func main() {
	sdk.Serve(sdk.Plugins{
		Version:     "0.0.1-test",
		Sharding:    map[string]spi.ShardingStrategy{typeName: strategy{}},
		ThreadPools: map[string]spi.ThreadPoolSizeProvider{typeName + "_POOL": pool{}},
		JobTypes:    map[string]spi.JobExecutor{typeName + "_JOB": job{}},
	})
}
