package config

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/ejob-io/ejob/core/config/snakeyaml"
	"gopkg.in/yaml.v3"
)

// Marshal writes cfg exactly as upstream writes the config node:
// `new Yaml(new ElasticJobYamlRepresenter(new DumperOptions())).dumpAsMap(pojo)`
// Keys are in alphabetical order; null strings and empty lists and maps are
// omitted; booleans and ints are always written; strings are plain unless
// SnakeYAML would quote them (YAML 1.1 booleans such as `yes` and `on`, numbers,
// timestamps, `”`, leading indicators such as `*` or `?`, `: ` and ` #`...), and
// long strings are folded at column 80 as SnakeYAML folds them. yaml.v3's
// emitter cannot produce this output, so the snakeyaml sub-package ports
// SnakeYAML's emitter.
//
// Marshal does not validate; call Validate first when the config is local.
func Marshal(cfg *JobConfiguration) ([]byte, error) { return (*Marshaller)(nil).Marshal(cfg) }

// Marshaller marshals the configurations of many jobs, writing each key
// and value they share once (snakeyaml.Memo): a host marshals every new
// job's config at start, and jobs differ mostly by name. It is safe for
// concurrent use; the zero value is ready, and a nil one marshals as
// Marshal does.
type Marshaller struct {
	memo snakeyaml.Memo
}

// Marshal is the package's Marshal, with m's memo (none when m is nil):
// the same bytes.
func (m *Marshaller) Marshal(cfg *JobConfiguration) ([]byte, error) {
	if cfg == nil {
		return nil, fmt.Errorf("marshal job configuration: nil configuration")
	}
	type entry struct {
		key   string
		value *snakeyaml.Node
	}
	keys := jobKeys()
	entries := make([]entry, 0, len(keys)+len(cfg.wire.unknown))
	for i := range keys {
		k := &keys[i]
		name := k.Name
		if k.Legacy != "" && cfg.LegacyThreadPoolKey {
			name = k.Legacy
		}
		if v := k.node(cfg, keyBit(i)); v != nil {
			entries = append(entries, entry{name, v})
		}
	}
	for _, kv := range cfg.wire.unknown {
		entries = append(entries, entry{kv.key, kv.value})
	}
	// SnakeYAML sorts JavaBean properties by name (String.compareTo).
	slices.SortStableFunc(entries, func(a, b entry) int { return javaCompare(a.key, b.key) })
	// The key nodes in one allocation, the mapping's content in another:
	// a host marshals every job's config at start.
	keyNodes := make([]snakeyaml.Node, len(entries))
	root := snakeyaml.Mapping(make([]*snakeyaml.Node, 0, 2*len(entries))...)
	for i, e := range entries {
		keyNodes[i] = snakeyaml.StringValue(e.key)
		root.Content = append(root.Content, &keyNodes[i], e.value)
	}
	var out []byte
	var err error
	if m != nil {
		out, err = m.memo.Dump(root, KeyJobName)
	} else {
		out, err = snakeyaml.Dump(root)
	}
	if err != nil {
		return nil, fmt.Errorf("marshal job configuration %q: %w", cfg.JobName, err)
	}
	return out, nil
}

