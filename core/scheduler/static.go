package scheduler

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/ejob-io/ejob/spi"
)

// Static serves in-process implementations by type name (matched
// case-insensitively), for Go programs that embed ejob and for tests. The
// host uses its plugin catalog instead.
type Static struct {
	Sharding      map[string]spi.ShardingStrategy
	ErrorHandlers map[string]spi.ErrorHandler
	JobTypes      map[string]spi.JobExecutor
	ThreadPools   map[string]spi.ThreadPoolSizeProvider
	JobListeners  map[string]spi.JobListener
}

var _ Plugins = Static{}

func lookup[T any](kind spi.Kind, m map[string]T, name string) (T, error) {
	want := spi.NormalizeType(name)
	for k, v := range m {
		if spi.NormalizeType(k) == want {
			return v, nil
		}
	}
	var zero T
	names := slices.Sorted(maps.Keys(m))
	avail := strings.Join(names, ", ")
	if avail == "" {
		avail = "none"
	}
	return zero, fmt.Errorf("%w: no %s type %q (available in-process: %s)", spi.ErrUnknownType, kind, name, avail)
}

// ShardingStrategy implements Plugins.
func (s Static) ShardingStrategy(name string) (spi.ShardingStrategy, error) {
	return lookup(spi.KindSharding, s.Sharding, name)
}

// ErrorHandler implements Plugins.
func (s Static) ErrorHandler(name string) (spi.ErrorHandler, error) {
	return lookup(spi.KindErrorHandler, s.ErrorHandlers, name)
}

// JobExecutor implements Plugins.
func (s Static) JobExecutor(name string) (spi.JobExecutor, error) {
	return lookup(spi.KindJobType, s.JobTypes, name)
}

// ThreadPoolSizeProvider implements Plugins.
func (s Static) ThreadPoolSizeProvider(name string) (spi.ThreadPoolSizeProvider, error) {
	return lookup(spi.KindThreadPool, s.ThreadPools, name)
}

// JobListener implements Plugins.
func (s Static) JobListener(name string) (spi.JobListener, error) {
	return lookup(spi.KindJobListener, s.JobListeners, name)
}
