package transport

import (
	"fmt"
	"sort"
	"strings"

	"github.com/ejob-io/ejob/spi"
)

// Implementations is what one plugin binary serves, keyed by type name.
// Names are matched case-insensitively (spi.NormalizeType); Info reports
// them as spelled here.
type Implementations struct {
	// PluginVersion is the plugin author's own version string.
	PluginVersion string
	Sharding      map[string]spi.ShardingStrategy
	ErrorHandlers map[string]spi.ErrorHandler
	JobTypes      map[string]spi.JobExecutor
	ThreadPools   map[string]spi.ThreadPoolSizeProvider
	JobListeners  map[string]spi.JobListener
}

// Info describes impls: APIVersion is spi.APIVersion and Types are sorted by
// kind (in spi.Kinds order), then by normalised type name.
func (i Implementations) Info() spi.Info {
	info := spi.Info{PluginVersion: i.PluginVersion, APIVersion: spi.APIVersion}
	for _, k := range spi.Kinds() {
		names := i.names(k)
		sort.Slice(names, func(a, b int) bool {
			na, nb := spi.NormalizeType(names[a]), spi.NormalizeType(names[b])
			if na != nb {
				return na < nb
			}
			return names[a] < names[b]
		})
		for _, n := range names {
			info.Types = append(info.Types, spi.TypeKey{Kind: k, Type: n})
		}
	}
	return info
}

// names returns the type names served for kind k, unsorted.
func (i Implementations) names(k spi.Kind) []string {
	var out []string
	switch k {
	case spi.KindSharding:
		for n := range i.Sharding {
			out = append(out, n)
		}
	case spi.KindErrorHandler:
		for n := range i.ErrorHandlers {
			out = append(out, n)
		}
	case spi.KindJobType:
		for n := range i.JobTypes {
			out = append(out, n)
		}
	case spi.KindThreadPool:
		for n := range i.ThreadPools {
			out = append(out, n)
		}
	case spi.KindJobListener:
		for n := range i.JobListeners {
			out = append(out, n)
		}
	}
	return out
}

// Validate reports what makes impls unservable: no type at all, an empty
// type name, a nil implementation, or two names of one kind that are equal
// after spi.NormalizeType. The error wraps spi.ErrInvalidConfig.
func (i Implementations) Validate() error {
	var problems []string
	total := 0
	check := func(k spi.Kind, name string, isNil bool, seen map[string]string) {
		total++
		norm := spi.NormalizeType(name)
		switch {
		case norm == "":
			problems = append(problems, fmt.Sprintf("%s: empty type name %q", k, name))
		case isNil:
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
	for _, k := range spi.Kinds() {
		seen := map[string]string{}
		names := i.names(k)
		sort.Strings(names)
		for _, n := range names {
			var isNil bool
			switch k {
			case spi.KindSharding:
				isNil = i.Sharding[n] == nil
			case spi.KindErrorHandler:
				isNil = i.ErrorHandlers[n] == nil
			case spi.KindJobType:
				isNil = i.JobTypes[n] == nil
			case spi.KindThreadPool:
				isNil = i.ThreadPools[n] == nil
			case spi.KindJobListener:
				isNil = i.JobListeners[n] == nil
			}
			check(k, n, isNil, seen)
		}
	}
	if total == 0 {
		problems = append(problems, "no implementation to serve")
	}
	if len(problems) > 0 {
		return fmt.Errorf("%w: %s", spi.ErrInvalidConfig, strings.Join(problems, "; "))
	}
	return nil
}

// router finds implementations by normalised type name.
type router struct {
	info          spi.Info
	sharding      map[string]spi.ShardingStrategy
	errorHandlers map[string]spi.ErrorHandler
	jobTypes      map[string]spi.JobExecutor
	threadPools   map[string]spi.ThreadPoolSizeProvider
	jobListeners  map[string]spi.JobListener
}

func newRouter(impls Implementations) (*router, error) {
	if err := impls.Validate(); err != nil {
		return nil, err
	}
	return &router{
		info:          impls.Info(),
		sharding:      normalized(impls.Sharding),
		errorHandlers: normalized(impls.ErrorHandlers),
		jobTypes:      normalized(impls.JobTypes),
		threadPools:   normalized(impls.ThreadPools),
		jobListeners:  normalized(impls.JobListeners),
	}, nil
}

func normalized[T any](m map[string]T) map[string]T {
	out := make(map[string]T, len(m))
	for k, v := range m {
		out[spi.NormalizeType(k)] = v
	}
	return out
}

func lookup[T any](r *router, m map[string]T, k spi.Kind, typeName string) (T, error) {
	if impl, ok := m[spi.NormalizeType(typeName)]; ok {
		return impl, nil
	}
	var zero T
	var served []string
	for _, t := range r.info.Types {
		if t.Kind == k {
			served = append(served, t.Type)
		}
	}
	list := "none"
	if len(served) > 0 {
		list = strings.Join(served, ", ")
	}
	return zero, fmt.Errorf("%w: %s type %q; this plugin serves %s types: %s", spi.ErrUnknownType, k, typeName, k, list)
}
