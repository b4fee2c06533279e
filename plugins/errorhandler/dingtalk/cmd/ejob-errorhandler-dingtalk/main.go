// Command ejob-errorhandler-dingtalk is a plugin binary serving the DINGTALK error
// handler alone (the ejob binary serves all built-ins itself; this
// standalone copy is for overriding or running alone). It logs through the
// sdk logger, which the host re-levels under the plugin's name.
package main

import (
	"github.com/ejob-io/ejob/plugins/builtin"
	"github.com/ejob-io/ejob/plugins/errorhandler/alert"
	"github.com/ejob-io/ejob/plugins/errorhandler/dingtalk"
	"github.com/ejob-io/ejob/sdk"
	"github.com/ejob-io/ejob/spi"
)

func main() {
	sdk.Serve(sdk.Plugins{
		Version: builtin.Version,
		ErrorHandlers: map[string]spi.ErrorHandler{
			dingtalk.TypeName: dingtalk.New(alert.Options{Logger: sdk.Logger()}),
		},
	})
}
