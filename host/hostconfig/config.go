package hostconfig

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/ejob-io/ejob/core/config"
	"github.com/ejob-io/ejob/core/instance"
	"github.com/ejob-io/ejob/core/kernel"
	"github.com/ejob-io/ejob/core/reg/zookeeper"
	"github.com/ejob-io/ejob/spi"
)

// Sentinel errors.
var (
	// ErrInvalidFile is wrapped by every error that Load and Parse return
	// for a file they could read but not accept (a *FileError).
	ErrInvalidFile = errors.New("invalid configuration file")
	// ErrEnvNotSet is wrapped by the problem reported for a ${NAME}
	// placeholder whose environment variable is unset and has no default.
	ErrEnvNotSet = errors.New("environment variable not set")
)

// DefaultDrainTimeout is HostSettings.DrainTimeout when the file does not
// set drainTimeout (the scheduler's default).
const DefaultDrainTimeout = kernel.DefaultDrainTimeout

// File is a loaded configuration file. Every field is complete and
// validated.
type File struct {
	// Name is the file name as given to Load or Parse.
	Name string
	// Registry is elasticjob.regCenter; nil means the host runs standalone
	// on the embedded registry.
	Registry *zookeeper.Config
	// Jobs holds elasticjob.jobs, sorted by name. There is at least one.
	Jobs []Job
	// Host is the ejob section, defaults filled in.
	Host HostSettings
	// Tracing is elasticjob.tracing; nil records no events.
	Tracing *Tracing
}

// Job returns the job with the given name.
func (f *File) Job(name string) (Job, bool) {
	i, ok := slices.BinarySearchFunc(f.Jobs, name, func(j Job, n string) int { return strings.Compare(j.Name, n) })
	if !ok {
		return Job{}, false
	}
	return f.Jobs[i], true
}

// Job is one entry of elasticjob.jobs.
type Job struct {
	// Name is the job's key under elasticjob.jobs, taken literally.
	Name string
	// Type is elasticJobType as written (SCRIPT, HTTP or a plugin's type;
	// matched case-insensitively by the plugin catalog). It is also the
	// value of the job's root node in the registry.
	Type string
	// Config is the job configuration, with the Java API's defaults for
	// absent keys (see config.New); Config.JobName == Name.
	Config *config.JobConfiguration
	// BootstrapBeanName is the starter's jobBootstrapBeanName. ejob keeps it
	// but does not need it: a one-off job is triggered by its name.
	BootstrapBeanName string
	// Line is the line of the job's key in the file.
	Line int
}

// OneOff reports whether the job has no cron: it runs only when triggered
// (`ejob trigger`).
func (j Job) OneOff() bool { return j.Config.Cron == "" }

// HostSettings is the ejob section, and the starter's settings of the
// host rather than of a job (elasticjob.dump).
type HostSettings struct {
	// PluginsDir is the directory of ejob-* plugin binaries; empty means
	// built-in types only. Load makes a relative path relative to the
	// file's directory.
	PluginsDir string
	// LockFile pins plugin binaries by SHA-256; empty means
	// PluginsDir/ejob-plugins.lock when it exists. Relative paths as for
	// PluginsDir.
	LockFile string
	// DrainTimeout is how long the host waits, on SIGTERM, for running
	// items to finish before it cancels them (default DefaultDrainTimeout;
	// 0 cancels at once).
	DrainTimeout time.Duration
	// PluginStopGrace bounds how long a job-type plugin may take to stop
	// an item after its ctx ended before the host kills the plugin process
	// (and what it started); 0 means the plugin catalog's default
	// (transport.DefaultStopGrace, 10 s).
	PluginStopGrace time.Duration
	// LogLevel is trace, debug, info, warn or error (lower case); empty
	// means the command line's --log-level.
	LogLevel string
	// PreferredNetworkInterface is upstream's
	// elasticjob.preferred.network.interface.
	PreferredNetworkInterface string
	// PreferredNetworkIP is upstream's elasticjob.preferred.network.ip: an
	// address prefix or a regular expression.
	PreferredNetworkIP string
	// DumpPort is elasticjob.dump.port: the TCP port of the dump service
	// (`echo dump@JOB | nc HOST PORT`); 0 picks a free port, which the
	// host logs. nil: no dump service (no elasticjob.dump section, or
	// enabled: false).
	DumpPort *int
	// DumpAddress is elasticjob.dump.address: the IP address the dump
	// service listens on; "" is loopback (127.0.0.1), "0.0.0.0" or "::"
	// every interface.
	DumpAddress string
	// JavaPeers says what the host does when it is about to write a job's
	// configuration to a ZooKeeper namespace with values a Java ElasticJob
	// 3.0.x instance cannot read or run (config.JavaPeerIssues): warn
	// (default), strict (refuse to start) or off.
	JavaPeers JavaPeers
	// TracingRetention: the host that leads the first of its jobs (by
	// name) deletes recorded executions and status events older than this
	// once a day (elasticjob.tracing); 0 keeps them.
	TracingRetention time.Duration
	// HTTP is ejob.http: the operations HTTP server (REST API, metrics,
	// health); nil: none.
	HTTP *HTTPSettings
	// ControlSocket is the Unix socket on which a standalone host (no
	// regCenter) serves the operator commands (host/control); empty means
	// the default derived from the file's path. Relative paths as for
	// PluginsDir.
	ControlSocket string
}

