package main

import (
	"context"
	"fmt"
	"testing"

	"github.com/ejob-io/ejob/sdk"
	"github.com/ejob-io/ejob/sdk/sdktest"
	"github.com/ejob-io/ejob/spi"
	"github.com/ejob-io/ejob/spi/spitest"
)

func TestConformanceInProcess(t *testing.T) {
	spitest.TestShardingStrategy(t, Rendezvous{})
}

func TestConformanceOverGRPC(t *testing.T) {
	p := sdktest.Connect(t, pluginsUnderTest())
	spitest.TestShardingStrategy(t, p.ShardingStrategy("rendezvous"))
}

func pluginsUnderTest() sdk.Plugins {
	return sdk.Plugins{Version: "test", Sharding: map[string]spi.ShardingStrategy{"RENDEZVOUS": Rendezvous{}}}
}

// TestMinimalMovement shows the point of the strategy: removing one of ten
// instances moves only the items that instance held.
func TestMinimalMovement(t *testing.T) {
	var ids []string
	for i := 0; i < 10; i++ {
		ids = append(ids, fmt.Sprintf("10.0.0.%d@-@100", i))
	}
	before := assign(t, ids, 1000)
	after := assign(t, ids[1:], 1000)
	moved := 0
	for item, owner := range before {
		if owner == ids[0] {
			continue
		}
		if after[item] != owner {
			moved++
		}
	}
	if moved != 0 {
		t.Fatalf("%d items moved between surviving instances; want 0", moved)
	}
}

func assign(t *testing.T, ids []string, total int) map[int]string {
	t.Helper()
	resp, err := Rendezvous{}.Sharding(context.Background(), spi.ShardingRequest{JobName: "orders", Instances: ids, ShardingTotalCount: total})
	if err != nil {
		t.Fatal(err)
	}
	owner := map[int]string{}
	for _, a := range resp.Assignments {
		for _, it := range a.Items {
			owner[it] = a.InstanceID
		}
	}
	return owner
}
