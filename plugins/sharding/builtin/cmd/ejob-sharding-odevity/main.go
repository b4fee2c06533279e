// Command ejob-sharding-odevity is a plugin binary serving the ODEVITY
// sharding strategy alone (the ejob binary serves all built-ins itself;
// this standalone copy is for overriding or running alone).
package main

import (
	"github.com/ejob-io/ejob/plugins/builtin"
	shardingbuiltin "github.com/ejob-io/ejob/plugins/sharding/builtin"
	"github.com/ejob-io/ejob/sdk"
	"github.com/ejob-io/ejob/spi"
)

func main() {
	sdk.Serve(sdk.Plugins{
		Version: builtin.Version,
		Sharding: map[string]spi.ShardingStrategy{
			shardingbuiltin.TypeOdevity: shardingbuiltin.NewOdevity(),
		},
	})
}
