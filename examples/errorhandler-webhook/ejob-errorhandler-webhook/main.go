// Command ejob-errorhandler-webhook is an example third-party error
// handler plugin, written only against ejob's public sdk and spi packages.
//
// WEBHOOK posts each failure of a job as a JSON object to the URL in the
// job's webhook.url prop. A job uses it with `jobErrorHandlerType: WEBHOOK`.
package main

import (
	"github.com/ejob-io/ejob/sdk"
	"github.com/ejob-io/ejob/spi"
)

func main() {
	sdk.Serve(sdk.Plugins{
		Version:       "1.0.0",
		ErrorHandlers: map[string]spi.ErrorHandler{"WEBHOOK": Webhook{}},
	})
}
