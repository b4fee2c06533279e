// Command ejob-jobtype-greet is an example third-party SIMPLE job type
// plugin, written only against ejob's public sdk and spi packages.
//
// GREET logs one greeting per sharding item: the greeter is the job's
// greet.name prop, the greeted is the item's sharding parameter (or
// "item N" when the item has none). A job uses it with
// `elasticJobType: GREET`.
package main

import (
	"github.com/ejob-io/ejob/sdk"
	"github.com/ejob-io/ejob/spi"
)

func main() {
	sdk.Serve(sdk.Plugins{
		Version:  "1.0.0",
		JobTypes: map[string]spi.JobExecutor{"GREET": NewGreet(sdk.Logger())},
	})
}
