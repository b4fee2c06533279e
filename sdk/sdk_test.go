package sdk_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/ejob-io/ejob/sdk"
	"github.com/ejob-io/ejob/spi"
)

type avg struct{}

func (avg) Sharding(context.Context, spi.ShardingRequest) (spi.ShardingResponse, error) {
	return spi.ShardingResponse{}, nil
}

func TestPluginsValidate(t *testing.T) {
	t.Parallel()
	tests := map[string]struct {
		p    sdk.Plugins
		want string
	}{
		"valid":     {sdk.Plugins{Sharding: map[string]spi.ShardingStrategy{"AVG": avg{}}}, ""},
		"empty":     {sdk.Plugins{Version: "1"}, "no implementation"},
		"duplicate": {sdk.Plugins{Sharding: map[string]spi.ShardingStrategy{"Avg": avg{}, "AVG": avg{}}}, "same ignoring case"},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			err := tt.p.Validate()
			if tt.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if !errors.Is(err, spi.ErrInvalidConfig) || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Validate() = %v, want mention of %q", err, tt.want)
			}
		})
	}
}

func TestPluginsInfo(t *testing.T) {
	t.Parallel()
	info := sdk.Plugins{Version: "2.0", Sharding: map[string]spi.ShardingStrategy{"AVG": avg{}}}.Info()
	if info.PluginVersion != "2.0" || info.APIVersion != spi.APIVersion || len(info.Types) != 1 ||
		info.Types[0] != (spi.TypeKey{Kind: spi.KindSharding, Type: "AVG"}) {
		t.Errorf("Info() = %+v", info)
	}
}

func TestShardingContextJSON(t *testing.T) {
	t.Parallel()
	a := "A"
	tests := map[string]struct {
		in   spi.ShardingContext
		want string
	}{
		"with parameter": {
			spi.ShardingContext{JobName: "myJob", TaskID: "myJob@-@0,1,2@-@READY@-@192.168.1.10@-@12345", ShardingTotalCount: 3, ShardingParameter: &a},
			`{"jobName":"myJob","taskId":"myJob@-@0,1,2@-@READY@-@192.168.1.10@-@12345","shardingTotalCount":3,"jobParameter":"","shardingItem":0,"shardingParameter":"A"}`,
		},
		"html-safe, no parameter": {
			spi.ShardingContext{JobName: "myJob", TaskID: "myJob@-@1@-@READY@-@192.168.1.10@-@12345", ShardingTotalCount: 3, JobParameter: "k=v&x='y' <z>", ShardingItem: 1},
			`{"jobName":"myJob","taskId":"myJob@-@1@-@READY@-@192.168.1.10@-@12345","shardingTotalCount":3,"jobParameter":"k\u003dv\u0026x\u003d\u0027y\u0027 \u003cz\u003e","shardingItem":1}`,
		},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			if got := string(sdk.ShardingContextJSON(tt.in)); got != tt.want {
				t.Errorf("got  %s\nwant %s", got, tt.want)
			}
		})
	}
}
