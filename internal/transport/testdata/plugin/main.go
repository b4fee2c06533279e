// Command plugin is the transport tests' plugin. Every call also prints to
// stdout and stderr and logs through sdk.Logger, so the stray-output
// handling is exercised by every test. Behaviour is switched by job name:
//
//	panic       the method panics
//	invalid     error wrapping spi.ErrInvalidConfig
//	unsupported error wrapping spi.ErrUnsupported
//	unknown     error wrapping spi.ErrUnknownType
//	fail        a plain error
//	hang        (Execute) touches props["started"], waits for ctx, touches
//	            props["cancelled"], returns ctx.Err()
//	slowstop    (Execute) touches props["started"], waits for ctx, takes
//	            500 ms to stop, then writes "<unix nanos> <ctx.Err()>:
//	            <context.Cause(ctx)>" to props["returned"] and returns
//	            ctx.Err()
//	leased      (Execute) touches props["started"], waits for ctx, writes
//	            "<unix nanos> <context.Cause(ctx)>\tstall=<nanos>" to
//	            props["cancelled"] at once and returns ctx.Err(); stall is
//	            the longest this process went without running a goroutine
//	            that ticks every millisecond meanwhile (the machine's
//	            starvation of the plugin)
//	ignore      (Execute) touches props["started"] and ignores ctx: it
//	            returns only when the process ends
//	daemon      (Execute) starts `sleep 300` in a session of its own
//	            (setsid), writes its pid to props["pidfile"] and returns
//	bench       no output at all
//	check       (Execute) fails unless sdk.ShardingContextJSON(ctx) equals
//	            props["want"]
//	loglevel    (Execute) fails with "plugin log level <level>", the level
//	            of a logger sdk.Logger returns
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"syscall"
	"time"

	"github.com/ejob-io/ejob/internal/testkit"
	"github.com/ejob-io/ejob/sdk"
	"github.com/ejob-io/ejob/spi"
)

var log = sdk.Logger().Named("testplugin")

func behave(method, jobName string) error {
	if jobName == "bench" {
		return nil // benchmarks measure the transport, not the noise
	}
	fmt.Println("stdout noise from", method)
	fmt.Fprintln(os.Stderr, "stderr noise from", method)
	log.Warn("called", "method", method, "job", jobName)
	switch jobName {
	case "panic":
		panic("boom in " + method)
	case "invalid":
		return fmt.Errorf("prop x.y of job %s must be positive: %w", jobName, spi.ErrInvalidConfig)
	case "unsupported":
		return fmt.Errorf("%s cannot do that: %w", method, spi.ErrUnsupported)
	case "unknown":
		return fmt.Errorf("no such upstream thing: %w", spi.ErrUnknownType)
	case "fail":
		return errors.New("plain failure from " + method)
	}
	return nil
}

type avg struct{}

func (avg) Sharding(_ context.Context, req spi.ShardingRequest) (spi.ShardingResponse, error) {
	if err := behave("sharding", req.JobName); err != nil {
		return spi.ShardingResponse{}, err
	}
	var resp spi.ShardingResponse
	n := len(req.Instances)
	if n == 0 {
		return resp, nil
	}
	resp.Assignments = make([]spi.Assignment, n)
	for i, id := range req.Instances {
		resp.Assignments[i] = spi.Assignment{InstanceID: id, Items: []int{}}
	}
	for item := 0; item < req.ShardingTotalCount; item++ {
		a := &resp.Assignments[item%n]
		a.Items = append(a.Items, item)
	}
	return resp, nil
}

type handler struct{}

func (handler) HandleError(_ context.Context, req spi.HandleErrorRequest) (spi.HandleErrorResponse, error) {
	if err := behave("handle error", req.JobName); err != nil {
		return spi.HandleErrorResponse{}, err
	}
	want := fmt.Sprintf("%s|%s|%s|%d|%s|%s", req.InstanceID, req.TaskID, req.Props["k"], req.ShardingItem, req.Error.Message, req.Error.Detail)
	if got := req.Props["echo"]; got != want {
		return spi.HandleErrorResponse{}, fmt.Errorf("request mismatch: got %q want %q", want, got)
	}
	return spi.HandleErrorResponse{Propagate: req.Props["propagate"] == "true"}, nil
}

