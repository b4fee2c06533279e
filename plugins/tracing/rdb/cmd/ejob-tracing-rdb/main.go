// Command ejob-tracing-rdb is a plugin binary serving the RDB tracing sink
// alone (the ejob binary serves all built-ins itself; this standalone copy
// is for overriding or running alone).
package main

import (
	"github.com/ejob-io/ejob/plugins/builtin"
	"github.com/ejob-io/ejob/plugins/tracing/rdb"
	"github.com/ejob-io/ejob/sdk"
	"github.com/ejob-io/ejob/spi"
)

func main() {
	sdk.Serve(sdk.Plugins{
		Version: builtin.Version,
		Tracing: map[string]spi.Tracer{rdb.TypeName: rdb.New()},
	})
}
