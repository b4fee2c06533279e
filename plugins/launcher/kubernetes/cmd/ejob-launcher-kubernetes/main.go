// Command ejob-launcher-kubernetes is the plugin binary of the Kubernetes
// launcher (kind launcher, type KUBERNETES): it runs cloud jobs' items as
// Indexed Jobs and StatefulSets on the cluster each call's Config names.
package main

import (
	"github.com/ejob-io/ejob/plugins/launcher/kubernetes/plugin"
	"github.com/ejob-io/ejob/sdk"
	"github.com/ejob-io/ejob/spi"
)

// version is the plugin's version, as ejob's own (the module is released
// with it).
const version = "0.1.0-dev"

func main() {
	sdk.Serve(sdk.Plugins{
		Version:   version,
		Launchers: map[string]spi.Launcher{plugin.TypeName: plugin.New(sdk.Logger())},
	})
}
