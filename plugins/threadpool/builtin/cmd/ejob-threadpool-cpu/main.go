// Command ejob-threadpool-cpu is a plugin binary serving the CPU
// thread-pool size provider alone (the ejob binary serves all built-ins
// itself; this standalone copy is for overriding or running alone).
package main

import (
	"github.com/ejob-io/ejob/plugins/builtin"
	threadpoolbuiltin "github.com/ejob-io/ejob/plugins/threadpool/builtin"
	"github.com/ejob-io/ejob/sdk"
	"github.com/ejob-io/ejob/spi"
)

func main() {
	sdk.Serve(sdk.Plugins{
		Version: builtin.Version,
		ThreadPools: map[string]spi.ThreadPoolSizeProvider{
			threadpoolbuiltin.TypeCPU: threadpoolbuiltin.NewCPU(),
		},
	})
}
