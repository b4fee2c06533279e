package spi

import (
	"errors"
	"strings"
)

// APIVersion is the version of these contracts. A plugin reports the
// version it was built against in Info; the host refuses a plugin whose
// APIVersion differs from its own.
//
// Adding a kind or an RPC is compatible and keeps the version: a plugin
// that does not know a kind (KindJobListener, say) serves its other RPCs
// unchanged and simply does not report that kind. The version changes
// only when an existing RPC or struct changes meaning.
const APIVersion = 1

// Kind names an extension point.
type Kind string

// The extension points.
const (
	KindSharding     Kind = "sharding"
	KindErrorHandler Kind = "errorhandler"
	KindJobType      Kind = "jobtype"
	KindThreadPool   Kind = "threadpool"
	KindJobListener  Kind = "joblistener"
	KindTracing      Kind = "tracing"
	KindLauncher     Kind = "launcher"
)

// Kinds lists every extension point in a stable order (that of Plugins'
// fields).
func Kinds() []Kind {
	sets := Plugins{}.kinds()
	kinds := make([]Kind, len(sets))
	for i, s := range sets {
		kinds[i] = s.kind()
	}
	return kinds
}

// Valid reports whether k is one of the known kinds.
func (k Kind) Valid() bool {
	for _, known := range Kinds() {
		if k == known {
			return true
		}
	}
	return false
}

// TypeKey identifies one implementation: its kind and its type name.
// Type names are matched case-insensitively, as upstream ElasticJob resolves
// them; use NormalizeType to build map keys.
type TypeKey struct {
	Kind Kind
	Type string
}

// NormalizeType returns the canonical (upper-case, trimmed) spelling of a
// type name, the form used for case-insensitive lookups.
func NormalizeType(name string) string {
	return strings.ToUpper(strings.TrimSpace(name))
}

// Info describes what one plugin binary serves. One binary may serve
// several types, of several kinds.
type Info struct {
	// PluginVersion is the plugin author's own version string.
	PluginVersion string
	// APIVersion is the spi.APIVersion the plugin was built against.
	APIVersion int
	// Types lists every (kind, type name) the plugin serves.
	Types []TypeKey
}

// Sentinel errors. Implementations and transports wrap them with %w so that
// callers can branch with errors.Is.
var (
	// ErrPluginExited means the plugin process went away before or during
	// the call. The call's effect is unknown. The host relaunches the
	// process; a caller may retry a call that is safe to repeat.
	ErrPluginExited = errors.New("plugin exited")
	// ErrUnsupported means the implementation does not serve the requested
	// kind, type or operation. Retrying does not help.
	ErrUnsupported = errors.New("unsupported")
	// ErrInvalidConfig means the request's configuration (props, sharding
	// parameters, type name) is wrong. Retrying does not help until the
	// configuration changes.
	ErrInvalidConfig = errors.New("invalid config")
	// ErrUnknownType means no implementation is registered under a type
	// name. The wrapping error lists the available types.
	ErrUnknownType = errors.New("unknown type")
)
