package config

import (
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/ejob-io/ejob/spi"
)

// ValidateOptions plugs checks that live elsewhere into Validate. A nil
// callback skips its check.
type ValidateOptions struct {
	// CheckCron validates a non-empty Cron with its TimeZone (package
	// core/cron: Quartz, standard crontab or descriptor syntax).
	CheckCron func(expr, timeZone string) error
	// KnownType reports whether the plugin catalog serves a type name of a
	// kind (matched case-insensitively). It is asked for non-empty
	// JobShardingStrategyType (spi.KindSharding),
	// JobExecutorThreadPoolSizeProviderType (spi.KindThreadPool) and
	// JobErrorHandlerType (spi.KindErrorHandler). Upstream 3.0.5 silently
	// falls back to the default for an unknown type; ejob refuses a local
	// configuration with one.
	KnownType func(kind spi.Kind, name string) bool
	// KnownListener reports whether a job listener type exists.
	KnownListener func(name string) bool
}

// FieldError is one validation failure. It names the YAML key.
type FieldError struct {
	Field string // YAML key, e.g. "shardingTotalCount"
	Msg   string // may be empty when Err says it all (a *PropError)
	Err   error  // underlying error, if any (e.g. from CheckCron)
}

func (e *FieldError) Error() string {
	if e.Msg == "" && e.Err != nil {
		return fmt.Sprintf("job configuration key %s: %v", e.Field, e.Err)
	}
	if e.Err != nil {
		return fmt.Sprintf("job configuration key %s: %s: %v", e.Field, e.Msg, e.Err)
	}
	return fmt.Sprintf("job configuration key %s: %s", e.Field, e.Msg)
}

// Unwrap returns ErrInvalid and the underlying error.
func (e *FieldError) Unwrap() []error {
	if e.Err != nil {
		return []error{ErrInvalid, e.Err}
	}
	return []error{ErrInvalid}
}

// Validate checks the configuration and returns every problem found, each
// a *FieldError wrapping ErrInvalid (joined with errors.Join), or nil. In
// this order:
//
//   - each key's own check in JobKeys: jobName is a valid ZooKeeper node
//     name and does not contain "@-@" (the task id is split on it into
//     exactly 5 parts); shardingTotalCount > 0;
//   - the ints fit a Java int (Java cannot load the config otherwise);
//     maxTimeDiffSeconds < 0 and reconcileIntervalMinutes <= 0 are valid
//     and disable their feature;
//   - the bounds on what sizes memory or work (CheckBounds:
//     shardingTotalCount at most MaxShardingTotalCount, the lengths of
//     the strings, the number and size of props and lists);
//   - shardingItemParameters parses as upstream parses it, with every item
//     in [0, shardingTotalCount) (upstream ignores out-of-range items; ejob
//     refuses them in a configuration it is about to write);
//   - cron/timeZone through opts;
//   - ejob's own props (ParseRetry), each problem a FieldError of props
//     whose Err is a *PropError naming the prop;
//   - the plugin types of the keys with a JobKey.Plugin kind through opts,
//     and no empty job listener type.
func (c *JobConfiguration) Validate(opts ValidateOptions) error {
	var errs []error
	fail := func(field, msg string, err error) {
		errs = append(errs, &FieldError{Field: field, Msg: msg, Err: err})
	}
	keys := jobKeys()
	for _, k := range keys {
		if k.check != nil {
			if msg := k.check(c); msg != "" {
				fail(k.Name, msg, nil)
			}
		}
	}
	for _, k := range keys {
		if p, ok := k.field(c).(*int); ok && (*p < math.MinInt32 || *p > math.MaxInt32) {
			fail(k.Name, fmt.Sprintf("%d does not fit a Java int", *p), nil)
		}
	}
	errs = append(errs, c.boundErrors()...)
	// Rules across keys.
	if params, dups, err := parseShardingItemParameters(c.ShardingItemParameters); err != nil {
		fail(KeyShardingItemParameters, "cannot parse", err)
	} else {
		// Upstream keeps the last of two parameters for one item; in a
		// configuration about to be written, that is a mistake.
		for _, item := range dups {
			fail(KeyShardingItemParameters, fmt.Sprintf("item %d is given more than once (upstream would keep the last, %s)",
				item, quoteForError(params[item])), nil)
		}
		for _, item := range sortedKeys(params) {
			if c.ShardingTotalCount > 0 && (item < 0 || item >= c.ShardingTotalCount) {
				fail(KeyShardingItemParameters, fmt.Sprintf("item %d is outside [0, %d)", item, c.ShardingTotalCount), nil)
			}
		}
	}
	if c.Cron != "" && opts.CheckCron != nil {
		if err := opts.CheckCron(c.Cron, c.TimeZone); err != nil {
			fail(KeyCron, fmt.Sprintf("invalid cron %s (time zone %s)", quoteForError(c.Cron), quoteForError(c.TimeZone)), err)
		}
	}
	_, perrs := parseRetry(c.Props)
	for _, err := range perrs {
		fail(KeyProps, "", err)
	}
	// Plugin types.
	for _, k := range keys {
		if k.Plugin == "" {
			continue
		}
		switch p := k.field(c).(type) {
		case *string:
			if *p != "" && opts.KnownType != nil && !opts.KnownType(k.Plugin, *p) {
				fail(k.Name, fmt.Sprintf("unknown %s type %s", k.Plugin, quoteForError(*p)), spi.ErrUnknownType)
			}
		case *[]string: // job listeners (see JobKey.Plugin)
			for i, l := range *p {
				switch {
				case strings.TrimSpace(l) == "":
					fail(k.Name, fmt.Sprintf("item %d is empty", i), nil)
				case opts.KnownListener != nil && !opts.KnownListener(l):
					fail(k.Name, fmt.Sprintf("unknown job listener type %s", quoteForError(l)), nil)
				}
			}
		}
	}
	return errors.Join(errs...)
}

