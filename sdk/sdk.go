package sdk

import (
	"github.com/hashicorp/go-hclog"

	"github.com/ejob-io/ejob/internal/transport"
	"github.com/ejob-io/ejob/spi"
	"github.com/ejob-io/ejob/spi/gson"
)

// Plugins is what one plugin binary serves: spi.Plugins, the set of
// implementations by kind and type name (the host matches type names
// case-insensitively; one binary may serve several types of several
// kinds). Its Validate says why a set cannot be served; Info is what the
// host learns about it.
type Plugins = spi.Plugins

// Serve serves p as an ejob plugin and returns when the host stops it; call
// it from main. If p is invalid (spi.Plugins.Validate) it prints the reason
// on stderr and exits with status 1.
//
// A plugin must not write to stdout before Serve (stdout carries the
// handshake). After Serve starts, stray writes to os.Stdout and os.Stderr
// are harmless: the host logs them as warnings. Log with Logger instead.
// The process exits by itself when the host dies.
func Serve(p Plugins) {
	transport.Serve(p)
}

// Logger returns the logger plugins should use: JSON lines on stderr that
// the host re-levels under the plugin's name. It never writes to stdout.
func Logger() hclog.Logger { return transport.Logger() }

// ShardingContextJSON returns the JSON upstream ElasticJob's Gson produces
// for c, byte for byte (field order jobName, taskId, shardingTotalCount,
// jobParameter, shardingItem, shardingParameter; shardingParameter omitted
// when nil; HTML-safe escaping), plus fencingToken last when c has one
// (c.FencingToken, see spi.ShardingContext). SCRIPT jobs receive it as
// their last argument and HTTP jobs as a header, so a type that hands the
// context to programs written for upstream should use it.
func ShardingContextJSON(c spi.ShardingContext) []byte { return gson.ShardingContext(c) }
