package snakeyaml

import (
	"fmt"
	"strings"

	"gopkg.in/yaml.v3"
)

// FromYAML converts a node parsed by gopkg.in/yaml.v3 into the node Java
// would represent after loading it: plain scalars get SnakeYAML's YAML 1.1
// implicit tags (so `yes` is a !!bool and `1:30` an !!int, unlike yaml.v3),
// quoted and block scalars are !!str, explicit tags are kept, !!null is
// written back as `null`, and strings ask for the style RepresentString
// would ask for. Anchors and aliases are kept by name.
func FromYAML(n *yaml.Node) (*Node, error) {
	if n == nil {
		return nil, fmt.Errorf("%w: nil yaml node", ErrEmit)
	}
	switch n.Kind {
	case yaml.DocumentNode:
		if len(n.Content) != 1 {
			return nil, fmt.Errorf("%w: document with %d roots", ErrEmit, len(n.Content))
		}
		return FromYAML(n.Content[0])
	case yaml.AliasNode:
		return &Node{Kind: AliasNode, Alias: n.Value}, nil
	case yaml.ScalarNode:
		tag := scalarTag(n)
		var out *Node
		switch tag {
		case TagStr:
			out = String(n.Value)
		case TagNull:
			out = Null()
		case TagBinary:
			out = &Node{Kind: ScalarNode, Tag: TagBinary, Value: strings.Join(strings.Fields(n.Value), ""), Style: StyleLiteral}
		default:
			out = &Node{Kind: ScalarNode, Tag: tag, Value: n.Value}
		}
		out.Anchor = n.Anchor
		return out, nil
	case yaml.MappingNode, yaml.SequenceNode:
		out := &Node{Kind: MappingNode, Anchor: n.Anchor}
		if n.Kind == yaml.SequenceNode {
			out.Kind = SequenceNode
		}
		if n.Style&yaml.TaggedStyle != 0 {
			out.Tag = shortTag(n.Tag)
		}
		out.Content = make([]*Node, 0, len(n.Content))
		for _, c := range n.Content {
			cn, err := FromYAML(c)
			if err != nil {
				return nil, err
			}
			out.Content = append(out.Content, cn)
		}
		return out, nil
	}
	return nil, fmt.Errorf("%w: unsupported yaml node kind %d at line %d", ErrEmit, n.Kind, n.Line)
}

// ScalarTag returns the tag SnakeYAML gives a parsed scalar: its explicit
// tag, !!str when quoted or a block scalar, else the implicit resolution.
func ScalarTag(n *yaml.Node) string { return scalarTag(n) }

func scalarTag(n *yaml.Node) string {
	switch {
	case n.Style&yaml.TaggedStyle != 0:
		return shortTag(n.Tag)
	case n.Style&(yaml.SingleQuotedStyle|yaml.DoubleQuotedStyle|yaml.LiteralStyle|yaml.FoldedStyle) != 0:
		return TagStr
	default:
		return Resolve(n.Value)
	}
}

func shortTag(tag string) string {
	if strings.HasPrefix(tag, "tag:yaml.org,2002:") {
		return "!!" + strings.TrimPrefix(tag, "tag:yaml.org,2002:")
	}
	return tag
}

// ToYAML converts n to a yaml.v3 node, e.g. to Decode it into Go values.
// Scalars keep their tags, so a !!str "123" decodes as a string.
func ToYAML(n *Node) *yaml.Node {
	out := &yaml.Node{Anchor: n.Anchor}
	switch n.Kind {
	case AliasNode:
		out.Kind = yaml.AliasNode
		out.Value = n.Alias
	case ScalarNode:
		out.Kind = yaml.ScalarNode
		out.Tag = n.tag()
		out.Value = n.Value
		if out.Tag == TagBool || out.Tag == TagInt || out.Tag == TagFloat || out.Tag == TagNull {
			out.Tag = yamlV3Tag(out.Tag, n.Value)
		}
	case MappingNode, SequenceNode:
		out.Kind = yaml.MappingNode
		if n.Kind == SequenceNode {
			out.Kind = yaml.SequenceNode
		}
		out.Tag = n.tag()
		for _, c := range n.Content {
			out.Content = append(out.Content, ToYAML(c))
		}
	}
	return out
}

// yamlV3Tag re-tags YAML 1.1 scalars that yaml.v3 cannot decode under the
// 1.1 tag (e.g. `yes` as !!bool) as strings so decoding does not fail.
func yamlV3Tag(tag, value string) string {
	var probe yaml.Node
	if err := yaml.Unmarshal([]byte(value), &probe); err != nil || len(probe.Content) != 1 || probe.Content[0].Tag != tag {
		return TagStr
	}
	return tag
}
