package shardingbuiltin_test

import (
	"context"
	"fmt"
	"slices"

	shardingbuiltin "github.com/ejob-io/ejob/plugins/sharding/builtin"
	"github.com/ejob-io/ejob/spi"
)

// printAssignments shows each instance's items, in response order.
func printAssignments(resp spi.ShardingResponse) {
	for _, a := range resp.Assignments {
		fmt.Printf("%s=%v\n", a.InstanceID, a.Items)
	}
}

// The runtime passes instance ids in descending string order, so
// "192.168.1.10@-@50" sorts after "192.168.1.1@-@100".
func Example_instanceOrder() {
	ids := []string{"192.168.1.10@-@50", "192.168.1.2@-@200", "192.168.1.1@-@100", "192.168.1.3@-@300"}
	slices.Sort(ids)
	slices.Reverse(ids)
	fmt.Println(ids)
	// Output:
	// [192.168.1.3@-@300 192.168.1.2@-@200 192.168.1.1@-@100 192.168.1.10@-@50]
}

func ExampleAverageAllocation() {
	resp, err := shardingbuiltin.NewAverageAllocation().Sharding(context.Background(), spi.ShardingRequest{
		JobName:            "test_job",
		Instances:          []string{"1.2@-@200", "1.1@-@100", "1.10@-@50"},
		ShardingTotalCount: 10,
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	printAssignments(resp)
	// Output:
	// 1.2@-@200=[0 1 2 9]
	// 1.1@-@100=[3 4 5]
	// 1.10@-@50=[6 7 8]
}

func ExampleOdevity() {
	s := shardingbuiltin.NewOdevity()
	for _, job := range []string{"test_job", "myJob"} { // hash even, then odd
		resp, err := s.Sharding(context.Background(), spi.ShardingRequest{
			JobName:            job,
			Instances:          []string{"1.2@-@200", "1.1@-@100", "1.10@-@50"},
			ShardingTotalCount: 2,
		})
		if err != nil {
			fmt.Println(err)
			return
		}
		fmt.Println(job, shardingbuiltin.JavaStringHashCode(job))
		printAssignments(resp)
	}
	// Output:
	// test_job -1146456432
	// 1.2@-@200=[]
	// 1.1@-@100=[1]
	// 1.10@-@50=[0]
	// myJob 104343153
	// 1.2@-@200=[0]
	// 1.1@-@100=[1]
	// 1.10@-@50=[]
}

func ExampleRoundRobin() {
	s := shardingbuiltin.NewRoundRobin()
	for _, job := range []string{"javaSimpleJob", "polygenelubricants"} {
		resp, err := s.Sharding(context.Background(), spi.ShardingRequest{
			JobName:            job,
			Instances:          []string{"1.2@-@200", "1.1@-@100", "1.10@-@50"},
			ShardingTotalCount: 2,
		})
		if err != nil {
			fmt.Println(err)
			return
		}
		fmt.Println(job)
		printAssignments(resp)
	}
	// Output:
	// javaSimpleJob
	// 1.2@-@200=[1]
	// 1.1@-@100=[]
	// 1.10@-@50=[0]
	// polygenelubricants
	// 1.2@-@200=[]
	// 1.1@-@100=[0]
	// 1.10@-@50=[1]
}

func ExampleJavaStringHashCode() {
	for _, s := range []string{"test_job", "作业", "polygenelubricants"} {
		fmt.Println(s, shardingbuiltin.JavaStringHashCode(s))
	}
	// Output:
	// test_job -1146456432
	// 作业 649790
	// polygenelubricants -2147483648
}
