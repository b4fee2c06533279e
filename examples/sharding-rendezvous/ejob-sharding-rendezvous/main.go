// Command ejob-sharding-rendezvous is an example third-party sharding
// strategy plugin, written only against ejob's public sdk and spi packages.
//
// RENDEZVOUS assigns each item to the instance with the highest
// rendezvous (highest-random-weight) hash of (job, item, instance). When an
// instance joins or leaves, only the items it gains or loses move; the
// built-in AVG_ALLOCATION reshuffles most items instead.
package main

import (
	"github.com/ejob-io/ejob/sdk"
	"github.com/ejob-io/ejob/spi"
)

func main() {
	sdk.Serve(sdk.Plugins{
		Version:  "1.0.0",
		Sharding: map[string]spi.ShardingStrategy{"RENDEZVOUS": Rendezvous{}},
	})
}
