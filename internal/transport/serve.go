package transport

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"

	"github.com/ejob-io/ejob/internal/proctree"
	pb "github.com/ejob-io/ejob/internal/transport/pluginpb"
	"github.com/ejob-io/ejob/spi"
)

// ProtocolVersion is go-plugin's handshake protocol version for ejob
// plugins. It changes when the gRPC protocol changes incompatibly; a
// mismatch fails Launch with ErrProtocolVersion.
//
// Version 2: a host stops a cancelled Execute with Cancel and renews its
// execution lease with RenewLease, and relies on both (see stop.go and
// lease.go); version 1 plugins, which may lack them, are refused.
const ProtocolVersion = 2

const (
	magicCookieKey   = "EJOB_PLUGIN_MAGIC_COOKIE"
	magicCookieValue = "7c1c0a8e-ejob-plugin-5b1e4f0d"
	// pluginSetName is the single entry of the go-plugin PluginSet.
	pluginSetName = "ejob"
	// parentPollInterval is how often a plugin checks that its parent lives.
	parentPollInterval = 250 * time.Millisecond
)

// Handshake returns the go-plugin handshake config: ProtocolVersion and the
// magic cookie EJOB_PLUGIN_MAGIC_COOKIE.
func Handshake() plugin.HandshakeConfig {
	return plugin.HandshakeConfig{
		ProtocolVersion:  ProtocolVersion,
		MagicCookieKey:   magicCookieKey,
		MagicCookieValue: magicCookieValue,
	}
}

// LogLevelEnv names the environment variable in which the host passes its
// log level (trace, debug, info, warn, error or off) to the plugins it
// launches.
const LogLevelEnv = "EJOB_PLUGIN_LOG_LEVEL"

// Logger returns the logger plugin code should use: hclog JSON lines on the
// process's original stderr, which the host parses and re-levels under the
// plugin's name. Its level is the host's (LogLevelEnv), so that a plugin
// does not format lines the host would drop; Trace when the variable is
// unset or invalid (the host filters then).
func Logger() hclog.Logger {
	level := hclog.LevelFromString(os.Getenv(LogLevelEnv))
	if level == hclog.NoLevel {
		level = hclog.Trace
	}
	return hclog.New(&hclog.LoggerOptions{
		Level: level,
		// hclog.DefaultOutput is os.Stderr as it was at init, before
		// go-plugin's Serve swaps os.Stderr for its stdio pipe.
		Output:     hclog.DefaultOutput,
		JSONFormat: true,
	})
}

// Serve serves p over gRPC with go-plugin (AutoMTLS capable) and blocks
// until the host goes away; sdk.Serve is the public entry point. It installs
// type routing, panic recovery and the error-to-status mapping, watches the
// parent process (the plugin exits when its parent dies, even by SIGKILL:
// at once through Pdeathsig's SIGTERM on Linux, else within about
// parentPollInterval; in-flight calls are cancelled first so that what they
// started stops too), ignores SIGTERM and SIGINT otherwise (they are meant
// for the host, which drains through its plugins; see drainer.onSignals),
// and leaves stray writes to os.Stdout harmless: go-plugin redirects them
// to a stream the host logs.
//
// An invalid p (see spi.Plugins.Validate) is reported on stderr and the
// process exits with status 1.
func Serve(p spi.Plugins) {
	logger := Logger()
	srv, err := newServerImpl(p)
	if err != nil {
		fmt.Fprintf(os.Stderr, "ejob plugin: %v\n", err)
		os.Exit(1)
	}
	d := newDrainer(logger)
	if os.Getenv(magicCookieKey) == magicCookieValue {
		// Only when launched by a host; run by hand, go-plugin explains
		// and exits.
		ppid := os.Getppid()
		d.onSignals(ppid)
		go watchParent(ppid, parentPollInterval, d.terminate)
	}
	plugin.Serve(&plugin.ServeConfig{
		HandshakeConfig: Handshake(),
		Plugins:         plugin.PluginSet{pluginSetName: &grpcPlugin{server: srv}},
		GRPCServer: func(opts []grpc.ServerOption) *grpc.Server {
			opts = append(opts, grpc.ChainUnaryInterceptor(d.interceptor(), recoverInterceptor(logger)))
			return grpc.NewServer(opts...)
		},
		Logger: logger,
	})
	// The host asked the plugin to stop (go-plugin returns from Serve).
	stopDescendants(logger)
}

// stopDescendants kills every process this plugin started that is still
// running, with the process groups they lead, before the plugin exits. The
// host kills the plugin's process group once the plugin has exited, but a
// process that left the group (setsid, as daemonising programs do) would
// outlive it; found through /proc while the plugin is alive, it is still
// below the plugin. Only a process that was already re-parented (a double
// fork) escapes; docs/plugins.md says so.
func stopDescendants(log hclog.Logger) {
	var left []proctree.Proc
	var pids []int
	for _, p := range proctree.Descendants(os.Getpid()) {
		if p.State != 'Z' { // exited, not yet reaped
			left = append(left, p)
			pids = append(pids, p.PID)
		}
	}
	if len(left) == 0 {
		return
	}
	log.Warn("killing processes the plugin started that still run at its exit", "pids", pids)
	proctree.Kill(left)
}

// watchParent terminates the process when its parent changes (the parent
// died and the process was re-parented). It complements Pdeathsig, which
// Launch sets on Linux, for hosts that do not set it and for other systems.
func watchParent(ppid int, every time.Duration, terminate func(reason string)) {
	t := time.NewTicker(every)
	defer t.Stop()
	for range t.C {
		if now := os.Getppid(); now != ppid {
			terminate(fmt.Sprintf("parent %d went away (new parent %d)", ppid, now))
			return
		}
	}
}

// grpcPlugin is the one go-plugin plugin of an ejob binary: server is set
// on the plugin side, name on the host side.
type grpcPlugin struct {
	plugin.NetRPCUnsupportedPlugin
	server    *server
	name      string
	stopGrace time.Duration
}

var _ plugin.GRPCPlugin = (*grpcPlugin)(nil)

func (p *grpcPlugin) GRPCServer(_ *plugin.GRPCBroker, s *grpc.Server) error {
	if p.server == nil {
		return fmt.Errorf("ejob plugin: no implementations")
	}
	pb.RegisterPluginServer(s, p.server)
	return nil
}

// GRPCClient returns a *Conn whose done channel is go-plugin's ctx, which
// go-plugin cancels when the plugin process exits.
func (p *grpcPlugin) GRPCClient(ctx context.Context, _ *plugin.GRPCBroker, cc *grpc.ClientConn) (any, error) {
	return newConn(cc, p.name, ctx.Done(), p.stopGrace), nil
}
