package transport

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/ejob-io/ejob/spi"
)

func TestToStatus(t *testing.T) {
	t.Parallel()
	tests := map[string]struct {
		err  error
		code codes.Code
	}{
		"canceled":      {fmt.Errorf("stop: %w", context.Canceled), codes.Canceled},
		"deadline":      {fmt.Errorf("slow: %w", context.DeadlineExceeded), codes.DeadlineExceeded},
		"unknown type":  {fmt.Errorf("x: %w", spi.ErrUnknownType), codes.NotFound},
		"invalid":       {fmt.Errorf("x: %w", spi.ErrInvalidConfig), codes.InvalidArgument},
		"unsupported":   {fmt.Errorf("x: %w", spi.ErrUnsupported), codes.Unimplemented},
		"plain":         {errors.New("boom"), codes.Unknown},
		"foreign grpc":  {status.Error(codes.Unavailable, "mail server down"), codes.Unknown},
		"exited inside": {fmt.Errorf("nested plugin: %w", spi.ErrPluginExited), codes.Unknown},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			st := status.Convert(toStatus(tt.err))
			if st.Code() != tt.code || st.Message() != tt.err.Error() {
				t.Errorf("toStatus(%v) = %v %q, want %v %q", tt.err, st.Code(), st.Message(), tt.code, tt.err.Error())
			}
		})
	}
	if toStatus(nil) != nil {
		t.Error("toStatus(nil) != nil")
	}
}

func TestFromStatus(t *testing.T) {
	t.Parallel()
	live := context.Background()
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	expired, cancel2 := context.WithDeadline(context.Background(), time.Unix(0, 0))
	defer cancel2()
	tests := map[string]struct {
		ctx    context.Context
		err    error
		exited bool
		want   error // sentinel, nil for none
		msg    string
	}{
		"invalid":               {live, status.Error(codes.InvalidArgument, "prop a: invalid config"), false, spi.ErrInvalidConfig, "prop a: invalid config"},
		"unsupported":           {live, status.Error(codes.Unimplemented, "method Foo not implemented"), false, spi.ErrUnsupported, "method Foo not implemented"},
		"unknown type":          {live, status.Error(codes.NotFound, "unknown type: X"), false, spi.ErrUnknownType, "unknown type: X"},
		"plain":                 {live, status.Error(codes.Unknown, "boom"), false, nil, "boom"},
		"panic":                 {live, status.Error(codes.Internal, "plugin panicked: x"), false, nil, "plugin panicked: x"},
		"unavailable":           {live, status.Error(codes.Unavailable, "connection refused"), false, spi.ErrPluginExited, "plugin exited: connection refused"},
		"conn closing":          {live, status.Error(codes.Canceled, "grpc: the client connection is closing"), false, spi.ErrPluginExited, "plugin exited: grpc: the client connection is closing"},
		"caller cancelled":      {cancelled, status.Error(codes.Canceled, "context canceled"), false, context.Canceled, "context canceled"},
		"caller deadline":       {expired, status.Error(codes.DeadlineExceeded, "context deadline exceeded"), false, context.DeadlineExceeded, "context deadline exceeded"},
		"plugin's own deadline": {live, status.Error(codes.DeadlineExceeded, "upstream slow: context deadline exceeded"), false, context.DeadlineExceeded, "upstream slow: context deadline exceeded"},
		"process gone":          {live, status.Error(codes.Unknown, "EOF"), true, spi.ErrPluginExited, "plugin exited: EOF"},
		"answer, then gone":     {live, status.Error(codes.InvalidArgument, "bad"), true, spi.ErrInvalidConfig, "bad"},
		"not a status":          {live, errors.New("weird"), false, nil, "weird"},
	}
	all := []error{spi.ErrInvalidConfig, spi.ErrUnsupported, spi.ErrUnknownType, spi.ErrPluginExited, context.Canceled, context.DeadlineExceeded}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			got := fromStatus(tt.ctx, tt.err, tt.exited)
			for _, s := range all {
				if errors.Is(got, s) != (s == tt.want) {
					t.Errorf("errors.Is(%v, %v) = %v", got, s, !(s == tt.want))
				}
			}
			if got.Error() != tt.msg {
				t.Errorf("message %q, want %q", got.Error(), tt.msg)
			}
		})
	}
}
