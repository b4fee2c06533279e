package spi

import (
	"fmt"
	"sort"
	"strings"
)

// Plugins is a set of implementations: for each kind, its implementations
// keyed by type name. It is what a plugin binary serves (sdk.Serve), what
// the built-in types are (package plugins/builtin), and what a Go program
// embedding ejob hands the kernel, which resolves types through it with
// Lookup (or Resolve).
//
// Type names are matched case-insensitively (NormalizeType); Types and
// Info report them as spelled in the maps. One set may hold the same name
// under several kinds. Those a Plugins is given to only read it, so it is
// safe for concurrent use as long as its maps are not changed.
type Plugins struct {
	// Version is the plugin's own version string, reported to the host as
	// Info.PluginVersion.
	Version string
	// Sharding are named in a job's config by jobShardingStrategyType.
	Sharding map[string]ShardingStrategy
	// ErrorHandlers are named by jobErrorHandlerType.
	ErrorHandlers map[string]ErrorHandler
	// JobTypes are named by elasticJobType.
	JobTypes map[string]JobExecutor
	// ThreadPools are named by jobExecutorThreadPoolSizeProviderType.
	ThreadPools map[string]ThreadPoolSizeProvider
	// JobListeners are named by jobListenerTypes.
	JobListeners map[string]JobListener
	// Tracing are named by elasticjob.tracing.type in the host's file.
	Tracing map[string]Tracer
	// Launchers are named by ejob.cloud.launcher.type in the cloud
	// scheduler's file.
	Launchers map[string]Launcher
}

// kinds is the one list of the kinds and their maps: Kinds, Types,
// Validate, Lookup and Resolve all go through it, so a new kind is a new
// field of Plugins and a new line here.
func (p Plugins) kinds() []kindSet {
	return []kindSet{
		kindMap[ShardingStrategy]{KindSharding, p.Sharding},
		kindMap[ErrorHandler]{KindErrorHandler, p.ErrorHandlers},
		kindMap[JobExecutor]{KindJobType, p.JobTypes},
		kindMap[ThreadPoolSizeProvider]{KindThreadPool, p.ThreadPools},
		kindMap[JobListener]{KindJobListener, p.JobListeners},
		kindMap[Tracer]{KindTracing, p.Tracing},
		kindMap[Launcher]{KindLauncher, p.Launchers},
	}
}

// kindSet is one kind's implementations, seen without their interface.
type kindSet interface {
	kind() Kind
	// names returns the type names as spelled, unsorted.
	names() []string
	// get returns the implementation under exactly name (nil if none).
	get(name string) any
	// lookup finds name case-insensitively.
	lookup(name string) (any, bool)
	// isKindOf reports whether ptr is a *I for the kind's interface I.
	isKindOf(ptr any) bool
}

type kindMap[I any] struct {
	k Kind
	m map[string]I
}

func (s kindMap[I]) kind() Kind { return s.k }

func (s kindMap[I]) names() []string {
	out := make([]string, 0, len(s.m))
	for n := range s.m {
		out = append(out, n)
	}
	return out
}

func (s kindMap[I]) get(name string) any {
	if impl, ok := s.m[name]; ok {
		return impl
	}
	return nil
}

func (s kindMap[I]) lookup(name string) (any, bool) {
	if impl, ok := s.m[name]; ok {
		return impl, true
	}
	want := NormalizeType(name)
	for n, impl := range s.m {
		if NormalizeType(n) == want {
			return impl, true
		}
	}
	return nil, false
}

func (s kindMap[I]) isKindOf(ptr any) bool {
	_, ok := ptr.(*I)
	return ok
}

// sortedNames returns s's names sorted by normalised name, then as spelled.
func sortedNames(s kindSet) []string {
	names := s.names()
	sort.Slice(names, func(a, b int) bool {
		na, nb := NormalizeType(names[a]), NormalizeType(names[b])
		if na != nb {
			return na < nb
		}
		return names[a] < names[b]
	})
	return names
}

// Types lists every (kind, type name) in p, sorted by kind (in Kinds
// order), then by normalised name; names are as spelled in the maps.
func (p Plugins) Types() []TypeKey {
	var keys []TypeKey
	for _, s := range p.kinds() {
		for _, n := range sortedNames(s) {
			keys = append(keys, TypeKey{Kind: s.kind(), Type: n})
		}
	}
	return keys
}

