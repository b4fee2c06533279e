package config

import (
	"encoding/base64"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/ejob-io/ejob/core/config/snakeyaml"
	"gopkg.in/yaml.v3"
)

// Unmarshal parses the YAML of a config node.
//
// Values are read as Java's SnakeYAML loader reads them (YAML 1.1): booleans
// accept yes/no/on/off/true/false in any case; ints accept `_`, 0x, 0b,
// octal and base-60 forms and must fit a Java int. Keys that are absent get
// the values Java's loader gives them, which differ from New's:
// monitorExecution=false, misfire=false, reconcileIntervalMinutes=0,
// maxTimeDiffSeconds=-1.
//
// Unlike Java, Unmarshal tolerates unknown keys: it keeps them, and Marshal
// writes them back. Both spellings of the thread-pool key are accepted.
// jobExtraConfigurations entries keep their tags and bodies. Every error
// wraps ErrMalformed and names the line and the key.
func Unmarshal(data []byte) (*JobConfiguration, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrMalformed, err)
	}
	if doc.Kind != yaml.DocumentNode || len(doc.Content) == 0 {
		return nil, fmt.Errorf("%w: empty document", ErrMalformed)
	}
	root := deref(doc.Content[0])
	if root.Kind != yaml.MappingNode {
		return nil, fmt.Errorf("%w: line %d: the document is not a mapping", ErrMalformed, root.Line)
	}
	keys := jobKeys()
	cfg := &JobConfiguration{}
	legacy := -1 // the key with two spellings
	for i, k := range keys {
		k.set(cfg, k.absent)
		if k.write == writeUnlessAbsent {
			cfg.wire.null |= keyBit(i)
		}
		if k.Legacy != "" {
			legacy = i
		}
	}
	// The two spellings of the thread-pool key are read first and
	// reconciled at the end.
	var (
		newTP, legacyTP       *string
		newTPLine, legacyLine int
	)
	for i := 0; i+1 < len(root.Content); i += 2 {
		kn, v := deref(root.Content[i]), deref(root.Content[i+1])
		if kn.Kind != yaml.ScalarNode {
			return nil, fmt.Errorf("%w: line %d: a key is not a scalar", ErrMalformed, kn.Line)
		}
		key := kn.Value
		p := fieldParser{key: key, line: v.Line}
		var err error
		switch ki := lookupJobKey(keys[:], key); {
		case ki < 0:
			var n *snakeyaml.Node
			n, err = snakeyaml.FromYAML(root.Content[i+1])
			if err == nil {
				cfg.wire.unknown = setUnknown(cfg.wire.unknown, key, n)
			}
		case ki == legacy:
			var s string
			var null bool
			s, null, err = p.str(v)
			if err == nil && !null {
				if key == keys[ki].Legacy {
					legacyTP, legacyLine = &s, v.Line
				} else {
					newTP, newTPLine = &s, v.Line
				}
			}
		default:
			err = p.read(v, cfg, keys[ki], keyBit(ki))
		}
		if err != nil {
			return nil, err
		}
	}
	if legacy < 0 {
		return cfg, nil
	}
	k := keys[legacy]
	tp := k.field(cfg).(*string)
	switch {
	case newTP != nil && legacyTP != nil && *newTP != *legacyTP:
		return nil, fmt.Errorf("%w: line %d: key %q (%s) contradicts key %q (line %d: %s)", ErrMalformed,
			legacyLine, k.Legacy, quoteForError(*legacyTP), k.Name, newTPLine, quoteForError(*newTP))
	case newTP != nil:
		*tp = *newTP
	case legacyTP != nil:
		*tp = *legacyTP
		cfg.LegacyThreadPoolKey = true
	}
	if newTP != nil || legacyTP != nil {
		cfg.wire.poolKeyRead = true
		if *tp == "" {
			cfg.wire.empty |= keyBit(legacy)
		}
	}
	return cfg, nil
}

