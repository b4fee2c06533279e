// Command ejob-joblistener-log is a plugin binary serving the LOG job
// listener alone (the ejob binary serves all built-ins itself; this
// standalone copy is for overriding or running alone).
package main

import (
	"github.com/ejob-io/ejob/plugins/builtin"
	joblistenerbuiltin "github.com/ejob-io/ejob/plugins/joblistener/builtin"
	"github.com/ejob-io/ejob/sdk"
	"github.com/ejob-io/ejob/spi"
)

func main() {
	sdk.Serve(sdk.Plugins{
		Version: builtin.Version,
		JobListeners: map[string]spi.JobListener{
			joblistenerbuiltin.TypeLog: joblistenerbuiltin.NewLog(sdk.Logger()),
		},
	})
}
