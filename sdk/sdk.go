package sdk

import (
	"fmt"
	"os"

	"github.com/hashicorp/go-hclog"

	"github.com/ejob-io/ejob/internal/transport"
	"github.com/ejob-io/ejob/spi"
	"github.com/ejob-io/ejob/spi/gson"
)

// Plugins is what one plugin binary serves. Maps are keyed by type name,
// which the host matches case-insensitively (spi.NormalizeType); one binary
// may serve several types of several kinds.
type Plugins struct {
	// Version is the plugin's own version, reported to the host.
	Version       string
	Sharding      map[string]spi.ShardingStrategy
	ErrorHandlers map[string]spi.ErrorHandler
	JobTypes      map[string]spi.JobExecutor
	ThreadPools   map[string]spi.ThreadPoolSizeProvider
	// JobListeners are named in a job's config by jobListenerTypes.
	JobListeners map[string]spi.JobListener
}

// Validate reports why p cannot be served: no type at all, an empty type
// name, a nil implementation, or two names of one kind that differ only in
// case or surrounding space. The error wraps spi.ErrInvalidConfig.
func (p Plugins) Validate() error {
	if err := p.implementations().Validate(); err != nil {
		return fmt.Errorf("sdk: %w", err)
	}
	return nil
}

// Info is what the host learns about p: every (kind, type name), sorted,
// with spi.APIVersion.
func (p Plugins) Info() spi.Info { return p.implementations().Info() }

func (p Plugins) implementations() transport.Implementations {
	return transport.Implementations{
		PluginVersion: p.Version,
		Sharding:      p.Sharding,
		ErrorHandlers: p.ErrorHandlers,
		JobTypes:      p.JobTypes,
		ThreadPools:   p.ThreadPools,
		JobListeners:  p.JobListeners,
	}
}

// Serve serves p as an ejob plugin and returns when the host stops it; call
// it from main. If p is invalid it prints the reason on stderr and exits
// with status 1.
//
// A plugin must not write to stdout before Serve (stdout carries the
// handshake). After Serve starts, stray writes to os.Stdout and os.Stderr
// are harmless: the host logs them as warnings. Log with Logger instead.
// The process exits by itself when the host dies.
func Serve(p Plugins) {
	if err := p.Validate(); err != nil {
		fmt.Fprintf(os.Stderr, "ejob plugin: %v\n", err)
		os.Exit(1)
	}
	transport.Serve(p.implementations())
}

// Logger returns the logger plugins should use: JSON lines on stderr that
// the host re-levels under the plugin's name. It never writes to stdout.
func Logger() hclog.Logger { return transport.Logger() }

// ShardingContextJSON returns the JSON upstream ElasticJob's Gson produces
// for c, byte for byte (field order jobName, taskId, shardingTotalCount,
// jobParameter, shardingItem, shardingParameter; shardingParameter omitted
// when nil; HTML-safe escaping). SCRIPT jobs receive it as their last
// argument and HTTP jobs as a header, so a type that hands the context to
// programs written for upstream should use it.
func ShardingContextJSON(c spi.ShardingContext) []byte { return gson.ShardingContext(c) }