// CheckJobName returns nil when name can be a job's name (the check
// Validate makes of jobName), else an error wrapping ErrInvalidJobName
// that says why not. Anything that builds a job's ZooKeeper path from a
// name it did not read from the registry (a REST path, a request body)
// checks the name with it first: "a/servers" would address a node inside
// job a.
func CheckJobName(name string) error {
	if why := checkNodeName(name); why != "" {
		return fmt.Errorf("%w: %s", ErrInvalidJobName, why)
	}
	return nil
}

// checkNodeName returns why name is not a valid job name, or "".
// ZooKeeper's PathUtils.validatePath rejects these characters in a path.
func checkNodeName(name string) string {
	switch {
	case name == "":
		return "must not be empty"
	case name == "." || name == "..":
		return fmt.Sprintf("%q is not a valid ZooKeeper node name", name)
	case strings.Contains(name, "/"):
		return fmt.Sprintf("%s must not contain '/'", quoteForError(name))
	case strings.Contains(name, "@-@"):
		return fmt.Sprintf("%s must not contain \"@-@\" (the task id separator)", quoteForError(name))
	}
	for _, r := range name {
		if r == 0 || (r > 0 && r < 0x20) || (r >= 0x7F && r <= 0x9F) || (r >= 0xD800 && r <= 0xF8FF) || (r >= 0xFFF0 && r <= 0xFFFF) || r == 0xFFFD {
			return fmt.Sprintf("%s contains the character %U, which ZooKeeper rejects in a path", quoteForError(name), r)
		}
	}
	return ""
}

// ShardingItemParametersError is upstream's JobConfigurationException for
// shardingItemParameters; Error returns upstream's exact text.
type ShardingItemParametersError struct {
	Text string
}

func (e *ShardingItemParametersError) Error() string { return e.Text }

// Unwrap returns ErrInvalid.
func (e *ShardingItemParametersError) Unwrap() error { return ErrInvalid }

// ParseShardingItemParameters parses "0=A,1=B" exactly as upstream's
// ShardingItemParameters: Java String.split on ","
// (trailing empty pieces dropped, so "0=a," is valid), each piece trimmed
// (Java trim: characters <= U+0020) and split on "=" into exactly two
// parts, the key trimmed and parsed as a Java int, the value trimmed. A
// later duplicate key wins. An empty string gives an empty map.
// Errors are *ShardingItemParametersError with upstream's texts.
func ParseShardingItemParameters(s string) (map[int]string, error) {
	out, _, err := parseShardingItemParameters(s)
	return out, err
}

// parseShardingItemParameters is ParseShardingItemParameters that also
// returns the items given more than once, in order of their second
// appearance.
func parseShardingItemParameters(s string) (out map[int]string, dups []int, err error) {
	out = map[int]string{}
	if s == "" {
		return out, nil, nil
	}
	for _, each := range javaSplit(s, ",") {
		pair := javaSplit(javaTrim(each), "=")
		if len(pair) != 2 {
			return nil, nil, &ShardingItemParametersError{Text: fmt.Sprintf("Sharding item parameters '%s' format error, should be int=xx,int=xx", s)}
		}
		item, err := strconv.ParseInt(javaTrim(pair[0]), 10, 32)
		if err != nil {
			return nil, nil, &ShardingItemParametersError{Text: fmt.Sprintf("Sharding item parameters key '%s' is not an integer.", pair[0])}
		}
		if _, seen := out[int(item)]; seen && !slices.Contains(dups, int(item)) {
			dups = append(dups, int(item))
		}
		out[int(item)] = javaTrim(pair[1])
	}
	return out, dups, nil
}

// javaSplit is Java's String.split with a literal one-character separator:
// trailing empty strings are removed.
func javaSplit(s, sep string) []string {
	parts := strings.Split(s, sep)
	for len(parts) > 0 && parts[len(parts)-1] == "" {
		parts = parts[:len(parts)-1]
	}
	return parts
}

// javaTrim is Java's String.trim: it strips characters <= U+0020.
func javaTrim(s string) string {
	return strings.TrimFunc(s, func(r rune) bool { return r <= ' ' })
}

func sortedKeys(m map[int]string) []int {
	return slices.Sorted(maps.Keys(m))
}
