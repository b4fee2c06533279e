package sdk_test

import (
	"testing"

	"github.com/ejob-io/ejob/sdk"
	"github.com/ejob-io/ejob/spi"
)

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
