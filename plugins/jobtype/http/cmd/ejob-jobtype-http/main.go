// Command ejob-jobtype-http is a plugin binary serving the HTTP job type
// alone (the ejob binary serves all built-ins itself; this standalone copy
// is for overriding or running alone). Responses are logged through the
// sdk logger, which the host re-levels under the plugin's name.
package main

import (
	"github.com/ejob-io/ejob/plugins/builtin"
	httpjob "github.com/ejob-io/ejob/plugins/jobtype/http"
	"github.com/ejob-io/ejob/sdk"
	"github.com/ejob-io/ejob/spi"
)

func main() {
	sdk.Serve(sdk.Plugins{
		Version: builtin.Version,
		JobTypes: map[string]spi.JobExecutor{
			httpjob.TypeName: httpjob.New(sdk.Logger()),
		},
	})
}