// read reads the value v of key k into cfg; bit is k's bit.
func (p fieldParser) read(v *yaml.Node, cfg *JobConfiguration, k JobKey, bit keySet) error {
	var err error
	switch dst := k.field(cfg).(type) {
	case *string:
		switch k.write {
		case writeUnlessNull:
			err = p.nullable(v, dst, &cfg.wire, bit)
		case writeUnlessAbsent:
			err = p.defaulted(v, dst, &cfg.wire, bit)
		default:
			*dst, _, err = p.str(v)
		}
	case *int:
		*dst, err = p.int(v)
	case *bool:
		*dst, err = p.bool(v)
	case *[]string:
		*dst, err = p.strings(v)
	case *map[string]string:
		var order []string
		*dst, order, err = p.props(v)
		if cfg.wire.order == nil {
			cfg.wire.order = map[string][]string{}
		}
		cfg.wire.order[k.Name] = order
	case *[]ExtraConfiguration:
		*dst, err = p.extras(v)
	}
	return err
}

func setUnknown(list []rawKV, key string, n *snakeyaml.Node) []rawKV {
	for i := range list {
		if list[i].key == key { // duplicate key: the last one wins, as SnakeYAML
			list[i].value = n
			return list
		}
	}
	return append(list, rawKV{key, n})
}

func deref(n *yaml.Node) *yaml.Node {
	for n != nil && n.Kind == yaml.AliasNode && n.Alias != nil {
		n = n.Alias
	}
	return n
}

type fieldParser struct {
	key  string
	line int
}

func (p fieldParser) errorf(format string, args ...any) error {
	return fmt.Errorf("%w: line %d: key %q: %s", ErrMalformed, p.line, p.key, fmt.Sprintf(format, args...))
}

// str reads a string-typed property: any scalar, its text as written
// (Java's String properties take `123` or `true` as text), null when the
// scalar is null, and !!binary decoded.
func (p fieldParser) str(v *yaml.Node) (string, bool, error) {
	v = deref(v)
	if v.Kind != yaml.ScalarNode {
		return "", false, p.errorf("expected a string, found a %s", kindName(v))
	}
	switch snakeyaml.ScalarTag(v) {
	case snakeyaml.TagNull:
		return "", true, nil
	case snakeyaml.TagBinary:
		b, err := base64.StdEncoding.DecodeString(strings.Join(strings.Fields(v.Value), ""))
		if err != nil {
			return "", false, p.errorf("invalid !!binary value: %v", err)
		}
		return string(b), false, nil
	}
	return v.Value, false, nil
}

// nullable reads a string whose Java default is null.
func (p fieldParser) nullable(v *yaml.Node, dst *string, w *wireState, bit keySet) error {
	s, null, err := p.str(v)
	if err != nil {
		return err
	}
	*dst = s
	w.empty &^= bit
	if !null && s == "" {
		w.empty |= bit
	}
	return nil
}

// defaulted reads a string whose Java API default is "".
func (p fieldParser) defaulted(v *yaml.Node, dst *string, w *wireState, bit keySet) error {
	s, null, err := p.str(v)
	if err != nil {
		return err
	}
	*dst = s
	w.null &^= bit
	if null {
		w.null |= bit
	}
	return nil
}

func (p fieldParser) bool(v *yaml.Node) (bool, error) {
	v = deref(v)
	if v.Kind != yaml.ScalarNode {
		return false, p.errorf("expected a boolean, found a %s", kindName(v))
	}
	switch strings.ToLower(v.Value) {
	case "true", "yes", "on":
		return true, nil
	case "false", "no", "off":
		return false, nil
	}
	return false, p.errorf("cannot parse %s as a boolean", quoteForError(v.Value))
}

func (p fieldParser) int(v *yaml.Node) (int, error) {
	v = deref(v)
	if v.Kind != yaml.ScalarNode {
		return 0, p.errorf("expected an integer, found a %s", kindName(v))
	}
	n, err := parseYAML11Int(v.Value)
	if err != nil {
		return 0, p.errorf("cannot parse %s as an integer: %v", quoteForError(v.Value), err)
	}
	if n < math.MinInt32 || n > math.MaxInt32 {
		return 0, p.errorf("%s does not fit a Java int", quoteForError(v.Value))
	}
	return int(n), nil
}