// JavaPeers is the ejob.javaPeers setting.
type JavaPeers string

// The ejob.javaPeers values.
const (
	// JavaPeersWarn logs one WARN per job naming each such value and what
	// a Java instance would do with it, and starts.
	JavaPeersWarn JavaPeers = "warn"
	// JavaPeersStrict refuses to start with that message.
	JavaPeersStrict JavaPeers = "strict"
	// JavaPeersOff says nothing.
	JavaPeersOff JavaPeers = "off"
)

// DefaultJavaPeers is HostSettings.JavaPeers when the file does not set
// javaPeers.
const DefaultJavaPeers = JavaPeersWarn

// IPOptions returns the server-IP selection options: the environment
// (instance.IPOptionsFromEnv; getenv nil means os.Getenv), overridden by
// the settings the file makes.
func (h HostSettings) IPOptions(getenv func(string) string) instance.IPOptions {
	o := instance.IPOptionsFromEnv(getenv)
	if h.PreferredNetworkInterface != "" {
		o.PreferredInterface = h.PreferredNetworkInterface
	}
	if h.PreferredNetworkIP != "" {
		o.PreferredIP = h.PreferredNetworkIP
	}
	return o
}

// LoadOptions plugs checks that live elsewhere into Load and Parse.
type LoadOptions struct {
	// Getenv looks up environment variables for ${NAME} placeholders; nil
	// means os.LookupEnv.
	Getenv func(name string) (value string, ok bool)
	// KnownType reports whether a type name of a kind exists (the plugin
	// catalog; matched case-insensitively). It is asked for every job's
	// elasticJobType (spi.KindJobType) and for non-empty sharding,
	// thread-pool and error-handler types. nil skips these checks.
	KnownType func(kind spi.Kind, name string) bool
	// Types lists the available type names of a kind, for error messages.
	// Optional.
	Types func(kind spi.Kind) []string
	// KnownListener reports whether a job listener type exists. nil skips
	// the check.
	KnownListener func(name string) bool
	// ValidateProps checks a job's props for its job type (kind
	// spi.KindJobType) and for its error handler (spi.KindErrorHandler,
	// only when jobErrorHandlerType is set, as upstream). It is called only
	// for types KnownType accepted. nil skips the check.
	ValidateProps func(kind spi.Kind, typeName, jobName string, props map[string]string) error
}

// Load reads and checks the configuration file at path. A relative
// pluginsDir or lockFile is made relative to the file's directory. It
// returns a complete File, or an error: a *FileError wrapping
// ErrInvalidFile when the file is not acceptable, or the read error.
func Load(path string, opts LoadOptions) (*File, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("configuration file: %w", err)
	}
	return parse(path, data, opts, filepath.Dir(path))
}

// Parse checks configuration data; name is used in messages. Paths are
// kept as written. It returns a complete File or a *FileError wrapping
// ErrInvalidFile.
func Parse(name string, data []byte, opts LoadOptions) (*File, error) {
	return parse(name, data, opts, "")
}

// Problem is one thing wrong with a file.
type Problem struct {
	File string
	// Line is 1-based; 0 when the problem concerns the whole file.
	Line int
	// Column is 1-based; 0 when only the line is known (every problem
	// but YAML syntax errors).
	Column int
	// Msg is the reason, starting with the key path it concerns.
	Msg string
	// Err is the underlying error, if any (spi.ErrUnknownType,
	// ErrEnvNotSet, a cron parse error, ...).
	Err error
}

// Error returns "FILE:LINE: reason", or "FILE:LINE:COLUMN: reason".
func (p *Problem) Error() string {
	switch {
	case p.Line <= 0:
		return fmt.Sprintf("%s: %s", p.File, p.Msg)
	case p.Column > 0:
		return fmt.Sprintf("%s:%d:%d: %s", p.File, p.Line, p.Column, p.Msg)
	}
	return fmt.Sprintf("%s:%d: %s", p.File, p.Line, p.Msg)
}

// Unwrap returns ErrInvalidFile and the underlying error.
func (p *Problem) Unwrap() []error {
	if p.Err != nil {
		return []error{ErrInvalidFile, p.Err}
	}
	return []error{ErrInvalidFile}
}

// FileError lists every problem found in a file, sorted by line.
type FileError struct {
	Problems []*Problem
}

// Error returns one "FILE:LINE: reason" line per problem.
func (e *FileError) Error() string {
	lines := make([]string, len(e.Problems))
	for i, p := range e.Problems {
		lines[i] = p.Error()
	}
	return strings.Join(lines, "\n")
}

// Unwrap returns the problems (each wraps ErrInvalidFile).
func (e *FileError) Unwrap() []error {
	out := make([]error, len(e.Problems))
	for i, p := range e.Problems {
		out[i] = p
	}
	return out
}
