// Command ejob is the ejob host and operator CLI; see package host/cli.
package main

import (
	"context"
	"os"

	"github.com/ejob-io/ejob/host/cli"
)

func main() {
	os.Exit(cli.Main(context.Background(), os.Args[1:], os.Stdout, os.Stderr))
}
