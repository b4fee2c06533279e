package kernel

import (
	"context"
	"sync"

	"github.com/ejob-io/ejob/core/executor"
	"github.com/ejob-io/ejob/core/trigger"
	"github.com/ejob-io/ejob/spi"
)

// The per-job memory Add saves, each behind one type. Both were measured
// with BenchmarkIdleJobs (bench_test.go: the heap per idle job, 1,000 and
// 10,000 jobs); rerun it, with EJOB_HEAPPROFILE set for a heap profile,
// before changing either.

// scheduleCache holds the parsed schedules by cron and time zone, so that
// the jobs with the same cron and time zone share one rather than each
// holding its own (some 360 bytes each): a parsed schedule is immutable and
// safe for concurrent use (cron.Schedule). The zero value is ready.
type scheduleCache struct {
	mu     sync.Mutex
	scheds map[schedKey]trigger.Schedule
}

// schedKey is a cron expression in a time zone.
type schedKey struct{ expr, tz string }

// maxScheds bounds a scheduleCache: past it, schedules are parsed anew.
const maxScheds = 4096

// get returns schedule(expr, tz), parsed at the first call for them.
func (c *scheduleCache) get(expr, tz string) (trigger.Schedule, error) {
	k := schedKey{expr, tz}
	c.mu.Lock()
	sc, ok := c.scheds[k]
	c.mu.Unlock()
	if ok {
		return sc, nil
	}
	sc, err := schedule(expr, tz)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.scheds == nil {
		c.scheds = make(map[schedKey]trigger.Schedule)
	}
	if len(c.scheds) < maxScheds {
		c.scheds[k] = sc
	}
	return sc, nil
}

// pluginLookups resolve the plugin types of every job: made once by New and
// shared, rather than three closures made for each job.
type pluginLookups struct {
	strategy     func(name string) (spi.ShardingStrategy, error)
	errorHandler executor.ErrorHandlerLookup
	poolSize     executor.PoolSizeLookup
}

func newPluginLookups(plugins Plugins) pluginLookups {
	return pluginLookups{
		strategy: func(name string) (spi.ShardingStrategy, error) {
			return spi.Resolve[spi.ShardingStrategy](plugins, name)
		},
		errorHandler: func(_ context.Context, typ string) (spi.ErrorHandler, error) {
			return spi.Resolve[spi.ErrorHandler](plugins, typ)
		},
		poolSize: func(_ context.Context, typ string) (spi.ThreadPoolSizeProvider, error) {
			return spi.Resolve[spi.ThreadPoolSizeProvider](plugins, typ)
		},
	}
}
