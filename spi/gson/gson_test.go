package gson_test

import (
	"encoding/json"
	"fmt"
	"testing"
	"testing/quick"

	"github.com/ejob-io/ejob/spi"
	"github.com/ejob-io/ejob/spi/gson"
)

func ptr(s string) *string { return &s }

func TestShardingContext(t *testing.T) {
	t.Parallel()
	tests := map[string]struct {
		in   spi.ShardingContext
		want string
	}{
		"upstream vector with parameter": {
			in: spi.ShardingContext{
				JobName: "myJob", TaskID: "myJob@-@0,1,2@-@READY@-@192.168.1.10@-@12345",
				ShardingTotalCount: 3, JobParameter: "", ShardingItem: 0, ShardingParameter: ptr("A"),
			},
			want: `{"jobName":"myJob","taskId":"myJob@-@0,1,2@-@READY@-@192.168.1.10@-@12345","shardingTotalCount":3,"jobParameter":"","shardingItem":0,"shardingParameter":"A"}`,
		},
		"upstream vector html-safe, nil parameter": {
			in: spi.ShardingContext{
				JobName: "myJob", TaskID: "myJob@-@1@-@READY@-@192.168.1.10@-@12345",
				ShardingTotalCount: 3, JobParameter: "k=v&x='y' <z>", ShardingItem: 1,
			},
			want: `{"jobName":"myJob","taskId":"myJob@-@1@-@READY@-@192.168.1.10@-@12345","shardingTotalCount":3,"jobParameter":"k\u003dv\u0026x\u003d\u0027y\u0027 \u003cz\u003e","shardingItem":1}`,
		},
		"empty parameter is kept": {
			in:   spi.ShardingContext{JobName: "j", ShardingTotalCount: 1, ShardingParameter: ptr("")},
			want: `{"jobName":"j","taskId":"","shardingTotalCount":1,"jobParameter":"","shardingItem":0,"shardingParameter":""}`,
		},
		"short escapes": {
			in:   spi.ShardingContext{JobParameter: "q\"b\\t\tb\bn\nr\rf\f"},
			want: `{"jobName":"","taskId":"","shardingTotalCount":0,"jobParameter":"q\"b\\t\tb\bn\nr\rf\f","shardingItem":0}`,
		},
		"other controls lower-case hex": {
			in:   spi.ShardingContext{JobParameter: "\x00\x01\x0b\x1f\x7f"},
			want: `{"jobName":"","taskId":"","shardingTotalCount":0,"jobParameter":"\u0000\u0001\u000b\u001f` + "\x7f" + `","shardingItem":0}`,
		},
		"non-ascii raw, separators escaped": {
			in:   spi.ShardingContext{JobName: "作业é😀", JobParameter: "a\u2028b\u2029c"},
			want: `{"jobName":"作业é😀","taskId":"","shardingTotalCount":0,"jobParameter":"a\u2028b\u2029c","shardingItem":0}`,
		},
		"invalid utf-8 becomes replacement": {
			in:   spi.ShardingContext{JobName: "a\xffb"},
			want: `{"jobName":"a` + "\uFFFD" + `b","taskId":"","shardingTotalCount":0,"jobParameter":"","shardingItem":0}`,
		},
		"fencing token last, after the parameter": {
			in:   spi.ShardingContext{JobName: "j", ShardingTotalCount: 2, ShardingItem: 1, ShardingParameter: ptr("B"), FencingToken: 4294967397},
			want: `{"jobName":"j","taskId":"","shardingTotalCount":2,"jobParameter":"","shardingItem":1,"shardingParameter":"B","fencingToken":4294967397}`,
		},
		"fencing token without a parameter": {
			in:   spi.ShardingContext{JobName: "j", ShardingTotalCount: 1, FencingToken: 7},
			want: `{"jobName":"j","taskId":"","shardingTotalCount":1,"jobParameter":"","shardingItem":0,"fencingToken":7}`,
		},
		"negative and large numbers": {
			in:   spi.ShardingContext{ShardingTotalCount: 2147483647, ShardingItem: -1},
			want: `{"jobName":"","taskId":"","shardingTotalCount":2147483647,"jobParameter":"","shardingItem":-1}`,
		},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			if got := string(gson.ShardingContext(tt.in)); got != tt.want {
				t.Errorf("got  %s\nwant %s", got, tt.want)
			}
		})
	}
}

// wire mirrors upstream's field names for decoding.
type wire struct {
	JobName            string  `json:"jobName"`
	TaskID             string  `json:"taskId"`
	ShardingTotalCount int     `json:"shardingTotalCount"`
	JobParameter       string  `json:"jobParameter"`
	ShardingItem       int     `json:"shardingItem"`
	ShardingParameter  *string `json:"shardingParameter"`
}

// TestShardingContextDecodes checks, for arbitrary valid UTF-8 input, that the
// output is valid JSON which decodes to the same values.
func TestShardingContextDecodes(t *testing.T) {
	t.Parallel()
	f := func(jobName, taskID, jobParam, shardingParam string, total, item int32, hasParam bool) bool {
		in := spi.ShardingContext{
			JobName: jobName, TaskID: taskID, JobParameter: jobParam,
			ShardingTotalCount: int(total), ShardingItem: int(item),
		}
		if hasParam {
			in.ShardingParameter = &shardingParam
		}
		out := gson.ShardingContext(in)
		var got wire
		if err := json.Unmarshal(out, &got); err != nil {
			t.Logf("unmarshal %q: %v", out, err)
			return false
		}
		if got.JobName != in.JobName || got.TaskID != in.TaskID || got.JobParameter != in.JobParameter ||
			got.ShardingTotalCount != in.ShardingTotalCount || got.ShardingItem != in.ShardingItem {
			t.Logf("mismatch: %+v vs %+v", got, in)
			return false
		}
		if (got.ShardingParameter == nil) != (in.ShardingParameter == nil) ||
			(got.ShardingParameter != nil && *got.ShardingParameter != *in.ShardingParameter) {
			t.Logf("shardingParameter mismatch for %q", out)
			return false
		}
		return true
	}
	if err := quick.Check(f, &quick.Config{MaxCount: 2000}); err != nil {
		t.Error(err)
	}
}

func ExampleShardingContext() {
	p := "A"
	out := gson.ShardingContext(spi.ShardingContext{
		JobName: "myJob", TaskID: "t", ShardingTotalCount: 3, JobParameter: "a=b", ShardingItem: 0, ShardingParameter: &p,
	})
	fmt.Println(string(out))
	// Output: {"jobName":"myJob","taskId":"t","shardingTotalCount":3,"jobParameter":"a\u003db","shardingItem":0,"shardingParameter":"A"}
}

// ExampleString shows the upstream WeCom payload's content string: the
// content WechatJobErrorHandler sends for a RuntimeException, with '
// escaped as \u0027.
func ExampleString() {
	fmt.Println(string(gson.String("Job 'test_job' exception occur in job processing, caused by java.lang.RuntimeException: test\n\tat ...\n")))
	// Output: "Job \u0027test_job\u0027 exception occur in job processing, caused by java.lang.RuntimeException: test\n\tat ...\n"
}
