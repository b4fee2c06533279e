package hostconfig

import (
	"errors"
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"
	"time"

	goyaml "github.com/goccy/go-yaml"
	goyamlparser "github.com/goccy/go-yaml/parser"
	"gopkg.in/yaml.v3"
)

// decoder walks the YAML tree and collects problems; it never stops at the
// first one.
type decoder struct {
	file     string
	lookup   func(string) (string, bool)
	problems []*Problem
	// suggested holds the paths of keys that an unknown key was reported
	// as a likely misspelling of; they are not reported missing too.
	suggested map[string]bool
	// budget bounds the nodes visited when flattening maps, so that
	// aliases cannot make the work exponential.
	budget int
}

// missing reports a missing required key unless a misspelling of it was
// reported already.
func (d *decoder) missing(line int, path, key, extra string) {
	if !d.suggested[join(path, key)] {
		d.report(line, nil, "%s: missing required key %s%s", path, key, extra)
	}
}

func (d *decoder) report(line int, err error, format string, args ...any) {
	d.problems = append(d.problems, &Problem{File: d.file, Line: line, Msg: fmt.Sprintf(format, args...), Err: err})
}

// entry is one key/value pair of a mapping.
type entry struct {
	key   *yaml.Node
	value *yaml.Node // aliases resolved
	name  string     // the key as written
	path  string     // dotted path of the value, e.g. elasticjob.jobs.j.cron
}

func (e entry) line() int { return e.key.Line }

// resolve follows aliases.
func resolve(n *yaml.Node) *yaml.Node {
	for i := 0; n != nil && n.Kind == yaml.AliasNode && i < 100; i++ {
		n = n.Alias
	}
	return n
}

func isNull(n *yaml.Node) bool {
	return n == nil || (n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null")
}

func describe(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.ScalarNode:
		return strconv.Quote(n.Value)
	}
	return "nothing"
}

