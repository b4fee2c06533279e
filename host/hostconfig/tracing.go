package hostconfig

import (
	"path/filepath"
	"slices"
	"strings"

	"github.com/ejob-io/ejob/spi"
)

// The keys of elasticjob.tracing (the starter's TracingProperties plus its
// dedicated data source).
const (
	keyTracingType       = "type"
	keyDataSource        = "dataSource"
	keyIncludeJobNames   = "includeJobNames"
	keyExcludeJobNames   = "excludeJobNames"
	keyTracingDriver     = "driver"
	keyTracingURL        = "url"
	defaultTracingDBName = "ejob-tracing.db"
)

func tracingKeys() []string {
	return []string{keyTracingType, keyDataSource, keyIncludeJobNames, keyExcludeJobNames}
}

// DefaultTracingFile is the SQLite file a standalone host records its
// history in when elasticjob.tracing has no dataSource: next to the
// configuration file.
const DefaultTracingFile = defaultTracingDBName

// Tracing is elasticjob.tracing: where execution events are recorded.
type Tracing struct {
	// Type is the tracing sink's type (RDB, or a plugin's), matched
	// case-insensitively.
	Type string
	// DataSource is the sink's settings, keys as written (for RDB:
	// driver, url or jdbcUrl, username, password, maximumPoolSize), with
	// ${ENV} expanded. A standalone host without one gets
	// {driver: sqlite, url: <config dir>/ejob-tracing.db}.
	DataSource map[string]string
	// Include and Exclude are includeJobNames and excludeJobNames (at
	// most one is set).
	Include, Exclude []string
	// DefaultDataSource says DataSource is the standalone default.
	DefaultDataSource bool
	// Line is the line of the tracing key.
	Line int
}

// Traced reports whether the job's events are recorded (the starter's
// filter).
func (t *Tracing) Traced(job string) bool {
	return (len(t.Include) == 0 || slices.Contains(t.Include, job)) && !slices.Contains(t.Exclude, job)
}

func (d *decoder) tracing(e entry, opts LoadOptions, standalone bool, baseDir string) *Tracing {
	fs, ok := d.section(e.value, e.path, tracingKeys(), false)
	if !ok {
		return nil
	}
	t := &Tracing{Line: e.line()}
	start := len(d.problems)
	te, ok := fs[keyTracingType]
	if !ok {
		d.missing(e.line(), e.path, keyTracingType, " (RDB records into a database)")
	} else if t.Type, ok = d.str(te); ok {
		switch kt := knownType(opts, spi.KindTracing); {
		case strings.TrimSpace(t.Type) == "":
			d.report(te.value.Line, nil, "%s: must not be empty (RDB records into a database)", te.path)
		case kt != nil && !kt(t.Type):
			d.report(te.value.Line, spi.ErrUnknownType, "%s: unknown tracing type %q%s", te.path, t.Type, available(opts, spi.KindTracing))
		}
	}
	for _, l := range []struct {
		key string
		dst *[]string
	}{{keyIncludeJobNames, &t.Include}, {keyExcludeJobNames, &t.Exclude}} {
		if le, ok := fs[l.key]; ok {
			*l.dst, _, _ = d.list(le)
		}
	}
	if len(t.Include) > 0 && len(t.Exclude) > 0 {
		// Upstream's starter message.
		d.report(e.line(), nil, "%s: [tracing.includeJobNames] and [tracing.excludeJobNames] are mutually exclusive.", e.path)
	}
	var lines map[string]int
	dse, hasDS := fs[keyDataSource]
	if hasDS {
		t.DataSource, lines, _ = d.stringMap(dse, func(s string) string { return s })
	}
	switch {
	case len(t.DataSource) > 0:
	case standalone:
		path := defaultTracingDBName
		if baseDir != "" {
			path = filepath.Join(baseDir, path)
		}
		t.DataSource = map[string]string{keyTracingDriver: "sqlite", keyTracingURL: path}
		t.DefaultDataSource = true
	default:
		d.report(e.line(), nil, "%s: no dataSource: a host on ZooKeeper records into a database its peers share "+
			"(set %s.dataSource.url, e.g. jdbc:postgresql://db:5432/ejob; a standalone host defaults to SQLite)", e.path, e.path)
	}
	if len(d.problems) > start || opts.ValidateProps == nil {
		return t
	}
	if err := opts.ValidateProps(spi.KindTracing, t.Type, "", t.DataSource); err != nil {
		line := e.line()
		if hasDS {
			line = dse.line()
			for k, l := range lines {
				if strings.Contains(err.Error(), k) {
					line = l
				}
			}
		}
		d.report(line, err, "%s.%s: %v", e.path, keyDataSource, err)
	}
	return t
}