// node returns the value of key k (whose bit is bit) as Marshal writes it,
// or nil when it is omitted.
func (k JobKey) node(cfg *JobConfiguration, bit keySet) *snakeyaml.Node {
	switch v := k.field(cfg).(type) {
	case *string:
		if _, written := poolKeyWritten(cfg); k.Legacy != "" && *v != "" && !written {
			// The thread-pool key set to CPU: no spelling is read by both
			// 3.0.4 and 3.0.5, and both take an absent key as CPU (see
			// LegacyThreadPoolKey).
			return nil
		}
		switch k.write {
		case writeUnlessNull: // Java null when empty, unless the input had ''
			if *v == "" && !cfg.wire.empty.has(bit) {
				return nil
			}
		case writeUnlessAbsent: // Java "" when unset, omitted only when the input lacked it
			if *v == "" && cfg.wire.null.has(bit) {
				return nil
			}
		}
		return snakeyaml.String(*v)
	case *int:
		return snakeyaml.Int(int64(*v))
	case *bool:
		return snakeyaml.Bool(*v)
	case *[]string:
		if len(*v) == 0 {
			return nil
		}
		seq := snakeyaml.Sequence()
		for _, t := range *v {
			seq.Content = append(seq.Content, snakeyaml.String(t))
		}
		return seq
	case *map[string]string:
		if len(*v) == 0 {
			return nil
		}
		m := snakeyaml.Mapping()
		for _, key := range javaPropertiesOrder(cfg.wire.order[k.Name], *v) {
			m.Content = append(m.Content, snakeyaml.String(key), snakeyaml.String((*v)[key]))
		}
		return m
	case *[]ExtraConfiguration:
		if len(*v) == 0 {
			return nil
		}
		seq := snakeyaml.Sequence()
		for _, x := range *v {
			seq.Content = append(seq.Content, x.node())
		}
		return seq
	}
	return nil
}

// javaCompare orders strings as Java's String.compareTo: by UTF-16 code
// units. It differs from Go's byte order only for supplementary characters.
func javaCompare(a, b string) int {
	if isASCII(a) && isASCII(b) {
		return strings.Compare(a, b) // one code unit per byte
	}
	ua, ub := utf16Units(a), utf16Units(b)
	return slices.Compare(ua, ub)
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

func utf16Units(s string) []uint16 {
	out := make([]uint16, 0, len(s))
	for _, r := range s {
		if r >= 0x10000 {
			r -= 0x10000
			out = append(out, uint16(0xD800+(r>>10)), uint16(0xDC00+(r&0x3FF)))
		} else {
			out = append(out, uint16(r))
		}
	}
	return out
}

// encodeNode converts a Go value into a node. Maps (sorted keys, as Java
// sorts bean properties), slices and scalars are converted directly;
// anything else (structs) goes through yaml.v3, whose encoder cannot
// represent every string (it emits some that its own parser rejects).
func encodeNode(v any) (*snakeyaml.Node, error) {
	switch x := v.(type) {
	case nil:
		return snakeyaml.Null(), nil
	case string:
		return snakeyaml.String(x), nil
	case bool:
		return snakeyaml.Bool(x), nil
	case int:
		return snakeyaml.Int(int64(x)), nil
	case int64:
		return snakeyaml.Int(x), nil
	case int32:
		return snakeyaml.Int(int64(x)), nil
	case []string:
		seq := snakeyaml.Sequence()
		for _, s := range x {
			seq.Content = append(seq.Content, snakeyaml.String(s))
		}
		return seq, nil
	case []any:
		seq := snakeyaml.Sequence()
		for _, item := range x {
			n, err := encodeNode(item)
			if err != nil {
				return nil, err
			}
			seq.Content = append(seq.Content, n)
		}
		return seq, nil
	case map[string]string:
		m := snakeyaml.Mapping()
		for _, k := range slices.SortedFunc(maps.Keys(x), javaCompare) {
			m.Content = append(m.Content, snakeyaml.String(k), snakeyaml.String(x[k]))
		}
		return m, nil
	case map[string]any:
		m := snakeyaml.Mapping()
		for _, k := range slices.SortedFunc(maps.Keys(x), javaCompare) {
			n, err := encodeNode(x[k])
			if err != nil {
				return nil, fmt.Errorf("key %q: %w", k, err)
			}
			m.Content = append(m.Content, snakeyaml.String(k), n)
		}
		return m, nil
	}
	var n yaml.Node
	if err := n.Encode(v); err != nil {
		return nil, err
	}
	return snakeyaml.FromYAML(&n)
}

// quoteForError shortens a value for an error message.
func quoteForError(s string) string {
	const max = 60
	if len(s) > max {
		s = s[:max] + "..."
	}
	return strings.ReplaceAll(fmt.Sprintf("%q", s), "\\\\", "\\")
}
