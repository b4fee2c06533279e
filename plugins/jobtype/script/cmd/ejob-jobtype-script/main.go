// Command ejob-jobtype-script is a plugin binary serving the SCRIPT job
// type alone (the ejob binary serves all built-ins itself; this standalone
// copy is for overriding or running alone). Scripts' output lines go to the
// sdk logger, which the host re-levels under the plugin's name.
package main

import (
	"github.com/ejob-io/ejob/plugins/builtin"
	"github.com/ejob-io/ejob/plugins/jobtype/script"
	"github.com/ejob-io/ejob/sdk"
	"github.com/ejob-io/ejob/spi"
)

func main() {
	sdk.Serve(sdk.Plugins{
		Version: builtin.Version,
		JobTypes: map[string]spi.JobExecutor{
			script.TypeName: script.New(sdk.Logger()),
		},
	})
}
