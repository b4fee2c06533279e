// Command ejob-errorhandler-log is a plugin binary serving the LOG error
// handler alone (the ejob binary serves all built-ins itself; this
// standalone copy is for overriding or running alone). Its lines go to the
// sdk logger, which the host re-levels under the plugin's name.
package main

import (
	"github.com/ejob-io/ejob/plugins/builtin"
	errorhandlerbuiltin "github.com/ejob-io/ejob/plugins/errorhandler/builtin"
	"github.com/ejob-io/ejob/sdk"
	"github.com/ejob-io/ejob/spi"
)

func main() {
	sdk.Serve(sdk.Plugins{
		Version: builtin.Version,
		ErrorHandlers: map[string]spi.ErrorHandler{
			errorhandlerbuiltin.TypeLog: errorhandlerbuiltin.NewLog(sdk.Logger()),
		},
	})
}
