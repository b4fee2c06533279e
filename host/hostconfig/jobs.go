package hostconfig

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/ejob-io/ejob/core/config"
	"github.com/ejob-io/ejob/core/cron"
	"github.com/ejob-io/ejob/spi"
)

func (d *decoder) jobs(e entry, opts LoadOptions) []Job {
	ps, ok := d.pairs(e.value, e.path, func(s string) string { return s })
	if !ok {
		return nil
	}
	if len(ps) == 0 {
		d.report(e.line(), nil, "%s: no jobs: a host without jobs has nothing to run", e.path)
		return nil
	}
	out := make([]Job, 0, len(ps))
	keys := newJobKeySet() // the same for every job
	for _, je := range ps {
		if j, ok := d.job(je, opts, keys); ok {
			out = append(out, j)
		}
	}
	slices.SortFunc(out, func(a, b Job) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// kindNoun names a kind in messages.
func kindNoun(k spi.Kind) string {
	switch k {
	case spi.KindJobType:
		return "job type"
	case spi.KindSharding:
		return "sharding strategy type"
	case spi.KindThreadPool:
		return "thread pool type"
	case spi.KindErrorHandler:
		return "error handler type"
	case spi.KindJobListener:
		return "job listener type"
	case spi.KindTracing:
		return "tracing type"
	case spi.KindLauncher:
		return "launcher type"
	}
	return string(k) + " type"
}

// available returns " (available: A, B)" when opts can list the types.
func available(opts LoadOptions, k spi.Kind) string {
	if opts.Types == nil {
		return ""
	}
	ts := opts.Types(k)
	if len(ts) == 0 {
		return " (none available)"
	}
	return " (available: " + strings.Join(ts, ", ") + ")"
}

// jobKeySet is fileJobKeys, jobKeys and its byRelaxed.
type jobKeySet struct {
	keys      []config.JobKey
	spellings []string
	relaxed   map[string]string
}

func newJobKeySet() jobKeySet {
	sp := jobKeys()
	return jobKeySet{keys: fileJobKeys(), spellings: sp, relaxed: byRelaxed(sp)}
}

func (d *decoder) job(je entry, opts LoadOptions, ks jobKeySet) (Job, bool) {
	fs, ok := d.sectionOf(je.value, je.path, ks.spellings, ks.relaxed, true)
	if !ok {
		return Job{}, false
	}
	start := len(d.problems)
	cfg := config.New(je.name, 0)
	j := Job{Name: je.name, Config: cfg, Line: je.line()}
	bad := map[string]bool{} // keys already reported

	for _, f := range []struct {
		key string
		dst *string
	}{{keyElasticJobType, &j.Type}, {keyJobBootstrapBeanName, &j.BootstrapBeanName}} {
		if e, ok := fs[f.key]; ok {
			if *f.dst, ok = d.str(e); !ok {
				bad[f.key] = true
			}
		}
	}
	keys := ks.keys
	lines := d.jobValues(fs, cfg, keys, bad)

	// A key with two spellings (the thread-pool type).
	for _, k := range keys {
		if k.Legacy == "" {
			continue
		}
		legacy, ok := fs[k.Legacy]
		if !ok {
			continue
		}
		if cur, ok := fs[k.Name]; ok {
			d.report(max(legacy.line(), cur.line()), nil, "%s: %s and %s are two spellings of one key; set only %s",
				je.path, k.Name, k.Legacy, k.Name)
		} else {
			cfg.LegacyThreadPoolKey = true
		}
	}

	// The job type.
	class, hasClass := fs[keyElasticJobClass]
	typ, hasType := fs[keyElasticJobType]
	switch {
	case hasClass && hasType:
		d.report(max(class.line(), typ.line()), nil, "%s: %s and %s are mutually exclusive", je.path, keyElasticJobClass, keyElasticJobType)
		bad[keyElasticJobType] = true
	case hasClass:
		name, _ := d.str(class)
		d.report(class.line(), nil, "%s: ejob cannot run the Java class %q: give the job an %s instead (SCRIPT, HTTP or a plugin's job type; "+
			"Go code runs as a job-type plugin built with package sdk, or in your own program through the ejob library)", class.path, name, keyElasticJobType)
		bad[keyElasticJobType] = true
	case !hasType:
		d.missing(je.line(), je.path, keyElasticJobType, available(opts, spi.KindJobType))
		bad[keyElasticJobType] = true
	case !bad[keyElasticJobType] && strings.TrimSpace(j.Type) == "":
		d.report(typ.value.Line, nil, "%s: must not be empty%s", typ.path, available(opts, spi.KindJobType))
		bad[keyElasticJobType] = true
	}
	for _, k := range keys {
		if _, ok := lookupJobKey(fs, k); k.Required && !ok {
			d.missing(je.line(), je.path, k.Name, "")
			bad[k.Name] = true
		}
	}

	// Plugin types: the job type, then the keys that name plugins.
	checkType := func(e entry, key string, kind spi.Kind, name string) {
		known := knownType(opts, kind)
		if known == nil || bad[key] || name == "" || known(name) {
			return
		}
		d.report(e.value.Line, spi.ErrUnknownType, "%s: unknown %s %q%s", e.path, kindNoun(kind), name, available(opts, kind))
		bad[key] = true
	}
	if e, ok := fs[keyElasticJobType]; ok {
		checkType(e, keyElasticJobType, spi.KindJobType, j.Type)
	}
	for _, k := range keys {
		e, ok := lookupJobKey(fs, k)
		if k.Plugin == "" || !ok {
			continue
		}
		switch v := k.Field(cfg).(type) {
		case *string:
			checkType(e, k.Name, k.Plugin, *v)
		case *[]string:
			known := knownType(opts, k.Plugin)
			for i, name := range *v {
				if known != nil && strings.TrimSpace(name) != "" && !known(name) {
					d.report(lines.items[k.Name][i], spi.ErrUnknownType, "%s: unknown %s %q%s", e.path, kindNoun(k.Plugin), name, available(opts, k.Plugin))
				}
			}
		}
	}

	// Cron and time zone.
	if e, ok := fs[config.KeyTimeZone]; ok && !bad[config.KeyTimeZone] && cfg.TimeZone != "" {
		if err := checkZone(cfg.TimeZone); err != nil {
			d.report(e.value.Line, err, "%s: %v", e.path, err)
		}
	}
	if e, ok := fs[config.KeyCron]; ok && !bad[config.KeyCron] && cfg.Cron != "" {
		if err := checkCron(cfg.Cron, cfg.TimeZone); err != nil {
			d.report(e.value.Line, err, "%s: invalid cron %q: %s", e.path, cfg.Cron, strings.TrimPrefix(err.Error(), fmt.Sprintf("cron %q: ", cfg.Cron)))
		}
	}

	// Everything core/config checks: job name, counts, sharding item
	// parameters, listener items.
	if err := cfg.Validate(config.ValidateOptions{}); err != nil {
		var fes []*config.FieldError
		collectFieldErrors(err, &fes)
		for _, fe := range fes {
			if bad[fe.Field] {
				continue
			}
			if fe.Field == config.KeyJobName {
				d.report(je.line(), fe.Err, "%s: invalid job name: %s", je.path, fe.Msg)
				continue
			}
			line, path := je.line(), je.path+"."+fe.Field
			if e, ok := fs[fe.Field]; ok {
				line, path = e.value.Line, e.path
			}
			if pe := (*config.PropError)(nil); errors.As(fe.Err, &pe) {
				if l, ok := lines.entries[config.KeyProps][pe.Key]; ok {
					line = l
				}
				d.report(line, fe, "%s.%s: %s", path, pe.Key, pe.Msg)
				continue
			}
			if fe.Err != nil {
				d.report(line, fe, "%s: %s: %v", path, fe.Msg, fe.Err)
			} else {
				d.report(line, fe, "%s: %s", path, fe.Msg)
			}
		}
	}

	// Props, checked by the plugins once the rest of the job is sound.
	if opts.ValidateProps != nil && len(d.problems) == start {
		line := je.line()
		if e, ok := fs[config.KeyProps]; ok {
			line = e.line()
		}
		propLines := lines.entries[config.KeyProps]
		props := cfg.Props
		if props == nil {
			props = map[string]string{}
		}
		for _, t := range []struct {
			kind spi.Kind
			name string
		}{{spi.KindJobType, j.Type}, {spi.KindErrorHandler, cfg.JobErrorHandlerType}} {
			if t.name == "" {
				continue
			}
			if err := opts.ValidateProps(t.kind, t.name, j.Name, props); err != nil {
				d.report(propLine(err, propLines, line), err, "%s.%s: invalid for %s %s: %v", je.path, config.KeyProps, kindNoun(t.kind), t.name, err)
			}
		}
	}
	return j, len(d.problems) == start
}

// jobLines holds where the items of list keys and the entries of map keys
// are, by key name.
type jobLines struct {
	items   map[string][]int
	entries map[string]map[string]int
}

// jobValues decodes into cfg the values of keys found in fs, and marks the
// spelling of each unusable one in bad. Strings come first, then ints,
// bools, lists and maps: the problems of one line (a flow mapping) are
// reported in that order.
func (d *decoder) jobValues(fs map[string]entry, cfg *config.JobConfiguration, keys []config.JobKey, bad map[string]bool) jobLines {
	lines := jobLines{items: map[string][]int{}, entries: map[string]map[string]int{}}
	rank := func(k config.JobKey) int {
		switch k.Field(cfg).(type) {
		case *string:
			return 0
		case *int:
			return 1
		case *bool:
			return 2
		case *[]string:
			return 3
		}
		return 4
	}
	keys = slices.Clone(keys)
	slices.SortStableFunc(keys, func(a, b config.JobKey) int { return rank(a) - rank(b) })
	for _, k := range keys {
		for _, name := range []string{k.Name, k.Legacy} {
			e, ok := fs[name]
			if name == "" || !ok {
				continue
			}
			switch v := k.Field(cfg).(type) {
			case *string:
				*v, ok = d.str(e)
			case *int:
				*v, ok = d.integer(e)
			case *bool:
				*v, ok = d.boolean(e)
			case *[]string:
				*v, lines.items[k.Name], ok = d.list(e)
			case *map[string]string:
				*v, lines.entries[k.Name], ok = d.stringMap(e, func(s string) string { return s })
			default:
				panic(fmt.Sprintf("job key %s: the file cannot hold a %T", k.Name, v))
			}
			if !ok {
				bad[name] = true
			}
		}
	}
	return lines
}

// lookupJobKey returns the entry of k in fs, under either spelling.
func lookupJobKey(fs map[string]entry, k config.JobKey) (entry, bool) {
	e, ok := fs[k.Name]
	if !ok && k.Legacy != "" {
		e, ok = fs[k.Legacy]
	}
	return e, ok
}

// knownType returns the check of type names of a kind that opts has, or
// nil: KnownListener for job listeners, KnownType for the others.
func knownType(opts LoadOptions, kind spi.Kind) func(string) bool {
	if kind == spi.KindJobListener {
		return opts.KnownListener
	}
	if opts.KnownType == nil {
		return nil
	}
	return func(name string) bool { return opts.KnownType(kind, name) }
}

// propLine returns the line of the first prop key the error text quotes
// (validators name the property, e.g. "The property `email.host` is
// required."), or def.
func propLine(err error, lines map[string]int, def int) int {
	msg := err.Error()
	best, bestLen := def, 0
	for k, l := range lines {
		if len(k) > bestLen && strings.Contains(msg, k) {
			best, bestLen = l, len(k)
		}
	}
	return best
}

func collectFieldErrors(err error, out *[]*config.FieldError) {
	if fe, ok := err.(*config.FieldError); ok {
		*out = append(*out, fe)
		return
	}
	if u, ok := err.(interface{ Unwrap() []error }); ok {
		for _, e := range u.Unwrap() {
			collectFieldErrors(e, out)
		}
	}
}

// checkZone accepts what cron.LoadZone accepts: GMT offsets (GMT+08:00,
// upstream's only form) and IANA names (Asia/Shanghai, Europe/London), which
// give DST-correct schedules. Upstream's Java instances refuse non-GMT
// names, so a namespace shared with Java instances should keep to GMT
// offsets (docs/configuration.md says so).
func checkZone(tz string) error {
	_, err := cron.LoadZone(tz)
	return err
}

// checkCron parses expr as the scheduler does (Quartz, crontab or
// descriptor: cron.ParseSchedule), in its zone (UTC when the zone is
// invalid; checkZone reports that).
func checkCron(expr, tz string) error {
	loc, err := cron.LoadZone(tz)
	if err != nil {
		loc = time.UTC
	}
	_, err = cron.ParseSchedule(expr, loc)
	return err
}