// Info is what the host learns about p: its Version, APIVersion and Types.
func (p Plugins) Info() Info {
	return Info{PluginVersion: p.Version, APIVersion: APIVersion, Types: p.Types()}
}

// Validate reports what makes p unservable: no implementation at all, an
// empty type name, a nil implementation, or two names of one kind that are
// equal after NormalizeType. The error wraps ErrInvalidConfig and names
// every problem.
func (p Plugins) Validate() error {
	var problems []string
	total := 0
	for _, s := range p.kinds() {
		k := s.kind()
		seen := map[string]string{}
		names := s.names()
		sort.Strings(names)
		for _, name := range names {
			total++
			norm := NormalizeType(name)
			switch {
			case norm == "":
				problems = append(problems, fmt.Sprintf("%s: empty type name %q", k, name))
			case s.get(name) == nil:
				problems = append(problems, fmt.Sprintf("%s %q: nil implementation", k, name))
			}
			if prev, dup := seen[norm]; dup && norm != "" {
				a, b := prev, name
				if b < a {
					a, b = b, a
				}
				problems = append(problems, fmt.Sprintf("%s: type names %q and %q are the same ignoring case", k, a, b))
			}
			seen[norm] = name
		}
	}
	if total == 0 {
		problems = append(problems, "no implementation to serve")
	}
	if len(problems) > 0 {
		return fmt.Errorf("%w: %s", ErrInvalidConfig, strings.Join(problems, "; "))
	}
	return nil
}

// Lookup implements Resolver: it returns the implementation of kind
// registered under name, matched case-insensitively, or an error wrapping
// ErrUnknownType that lists the kind's available types.
func (p Plugins) Lookup(kind Kind, name string) (any, error) {
	for _, s := range p.kinds() {
		if s.kind() != kind {
			continue
		}
		if impl, ok := s.lookup(name); ok {
			return impl, nil
		}
		avail := strings.Join(sortedNames(s), ", ")
		if avail == "" {
			avail = "none"
		}
		return nil, fmt.Errorf("%w: no %s type %q (available: %s)", ErrUnknownType, kind, name, avail)
	}
	return nil, fmt.Errorf("%w: no kind %q", ErrUnknownType, kind)
}

// Resolver finds implementations by kind and type name. Plugins is one
// (in-process implementations); the host's plugin catalog is another (the
// types served by plugin processes, reached through the transport).
type Resolver interface {
	// Lookup returns the implementation of kind registered under name,
	// matched case-insensitively (NormalizeType): a ShardingStrategy for
	// KindSharding, an ErrorHandler for KindErrorHandler, a JobExecutor for
	// KindJobType, a ThreadPoolSizeProvider for KindThreadPool, a
	// JobListener for KindJobListener, a Tracer for KindTracing, a Launcher for KindLauncher. An unknown name is an error
	// wrapping ErrUnknownType that lists the available types.
	Lookup(kind Kind, name string) (any, error)
}

var _ Resolver = Plugins{}

// Resolve looks name up in r under the kind whose interface is I (for
// instance Resolve[JobExecutor](r, "SCRIPT") looks up KindJobType) and
// returns it as an I. Errors are r's, or say that I is no kind's interface
// or that r returned something else.
func Resolve[I any](r Resolver, name string) (I, error) {
	var zero I
	kind, ok := kindOf[I]()
	if !ok {
		return zero, fmt.Errorf("spi: %T is not the interface of a kind", (*I)(nil))
	}
	impl, err := r.Lookup(kind, name)
	if err != nil {
		return zero, err
	}
	typed, ok := impl.(I)
	if !ok {
		return zero, fmt.Errorf("spi: %s type %q: the implementation (%T) does not implement the kind's interface", kind, name, impl)
	}
	return typed, nil
}

// kindOf returns the kind whose interface is I.
func kindOf[I any]() (Kind, bool) {
	for _, s := range (Plugins{}).kinds() {
		if s.isKindOf((*I)(nil)) {
			return s.kind(), true
		}
	}
	return "", false
}