// pairs returns the entries of the mapping m (null counts as empty), with
// merge keys (<<) expanded: explicit keys win over merged ones, earlier
// merged mappings over later ones. Two explicit keys with the same
// canon(key) are reported as duplicates. ok is false when m is not a
// mapping (reported).
func (d *decoder) pairs(m *yaml.Node, path string, canon func(string) string) (out []entry, ok bool) {
	m = resolve(m)
	if isNull(m) {
		return nil, true
	}
	if m.Kind != yaml.MappingNode {
		d.report(m.Line, nil, "%s: want a mapping, got %s", path, describe(m))
		return nil, false
	}
	seen := map[string]*yaml.Node{}
	var merges []*yaml.Node
	for i := 0; i+1 < len(m.Content); i += 2 {
		k, v := m.Content[i], m.Content[i+1]
		if k.Kind == yaml.ScalarNode && k.ShortTag() == "!!merge" {
			merges = append(merges, v)
			continue
		}
		if k.Kind != yaml.ScalarNode {
			d.report(k.Line, nil, "%s: keys must be strings, got %s", path, describe(k))
			continue
		}
		c := canon(k.Value)
		if first, dup := seen[c]; dup {
			if first.Value == k.Value {
				d.report(k.Line, nil, "%s: duplicate key %q (first at line %d)", path, k.Value, first.Line)
			} else {
				d.report(k.Line, nil, "%s: duplicate key %q: %q at line %d is the same key", path, k.Value, first.Value, first.Line)
			}
			continue
		}
		seen[c] = k
		out = append(out, entry{key: k, value: resolve(v), name: k.Value, path: join(path, k.Value)})
	}
	for _, mv := range merges {
		mv = resolve(mv)
		var sources []*yaml.Node
		switch mv.Kind {
		case yaml.MappingNode:
			sources = []*yaml.Node{mv}
		case yaml.SequenceNode:
			for _, s := range mv.Content {
				sources = append(sources, resolve(s))
			}
		}
		for _, src := range sources {
			if src.Kind != yaml.MappingNode {
				d.report(src.Line, nil, "%s: a merge key (<<) takes a mapping or a list of mappings, got %s", path, describe(src))
				continue
			}
			sub, ok := d.pairs(src, path, canon)
			if !ok {
				continue
			}
			for _, e := range sub {
				c := canon(e.name)
				if _, dup := seen[c]; dup {
					continue
				}
				seen[c] = e.key
				out = append(out, e)
			}
		}
	}
	return out, true
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

// section reads a mapping whose keys are known (relaxed binding). It
// returns the entries by their known spelling; unknown keys are reported.
func (d *decoder) section(m *yaml.Node, path string, known []string, inJob bool) (map[string]entry, bool) {
	return d.sectionOf(m, path, known, byRelaxed(known), inJob)
}

// byRelaxed maps the relaxed form of each known key to the key.
func byRelaxed(known []string) map[string]string {
	out := make(map[string]string, len(known))
	for _, k := range known {
		out[relaxed(k)] = k
	}
	return out
}

// sectionOf is section, with byRelaxed(known) given.
func (d *decoder) sectionOf(m *yaml.Node, path string, known []string, byRelaxed map[string]string, inJob bool) (map[string]entry, bool) {
	ps, ok := d.pairs(m, path, relaxed)
	if !ok {
		return nil, false
	}
	out := make(map[string]entry, len(ps))
	for _, e := range ps {
		k, isKnown := byRelaxed[relaxed(e.name)]
		if !isKnown {
			where := path
			if where == "" {
				where = "top level"
			}
			hint, suggested := unknownKeyHint(e.name, known, inJob)
			if suggested != "" {
				d.suggested[join(path, suggested)] = true
			}
			d.report(e.line(), nil, "%s: unknown key %q%s", where, e.name, hint)
			continue
		}
		e.path = join(path, k)
		out[k] = e
	}
	return out, true
}

// text returns the text of a scalar value with placeholders expanded.
// null is ("", true, true). want names the expected type in messages.
func (d *decoder) text(e entry, want string) (s string, null, ok bool) {
	v := e.value
	if isNull(v) {
		return "", true, true
	}
	if v.Kind != yaml.ScalarNode {
		d.report(v.Line, nil, "%s: want %s, got %s", e.path, want, describe(v))
		return "", false, false
	}
	s, err := expand(v.Value, d.lookup)
	if err != nil {
		d.report(v.Line, err, "%s: %v", e.path, err)
		return "", false, false
	}
	return s, false, true
}

// str reads a string; null is "".
func (d *decoder) str(e entry) (string, bool) {
	s, _, ok := d.text(e, "a string")
	return s, ok
}

// nonEmptyStr reads a string, trimmed, and reports it when it is empty.
func (d *decoder) nonEmptyStr(e entry) (string, bool) {
	s, ok := d.str(e)
	if !ok {
		return "", false
	}
	if s = strings.TrimSpace(s); s == "" {
		d.report(e.value.Line, nil, "%s: must not be empty", e.path)
		return "", false
	}
	return s, true
}

// integer reads a Java int (decimal).
func (d *decoder) integer(e entry) (int, bool) {
	s, null, ok := d.text(e, "an integer")
	if !ok {
		return 0, false
	}
	if null {
		d.report(e.value.Line, nil, "%s: want an integer, got nothing", e.path)
		return 0, false
	}
	n, err := strconv.ParseInt(strings.TrimSpace(s), 10, 64)
	if err != nil {
		d.report(e.value.Line, nil, "%s: want an integer, got %q", e.path, s)
		return 0, false
	}
	if n < math.MinInt32 || n > math.MaxInt32 {
		d.report(e.value.Line, nil, "%s: %d is out of range (a Java int: %d to %d)", e.path, n, math.MinInt32, math.MaxInt32)
		return 0, false
	}
	return int(n), true
}

// boolean reads a boolean as Spring converts one: true/false, yes/no,
// on/off, 1/0, in any case.
func (d *decoder) boolean(e entry) (bool, bool) {
	s, null, ok := d.text(e, "true or false")
	if !ok {
		return false, false
	}
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "true", "yes", "on", "1":
		return true, true
	case "false", "no", "off", "0":
		return false, true
	}
	if null {
		s = "nothing"
	} else {
		s = strconv.Quote(s)
	}
	d.report(e.value.Line, nil, "%s: want true or false, got %s", e.path, s)
	return false, false
}

// days reads a duration in days (30d) or a Go duration (12h).
func (d *decoder) days(e entry) (time.Duration, bool) {
	s, null, ok := d.text(e, "a duration")
	if !ok {
		return 0, false
	}
	if n, isDays := strings.CutSuffix(strings.TrimSpace(s), "d"); isDays && !null {
		v, err := strconv.Atoi(n)
		if err != nil || v < 0 {
			d.report(e.value.Line, nil, "%s: want a duration such as 30d or 12h, got %s", e.path, describe(e.value))
			return 0, false
		}
		return time.Duration(v) * 24 * time.Hour, true
	}
	return d.duration(e)
}

// duration reads a Go duration such as 30s or 1m30s; "0" is zero.
func (d *decoder) duration(e entry) (time.Duration, bool) {
	s, null, ok := d.text(e, "a duration")
	if !ok {
		return 0, false
	}
	s = strings.TrimSpace(s)
	if s == "0" {
		return 0, true
	}
	v, err := time.ParseDuration(s)
	if null || err != nil || v < 0 {
		d.report(e.value.Line, nil, "%s: want a duration such as 30s or 2m, got %s", e.path, describe(e.value))
		return 0, false
	}
	return v, true
}

