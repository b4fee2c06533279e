package daemon

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/hashicorp/go-hclog"

	"github.com/ejob-io/ejob/core/config"
	"github.com/ejob-io/ejob/core/reg"
	"github.com/ejob-io/ejob/host/hostconfig"
)

// ErrJavaPeers is wrapped by the error Run returns under ejob.javaPeers:
// strict when a job would write values a Java instance cannot read.
var ErrJavaPeers = errors.New("values a Java ElasticJob 3.0.x instance cannot read")

// checkJavaPeers applies ejob.javaPeers before any job starts: for each job
// that will write its configuration to the namespace (its config node is
// absent, or the job overwrites it, as upstream's
// ConfigurationService.setUpJobConfiguration decides) and has values a Java
// ElasticJob 3.0.x instance cannot read or run (config.JavaPeerIssues),
// warn logs one WARN naming the job, each key and what a Java instance
// would do; strict returns an error saying the same for every such job;
// off says nothing. A job that runs with the registry's configuration
// writes nothing, so it is not checked.
func checkJavaPeers(ctx context.Context, c reg.Reader, file *hostconfig.File, mode hostconfig.JavaPeers, log hclog.Logger) error {
	if mode == hostconfig.JavaPeersOff {
		return nil
	}
	var refused []string
	for _, j := range file.Jobs {
		issues := config.JavaPeerIssues(config.JavaPeerJob{Config: j.Config, Type: j.Type})
		if len(issues) == 0 {
			continue
		}
		if !j.Config.Overwrite {
			_, exists, err := c.Exists(ctx, reg.Join(j.Name, "config"))
			if err != nil {
				return fmt.Errorf("%s:%d: job %q: read its config node: %w", file.Name, j.Line, j.Name, err)
			}
			if exists {
				continue // the registry's configuration wins; nothing is written
			}
		}
		what := make([]string, len(issues))
		keys := make([]string, len(issues))
		for i, is := range issues {
			what[i], keys[i] = is.String(), is.Key
		}
		if mode == hostconfig.JavaPeersStrict {
			refused = append(refused, fmt.Sprintf("%s:%d: elasticjob.jobs.%s: %s", file.Name, j.Line, j.Name, strings.Join(what, "; ")))
			continue
		}
		log.Warn("this job's configuration, about to be written to ZooKeeper, has values a Java ElasticJob 3.0.x instance "+
			"sharing the namespace cannot read (set ejob.javaPeers: off if none ever will)",
			"job", j.Name, "keys", strings.Join(keys, ","), "java", strings.Join(what, "; "))
	}
	if len(refused) > 0 {
		return fmt.Errorf("ejob.javaPeers is strict and jobs would write %w:\n%s\n(change these values, or set ejob.javaPeers: warn or off)",
			ErrJavaPeers, strings.Join(refused, "\n"))
	}
	return nil
}
