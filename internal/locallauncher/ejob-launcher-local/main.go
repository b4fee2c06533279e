// Command ejob-launcher-local serves the LOCAL test launcher as an ejob
// plugin; run as `ejob-launcher-local run-item DIR` it is the wrapper of
// one item, and as `ejob-launcher-local spawn DIR` it starts that wrapper
// detached.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/ejob-io/ejob/internal/locallauncher"
	"github.com/ejob-io/ejob/sdk"
	"github.com/ejob-io/ejob/spi"
)

func main() {
	if len(os.Args) == 3 && os.Args[1] == locallauncher.SpawnArg {
		if err := locallauncher.Spawn(os.Args[2]); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	if len(os.Args) == 3 && os.Args[1] == locallauncher.RunItemArg {
		ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
		code := locallauncher.RunItem(ctx, os.Args[2])
		stop()
		os.Exit(code)
	}
	sdk.Serve(sdk.Plugins{Version: "test", Launchers: map[string]spi.Launcher{locallauncher.Type: locallauncher.Launcher{}}})
}