// list reads a list of strings: a YAML sequence of scalars, or one scalar
// holding a comma-separated list (Spring converts both). Empty items of a
// comma-separated string are dropped. lines holds each item's line.
func (d *decoder) list(e entry) (items []string, lines []int, ok bool) {
	v := e.value
	if v.Kind == yaml.SequenceNode {
		ok = true
		for i, n := range v.Content {
			n = resolve(n)
			s, null, iok := d.text(entry{key: e.key, value: n, path: fmt.Sprintf("%s[%d]", e.path, i)}, "a string")
			if !iok {
				ok = false
				continue
			}
			if null {
				s = ""
			}
			items = append(items, s)
			lines = append(lines, n.Line)
		}
		return items, lines, ok
	}
	s, null, ok := d.text(e, "a list of strings")
	if !ok || null {
		return nil, nil, ok
	}
	for _, it := range strings.Split(s, ",") {
		if it = strings.TrimSpace(it); it != "" {
			items = append(items, it)
			lines = append(lines, v.Line)
		}
	}
	return items, lines, true
}

// snakeBool matches the plain scalars SnakeYAML (YAML 1.1) reads as
// booleans.
var snakeBool = regexp.MustCompile(`^(?:yes|Yes|YES|true|True|TRUE|on|On|ON|no|No|NO|false|False|FALSE|off|Off|OFF)$`)

// stringMap flattens a mapping of scalars into dotted keys as Spring binds
// a java.util.Properties: {email: {host: h}} gives email.host=h; null is
// "". key maps each key segment (props keep theirs, dataSource keys become
// camelCase). A plain YAML 1.1 boolean (yes, On, ...) becomes "true" or
// "false", the string Java gets. lines records each key's line.
func (d *decoder) stringMap(e entry, key func(string) string) (out map[string]string, lines map[string]int, ok bool) {
	out, lines = map[string]string{}, map[string]int{}
	ok = d.flatten(e.value, e.path, "", key, out, lines)
	return out, lines, ok
}

func (d *decoder) flatten(m *yaml.Node, path, prefix string, key func(string) string, out map[string]string, lines map[string]int) bool {
	ps, ok := d.pairs(m, path, func(s string) string { return s })
	if !ok {
		return false
	}
	for _, e := range ps {
		d.budget--
		if d.budget < 0 {
			if d.budget == -1 {
				d.report(e.line(), nil, "%s: too many nested entries (alias expansion?)", path)
			}
			return false
		}
		k := prefix + key(e.name)
		e.path = path + "." + key(e.name)
		switch v := e.value; {
		case v.Kind == yaml.MappingNode:
			if !d.flatten(v, e.path, k+".", key, out, lines) {
				ok = false
			}
			continue
		case v.Kind == yaml.SequenceNode:
			d.report(v.Line, nil, "%s: want a string, got a list (write a list as one comma-separated string)", e.path)
			ok = false
			continue
		}
		s, _, sok := d.text(e, "a string")
		if !sok {
			ok = false
			continue
		}
		if e.value.Style&(yaml.TaggedStyle|yaml.SingleQuotedStyle|yaml.DoubleQuotedStyle|yaml.LiteralStyle|yaml.FoldedStyle) == 0 &&
			snakeBool.MatchString(e.value.Value) {
			switch strings.ToLower(e.value.Value) {
			case "yes", "true", "on":
				s = "true"
			default:
				s = "false"
			}
		}
		if first, dup := lines[k]; dup {
			d.report(e.line(), nil, "%s: duplicate key %q (first at line %d)", path, k, first)
			ok = false
			continue
		}
		out[k] = s
		lines[k] = e.line()
	}
	return ok
}

// syntaxLine matches gopkg.in/yaml.v3's syntax errors.
var syntaxLine = regexp.MustCompile(`^yaml: line (\d+): (.*)$`)

// syntax reports err, gopkg.in/yaml.v3's syntax error in data. yaml.v3
// names the line of the construct the error is in (the mapping that began
// lines earlier), never the column; github.com/goccy/go-yaml's parser
// names the offending token's line and column, so it says where the error
// is, and yaml.v3 (which decides what ejob accepts) says what it is.
func (d *decoder) syntax(data []byte, err error) {
	p := &Problem{File: d.file, Msg: "invalid YAML: " + strings.TrimPrefix(err.Error(), "yaml: "), Err: err}
	if m := syntaxLine.FindStringSubmatch(err.Error()); m != nil {
		p.Line, _ = strconv.Atoi(m[1])
		p.Msg = "invalid YAML: " + m[2]
	}
	var se *goyaml.SyntaxError
	if _, perr := goyamlparser.ParseBytes(data, 0); errors.As(perr, &se) && se.Token != nil && se.Token.Position != nil {
		p.Line, p.Column = se.Token.Position.Line, se.Token.Position.Column
	}
	d.problems = append(d.problems, p)
}