func (p fieldParser) strings(v *yaml.Node) ([]string, error) {
	v = deref(v)
	if v.Kind == yaml.ScalarNode && snakeyaml.ScalarTag(v) == snakeyaml.TagNull {
		return nil, nil
	}
	if v.Kind != yaml.SequenceNode {
		return nil, p.errorf("expected a list, found a %s", kindName(v))
	}
	var out []string
	for _, item := range v.Content {
		ip := fieldParser{key: p.key, line: item.Line}
		s, null, err := ip.str(item)
		if err != nil {
			return nil, err
		}
		if null {
			return nil, ip.errorf("null list item")
		}
		out = append(out, s)
	}
	return out, nil
}

func (p fieldParser) props(v *yaml.Node) (map[string]string, []string, error) {
	v = deref(v)
	if v.Kind == yaml.ScalarNode && snakeyaml.ScalarTag(v) == snakeyaml.TagNull {
		return nil, nil, nil
	}
	if v.Kind != yaml.MappingNode {
		return nil, nil, p.errorf("expected a mapping, found a %s", kindName(v))
	}
	out := make(map[string]string, len(v.Content)/2)
	var order []string
	for i := 0; i+1 < len(v.Content); i += 2 {
		kp := fieldParser{key: p.key, line: v.Content[i].Line}
		k, null, err := kp.str(v.Content[i])
		if err != nil || null {
			return nil, nil, kp.errorf("a property name is not a string")
		}
		vp := fieldParser{key: p.key + "." + k, line: v.Content[i+1].Line}
		s, null, err := vp.str(v.Content[i+1])
		if err != nil {
			return nil, nil, err
		}
		if null {
			return nil, nil, vp.errorf("null property value")
		}
		if _, dup := out[k]; !dup {
			order = append(order, k)
		}
		out[k] = s
	}
	return out, order, nil
}

func (p fieldParser) extras(v *yaml.Node) ([]ExtraConfiguration, error) {
	v = deref(v)
	if v.Kind == yaml.ScalarNode && snakeyaml.ScalarTag(v) == snakeyaml.TagNull {
		return nil, nil
	}
	if v.Kind != yaml.SequenceNode {
		return nil, p.errorf("expected a list, found a %s", kindName(v))
	}
	var out []ExtraConfiguration
	for _, item := range v.Content {
		n, err := snakeyaml.FromYAML(item)
		if err != nil {
			return nil, fieldParser{key: p.key, line: item.Line}.errorf("%v", err)
		}
		x := ExtraConfiguration{body: n}
		if deref(item).Style&yaml.TaggedStyle != 0 {
			x.Tag, n.Tag = n.Tag, ""
		}
		out = append(out, x)
	}
	return out, nil
}

func kindName(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "mapping"
	case yaml.SequenceNode:
		return "list"
	case yaml.ScalarNode:
		return "scalar"
	}
	return "node"
}

var errIntSyntax = errors.New("not a YAML 1.1 integer")

// parseYAML11Int parses an integer as SnakeYAML's ConstructYamlInt does.
func parseYAML11Int(s string) (int64, error) {
	v := strings.ReplaceAll(s, "_", "")
	sign := int64(1)
	if strings.HasPrefix(v, "-") {
		sign, v = -1, v[1:]
	} else if strings.HasPrefix(v, "+") {
		v = v[1:]
	}
	if v == "" {
		return 0, errIntSyntax
	}
	var (
		n   int64
		err error
	)
	switch {
	case v == "0":
		return 0, nil
	case strings.HasPrefix(v, "0b"):
		n, err = strconv.ParseInt(v[2:], 2, 64)
	case strings.HasPrefix(v, "0x"):
		n, err = strconv.ParseInt(v[2:], 16, 64)
	case strings.HasPrefix(v, "0"):
		n, err = strconv.ParseInt(v[1:], 8, 64)
	case strings.Contains(v, ":"):
		for _, digit := range strings.Split(v, ":") {
			d, derr := strconv.ParseInt(digit, 10, 64)
			if derr != nil {
				return 0, errIntSyntax
			}
			n = n*60 + d
		}
	default:
		n, err = strconv.ParseInt(v, 10, 64)
	}
	if err != nil {
		return 0, errIntSyntax
	}
	return sign * n, nil
}