func (handler) Validate(_ context.Context, req spi.ValidatePropsRequest) error {
	if err := behave("validate error handler", req.JobName); err != nil {
		return err
	}
	if _, ok := req.Props["address"]; !ok {
		return fmt.Errorf("prop address is required: %w", spi.ErrInvalidConfig)
	}
	return nil
}

type job struct{}

func touch(path string) {
	if path != "" {
		_ = os.WriteFile(path, nil, 0o600)
	}
}

func (job) Execute(ctx context.Context, req spi.ExecuteRequest) (spi.ExecuteResponse, error) {
	if err := behave("execute", req.Context.JobName); err != nil {
		return spi.ExecuteResponse{}, err
	}
	switch req.Context.JobName {
	case "hang":
		touch(req.Props["started"])
		<-ctx.Done()
		touch(req.Props["cancelled"])
		return spi.ExecuteResponse{}, ctx.Err()
	case "slowstop":
		touch(req.Props["started"])
		<-ctx.Done()
		time.Sleep(500 * time.Millisecond) // stopping what it started
		line := fmt.Sprintf("%d %v: %v", time.Now().UnixNano(), ctx.Err(), context.Cause(ctx))
		_ = os.WriteFile(req.Props["returned"], []byte(line), 0o600)
		return spi.ExecuteResponse{}, fmt.Errorf("slowstop stopped: %w", ctx.Err())
	case "leased":
		stall := testkit.StallProbe(ctx)
		touch(req.Props["started"])
		<-ctx.Done()
		line := fmt.Sprintf("%d %v\tstall=%d", time.Now().UnixNano(), context.Cause(ctx), stall().Nanoseconds())
		_ = os.WriteFile(req.Props["cancelled"], []byte(line), 0o600)
		return spi.ExecuteResponse{}, ctx.Err()
	case "ignore":
		touch(req.Props["started"])
		select {}
	case "daemon":
		// A child that leaves the plugin's process group and session, as
		// a daemonising program does, and outlives the call.
		cmd := exec.Command("sleep", "300")
		cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
		if err := cmd.Start(); err != nil {
			return spi.ExecuteResponse{}, err
		}
		go func() { _ = cmd.Wait() }()
		_ = os.WriteFile(req.Props["pidfile"], []byte(strconv.Itoa(cmd.Process.Pid)), 0o600)
	case "loglevel":
		return spi.ExecuteResponse{}, fmt.Errorf("plugin log level %s", sdk.Logger().GetLevel())
	case "check":
		if got := string(sdk.ShardingContextJSON(req.Context)); got != req.Props["want"] {
			return spi.ExecuteResponse{}, fmt.Errorf("context mismatch: got %s", got)
		}
	}
	return spi.ExecuteResponse{}, nil
}

func (job) Validate(_ context.Context, req spi.ValidatePropsRequest) error {
	if err := behave("validate job type", req.JobName); err != nil {
		return err
	}
	if req.Props["command"] == "" {
		return fmt.Errorf("prop command is required: %w", spi.ErrInvalidConfig)
	}
	return nil
}

type pool struct{}

func (pool) PoolSize(_ context.Context, req spi.PoolSizeRequest) (spi.PoolSizeResponse, error) {
	if err := behave("pool size", req.JobName); err != nil {
		return spi.PoolSizeResponse{}, err
	}
	if n, err := strconv.Atoi(req.JobName); err == nil {
		return spi.PoolSizeResponse{Size: n}, nil
	}
	return spi.PoolSizeResponse{Size: req.AvailableCPUs * 2}, nil
}

func main() {
	sdk.Serve(sdk.Plugins{
		Version:       "1.2.3-test",
		Sharding:      map[string]spi.ShardingStrategy{"TEST_AVG": avg{}, "Test_Other": avg{}},
		ErrorHandlers: map[string]spi.ErrorHandler{"TEST_LOG": handler{}},
		JobTypes:      map[string]spi.JobExecutor{"TEST_JOB": job{}},
		ThreadPools:   map[string]spi.ThreadPoolSizeProvider{"TEST_POOL": pool{}},
	})
}
