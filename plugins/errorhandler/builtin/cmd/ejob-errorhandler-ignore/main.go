// Command ejob-errorhandler-ignore is a plugin binary serving the IGNORE
// error handler alone (the ejob binary serves all built-ins itself; this
// standalone copy is for overriding or running alone).
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
			errorhandlerbuiltin.TypeIgnore: errorhandlerbuiltin.NewIgnore(),
		},
	})
}
