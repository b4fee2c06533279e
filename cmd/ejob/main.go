// Command ejob is the ejob host and operator CLI; see package host/cli.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/ejob-io/ejob/host/cli"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := cli.Main(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
