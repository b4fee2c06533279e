package sharding

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/ejob-io/ejob/spi"
)

func TestOrderInstancesIsDescendingStringOrder(t *testing.T) {
	in := []string{"192.168.1.10@-@50", "192.168.1.1@-@100", "192.168.1.2@-@200", "192.168.1.1@-@100"}
	got := OrderInstances(in)
	want := "[192.168.1.2@-@200 192.168.1.1@-@100 192.168.1.10@-@50]"
	if fmt.Sprint(got) != want {
		t.Fatalf("got %v, want %s", got, want)
	}
	if in[0] != "192.168.1.10@-@50" {
		t.Fatal("input was modified")
	}
}

func TestCheckAssignments(t *testing.T) {
	t.Parallel()
	ids := []string{"b", "a"}
	cases := map[string]struct {
		got     []spi.Assignment
		wantErr bool
		want    string
	}{
		"ok, reordered and missing empty": {got: []spi.Assignment{{InstanceID: "a", Items: []int{1}}, {InstanceID: "b", Items: []int{0, 2}}}, want: "[{b [0 2]} {a [1]}]"},
		"instance without items added":    {got: []spi.Assignment{{InstanceID: "a", Items: []int{0, 1, 2}}}, want: "[{b []} {a [0 1 2]}]"},
		"unknown instance":                {got: []spi.Assignment{{InstanceID: "c", Items: []int{0, 1, 2}}}, wantErr: true},
		"item twice":                      {got: []spi.Assignment{{InstanceID: "a", Items: []int{0, 1, 2}}, {InstanceID: "b", Items: []int{2}}}, wantErr: true},
		"item missing":                    {got: []spi.Assignment{{InstanceID: "a", Items: []int{0, 1}}}, wantErr: true},
		"item out of range":               {got: []spi.Assignment{{InstanceID: "a", Items: []int{0, 1, 2, 3}}}, wantErr: true},
		"negative item":                   {got: []spi.Assignment{{InstanceID: "a", Items: []int{-1, 0, 1, 2}}}, wantErr: true},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			got, err := CheckAssignments(ids, 3, c.got)
			if c.wantErr {
				if !errors.Is(err, ErrBadAssignment) {
					t.Fatalf("err = %v, want ErrBadAssignment", err)
				}
				return
			}
			if err != nil || fmt.Sprint(got) != c.want {
				t.Fatalf("got %v, %v; want %s", got, err, c.want)
			}
		})
	}
}

type fixed spi.ShardingResponse

func (f fixed) Sharding(context.Context, spi.ShardingRequest) (spi.ShardingResponse, error) {
	return spi.ShardingResponse(f), nil
}

func TestShardRejectsABadStrategyAnswer(t *testing.T) {
	_, err := Shard(context.Background(), fixed{Assignments: []spi.Assignment{{InstanceID: "x", Items: []int{0}}}}, "j", 2, []string{"x"})
	if !errors.Is(err, ErrBadAssignment) {
		t.Fatalf("err = %v", err)
	}
	if _, err := Shard(context.Background(), fixed{}, "j", 0, []string{"x"}); !errors.Is(err, spi.ErrInvalidConfig) {
		t.Fatalf("total 0: err = %v", err)
	}
}
