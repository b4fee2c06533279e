package config

import (
	"bytes"
	"errors"
	"io"
	"regexp"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/ejob-io/ejob/core/config/snakeyaml"
	"github.com/ejob-io/ejob/spi/redact"
)

// Redact returns the YAML of a config node (as the registry holds it,
// written by ejob, Java or anyone) with every secret masked by redact's
// one masker: the value of every mapping key that names a secret
// (props' email.password, webhook.headers.*, a tracing extra
// configuration's password, at any depth, a nested value as a whole),
// and the secrets inside every other string (redact.Value: URLs,
// Authorization headers, password=... in command lines and bodies). It
// masks what the YAML means, after its quoting and escapes are undone, so
// no quoting hides a secret. When something is masked the document is
// written back as Java writes config nodes; otherwise data is returned as
// it is. Text that does not parse as one YAML document is masked line by
// line (redactLines).
func Redact(data []byte) []byte {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return data
		}
		return redactLines(data)
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); !errors.Is(err, io.EOF) {
		return redactLines(data)
	}
	if !redactNode(&doc) {
		return data
	}
	n, err := snakeyaml.FromYAML(&doc)
	if err != nil {
		return redactLines(data)
	}
	out, err := snakeyaml.Dump(n)
	if err != nil {
		return redactLines(data)
	}
	return out
}

// redactNode masks the secrets under n in place and reports whether it
// changed anything.
func redactNode(n *yaml.Node) bool {
	changed := false
	switch n.Kind {
	case yaml.DocumentNode:
		for _, c := range n.Content {
			changed = redactNode(c) || changed
		}
	case yaml.SequenceNode:
		for _, c := range n.Content {
			if c.Kind == yaml.ScalarNode {
				changed = redactScalar(c, "") || changed
			} else {
				changed = redactNode(c) || changed
			}
		}
	case yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			switch {
			case v.Kind == yaml.ScalarNode:
				changed = redactScalar(v, k.Value) || changed
			case redact.IsSecretKey(k.Value):
				// A secret's nested value or alias, masked whole.
				n.Content[i+1] = &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: redact.Mask}
				changed = true
			default:
				changed = redactNode(v) || changed
			}
		}
	}
	return changed
}

// redactScalar masks the scalar v, the value of key, in place.
func redactScalar(v *yaml.Node, key string) bool {
	if v.Tag == "!!null" || v.Tag == "!!binary" {
		return false
	}
	m := redact.Value(key, v.Value)
	if m == v.Value {
		return false
	}
	v.Value, v.Tag, v.Style = m, "!!str", 0
	return true
}

// yamlKeyPattern matches a block mapping line: indentation and sequence
// dashes, the key (plain or quoted) and the ':' after it.
func yamlKeyPattern() *regexp.Regexp {
	return regexp.MustCompile(`^(\s*(?:-\s+)*)("(?:[^"\\]|\\.)*"|'(?:[^']|'')*'|[^\s#'"][^:#]*?)\s*:(?:\s|$)`)
}

// redactLines masks YAML that does not parse, line by line: after a key
// that names a secret, the rest of its line and every following line
// indented deeper (a block scalar, a continued or nested value); every
// other line through redact.Text.
func redactLines(data []byte) []byte {
	lines := strings.SplitAfter(string(data), "\n")
	re := yamlKeyPattern()
	under := -1 // the indentation of the secret key being masked; -1: none
	for i, line := range lines {
		body := strings.TrimRight(line, "\r\n")
		end := line[len(body):]
		indent := len(body) - len(strings.TrimLeft(body, " \t"))
		if under >= 0 {
			if strings.TrimSpace(body) == "" || indent > under {
				if strings.TrimSpace(body) != "" {
					lines[i] = body[:indent] + redact.Mask + end
				}
				continue
			}
			under = -1
		}
		m := re.FindStringSubmatchIndex(body)
		if m == nil {
			lines[i] = redact.Text(body) + end
			continue
		}
		key := strings.Trim(body[m[4]:m[5]], `"'`)
		if !redact.IsSecretKey(key) {
			lines[i] = redact.Text(body) + end
			continue
		}
		under = m[4] // the key's column
		if rest := strings.TrimSpace(body[m[1]:]); rest != "" {
			lines[i] = strings.TrimRight(body[:m[1]], " \t") + " " + redact.Mask + end
		}
	}
	return []byte(strings.Join(lines, ""))
}
