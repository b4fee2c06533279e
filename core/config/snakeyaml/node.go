package snakeyaml

import (
	"encoding/base64"
	"regexp"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Kind is the kind of a Node.
type Kind uint8

// Node kinds.
const (
	ScalarNode Kind = iota + 1
	MappingNode
	SequenceNode
	AliasNode
)

// Style is the scalar style the representer asks for. The emitter may still
// choose a quoted style when the requested one cannot represent the value,
// exactly as SnakeYAML's Emitter.chooseScalarStyle does.
type Style uint8

// Requested scalar styles. Java's representer only ever asks for plain, or
// literal for multi-line strings and !!binary.
const (
	StylePlain Style = iota
	StyleLiteral
)

// Well-known tags, in the short form SnakeYAML writes them.
const (
	TagStr       = "!!str"
	TagInt       = "!!int"
	TagFloat     = "!!float"
	TagBool      = "!!bool"
	TagNull      = "!!null"
	TagBinary    = "!!binary"
	TagTimestamp = "!!timestamp"
	TagMerge     = "!!merge"
	TagYAML      = "!!yaml"
	TagMap       = "!!map"
	TagSeq       = "!!seq"
)

// Node is a representation-graph node, the input of Dump. Mapping content
// alternates keys and values. The zero Tag means the kind's default tag
// (!!str, !!map, !!seq), which is never written.
type Node struct {
	Kind    Kind
	Tag     string
	Value   string
	Style   Style
	Anchor  string
	Alias   string // AliasNode only: the anchor it refers to
	Content []*Node
}

func (n *Node) tag() string {
	if n.Tag != "" {
		return n.Tag
	}
	switch n.Kind {
	case MappingNode:
		return TagMap
	case SequenceNode:
		return TagSeq
	default:
		return TagStr
	}
}

// String represents a Java String as SnakeYAML's RepresentString does: a
// value that is not printable in YAML becomes !!binary (base64, literal
// style); a value with a line break asks for literal style; anything else
// asks for plain style, and the emitter quotes it when it must.
func String(s string) *Node {
	n := StringValue(s)
	return &n
}

// StringValue is String's node as a value, for callers that allocate many
// nodes together.
func StringValue(s string) Node {
	if !utf8.ValidString(s) || !IsPrintable(s) {
		return Node{Kind: ScalarNode, Tag: TagBinary, Value: base64.StdEncoding.EncodeToString([]byte(s)), Style: StyleLiteral}
	}
	n := Node{Kind: ScalarNode, Tag: TagStr, Value: s}
	if strings.ContainsAny(s, "\n\u0085\u2028\u2029") { // Java's MULTILINE_PATTERN
		n.Style = StyleLiteral
	}
	return n
}

// Int represents a Java int/long.
func Int(i int64) *Node {
	return &Node{Kind: ScalarNode, Tag: TagInt, Value: strconv.FormatInt(i, 10)}
}

// Bool represents a Java boolean.
func Bool(b bool) *Node {
	return &Node{Kind: ScalarNode, Tag: TagBool, Value: strconv.FormatBool(b)}
}

// Null represents a Java null (only ever written inside maps and lists;
// JavaBean properties that are null are omitted by the representer).
func Null() *Node {
	return &Node{Kind: ScalarNode, Tag: TagNull, Value: "null"}
}

// Mapping builds a mapping node from alternating keys and values.
func Mapping(kv ...*Node) *Node {
	return &Node{Kind: MappingNode, Content: kv}
}

// Sequence builds a sequence node.
func Sequence(items ...*Node) *Node {
	return &Node{Kind: SequenceNode, Content: items}
}

// IsPrintable reports whether every character of s is printable in YAML, as
// SnakeYAML's StreamReader.isPrintable decides. Strings that are not are
// written as !!binary.
func IsPrintable(s string) bool {
	for _, c := range s {
		if !isPrintableRune(c) {
			return false
		}
	}
	return true
}

func isPrintableRune(c rune) bool {
	return (c >= 0x20 && c <= 0x7E) || c == 0x9 || c == 0xA || c == 0xD || c == 0x85 ||
		(c >= 0xA0 && c <= 0xD7FF) || (c >= 0xE000 && c <= 0xFFFD) || (c >= 0x10000 && c <= 0x10FFFF)
}

// SnakeYAML 2.x Resolver patterns (YAML 1.1; the same in 1.33). Each has a set of first
// characters and a maximum length beyond which it is not tried.
var (
	boolRE      = regexp.MustCompile(`^(?:yes|Yes|YES|no|No|NO|true|True|TRUE|false|False|FALSE|on|On|ON|off|Off|OFF)$`)
	intRE       = regexp.MustCompile(`^(?:[-+]?0b_*[0-1][0-1_]*|[-+]?0_*[0-7][0-7_]*|[-+]?(?:0|[1-9][0-9_]*)|[-+]?0x_*[0-9a-fA-F][0-9a-fA-F_]*|[-+]?[1-9][0-9_]*(?::[0-5]?[0-9])+)$`)
	floatRE     = regexp.MustCompile(`^(?:[-+]?(?:[0-9][0-9_]*)\.[0-9_]*(?:[eE][-+]?[0-9]+)?|[-+]?(?:[0-9][0-9_]*)(?:[eE][-+]?[0-9]+)|[-+]?\.[0-9_]+(?:[eE][-+]?[0-9]+)?|[-+]?[0-9][0-9_]*(?::[0-5]?[0-9])+\.[0-9_]*|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN))$`)
	mergeRE     = regexp.MustCompile(`^(?:<<)$`)
	nullRE      = regexp.MustCompile(`^(?:~|null|Null|NULL| )$`)
	timestampRE = regexp.MustCompile(`^(?:[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9]|[0-9][0-9][0-9][0-9]-[0-9][0-9]?-[0-9][0-9]?(?:[Tt]|[ \t]+)[0-9][0-9]?:[0-9][0-9]:[0-9][0-9](?:\.[0-9]*)?(?:[ \t]*(?:Z|[-+][0-9][0-9]?(?::[0-9][0-9])?))?)$`)
	yamlRE      = regexp.MustCompile(`^(?:!|&|\*)$`)
)

type resolver struct {
	tag   string
	re    *regexp.Regexp // SnakeYAML's pattern
	first string
	limit int
	// chars holds every character a match can contain: a value with
	// another one is not tried (a cron expression holds spaces and ?).
	chars string
	// match is re.MatchString, or the same test without regexp.
	match func(string) bool
}

// resolvers in SnakeYAML's registration order (INT before FLOAT).
var resolvers = []resolver{
	{TagBool, boolRE, "yYnNtTfFoO", 10, "yesYESnoNOtrueTRUEfalsFALS", isBoolWord},
	{TagInt, intRE, "-+0123456789", 1024, "-+0123456789_:bxabcdefABCDEF", isInt},
	{TagFloat, floatRE, "-+0123456789.", 1024, "-+0123456789_:.eEinfINFaA", floatRE.MatchString},
	{TagMerge, mergeRE, "<", 10, "<", func(s string) bool { return s == "<<" }},
	{TagNull, nullRE, "~nN", 10, "~nulNUL ", isNullWord},
	{TagTimestamp, timestampRE, "0123456789", 50, "0123456789-:.+TtZ \t", timestampRE.MatchString},
	{TagYAML, yamlRE, "!&*", 10, "!&*", func(s string) bool { return s == "!" || s == "&" || s == "*" }},
}

// isBoolWord is boolRE.MatchString.
func isBoolWord(s string) bool {
	switch s {
	case "yes", "Yes", "YES", "no", "No", "NO", "true", "True", "TRUE", "false", "False", "FALSE", "on", "On", "ON", "off", "Off", "OFF":
		return true
	}
	return false
}

// isNullWord is nullRE.MatchString.
func isNullWord(s string) bool {
	switch s {
	case "~", "null", "Null", "NULL", " ":
		return true
	}
	return false
}

// isInt is intRE.MatchString; a plain decimal ([-+]?(0|[1-9][0-9_]*),
// one of its forms) is told without it.
func isInt(s string) bool {
	d := strings.TrimLeft(s, "-+")
	if len(s)-len(d) <= 1 && d != "" && (d == "0" || d[0] != '0') && onlyChars(d, "0123456789_") && d[0] != '_' {
		return true
	}
	return intRE.MatchString(s)
}

// Resolve returns the tag SnakeYAML's Resolver gives a plain scalar with
// this value: !!bool for yes/on/true..., !!int, !!float, !!null (also for
// the empty string), !!timestamp, !!merge, or !!str.
func Resolve(value string) string {
	if value == "" {
		return TagNull
	}
	first, _ := utf8.DecodeRuneInString(value)
	n := utf16Len(value)
	for _, r := range resolvers {
		if !containsRune(r.first, first) || n > r.limit || !onlyChars(value, r.chars) {
			continue
		}
		if r.match(value) {
			return r.tag
		}
	}
	return TagStr
}

// onlyChars reports whether every byte of value is one of chars (ASCII).
func onlyChars(value, chars string) bool {
	for i := 0; i < len(value); i++ {
		if strings.IndexByte(chars, value[i]) < 0 {
			return false
		}
	}
	return true
}

func containsRune(s string, r rune) bool {
	for _, c := range s {
		if c == r {
			return true
		}
	}
	return false
}

func utf16Len(s string) int {
	n := 0
	for _, r := range s {
		if r >= 0x10000 {
			n += 2
		} else {
			n++
		}
	}
	return n
}
