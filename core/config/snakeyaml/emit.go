package snakeyaml

import (
	"errors"
	"fmt"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// ErrEmit is wrapped by every error Dump returns.
var ErrEmit = errors.New("snakeyaml: cannot emit")

const (
	bestIndent         = 2
	bestWidth          = 80
	maxSimpleKeyLength = 128
	noIndent           = -1
)

// Dump writes root as SnakeYAML's Yaml.dump / dumpAsMap does with default
// DumperOptions: one implicit document, block style, no document markers.
func Dump(root *Node) ([]byte, error) { return dump(root, nil, "") }

func dump(root *Node, memo *Memo, unique string) ([]byte, error) {
	e := &emitter{indent: noIndent, whitespace: true, indention: true, memo: memo, unique: unique}
	if err := e.node(root, nodeCtx{root: true}); err != nil {
		return nil, err
	}
	// ExpectDocumentEnd: writeIndent.
	e.writeIndent()
	return []byte(e.buf.String()), nil
}

type nodeCtx struct {
	root, sequence, mapping, simpleKey bool
}

type emitter struct {
	buf        strings.Builder
	column     int // in UTF-16 code units, as Java counts
	indent     int
	indents    []int
	flowLevel  int
	whitespace bool
	indention  bool

	simpleKey bool // simple key context of the node being written

	units []uint16 // processScalar's, reused

	memo   *Memo  // the root mapping's entries written before (nil: none)
	unique string // the root mapping's key the memo is not asked for
}

func (e *emitter) increaseIndent(flow, indentless bool) {
	e.indents = append(e.indents, e.indent)
	if e.indent == noIndent {
		if flow {
			e.indent = bestIndent
		} else {
			e.indent = 0
		}
	} else if !indentless {
		e.indent += bestIndent
	}
}

func (e *emitter) popIndent() {
	e.indent = e.indents[len(e.indents)-1]
	e.indents = e.indents[:len(e.indents)-1]
}

func (e *emitter) node(n *Node, ctx nodeCtx) error {
	if n == nil {
		return fmt.Errorf("%w: nil node", ErrEmit)
	}
	e.simpleKey = ctx.simpleKey
	if n.Kind == AliasNode {
		if n.Alias == "" {
			return fmt.Errorf("%w: alias without anchor name", ErrEmit)
		}
		e.writeIndicator("*"+n.Alias, true, false, false)
		return nil
	}
	if n.Anchor != "" {
		e.writeIndicator("&"+n.Anchor, true, false, false)
	}
	switch n.Kind {
	case ScalarNode:
		a := analyzeScalar(n.Value)
		style := e.chooseScalarStyle(n, a)
		implicitPlain := n.tag() == Resolve(n.Value)
		implicitNonPlain := n.tag() == TagStr
		if !((style == stylePlainOut && implicitPlain) || (style != stylePlainOut && implicitNonPlain)) {
			e.writeIndicator(prepareTag(n.tag()), true, false, false)
		}
		e.increaseIndent(true, false)
		e.processScalar(n.Value, style, !ctx.simpleKey)
		e.popIndent()
		return nil
	case SequenceNode:
		if n.tag() != TagSeq {
			e.writeIndicator(prepareTag(n.tag()), true, false, false)
		}
		if e.flowLevel > 0 || len(n.Content) == 0 {
			e.writeIndicator("[", true, true, false)
			e.flowLevel++
			e.increaseIndent(true, false)
			if len(n.Content) != 0 {
				return fmt.Errorf("%w: non-empty flow sequence", ErrEmit)
			}
			e.popIndent()
			e.flowLevel--
			e.writeIndicator("]", false, false, false)
			return nil
		}
		e.increaseIndent(false, ctx.mapping && !e.indention)
		for _, item := range n.Content {
			e.writeIndent()
			e.writeIndicator("-", true, false, true)
			if err := e.node(item, nodeCtx{sequence: true}); err != nil {
				return err
			}
		}
		e.popIndent()
		return nil
	case MappingNode:
		if len(n.Content)%2 != 0 {
			return fmt.Errorf("%w: mapping with odd content length %d", ErrEmit, len(n.Content))
		}
		if n.tag() != TagMap {
			e.writeIndicator(prepareTag(n.tag()), true, false, false)
		}
		if e.flowLevel > 0 || len(n.Content) == 0 {
			e.writeIndicator("{", true, true, false)
			e.flowLevel++
			e.increaseIndent(true, false)
			if len(n.Content) != 0 {
				return fmt.Errorf("%w: non-empty flow mapping", ErrEmit)
			}
			e.popIndent()
			e.flowLevel--
			e.writeIndicator("}", false, false, false)
			return nil
		}
		e.increaseIndent(false, false)
		for i := 0; i < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			var mk memoKey
			memoized := e.memo != nil && ctx.root && memoable(k) && memoable(v) && k.Value != e.unique
			if memoized {
				mk = memoKey{start: e.state(), key: scalarOf(k), value: scalarOf(v)}
				if w, ok := e.memo.get(mk); ok {
					e.buf.WriteString(w.out)
					e.column, e.whitespace, e.indention = w.end.column, w.end.whitespace, w.end.indention
					continue
				}
			}
			mark := e.buf.Len()
			e.writeIndent()
			if checkSimpleKey(k) {
				if err := e.node(k, nodeCtx{mapping: true, simpleKey: true}); err != nil {
					return err
				}
				e.writeIndicator(":", false, false, false)
			} else {
				e.writeIndicator("?", true, false, true)
				if err := e.node(k, nodeCtx{mapping: true}); err != nil {
					return err
				}
				e.writeIndent()
				e.writeIndicator(":", true, false, true)
			}
			if err := e.node(v, nodeCtx{mapping: true}); err != nil {
				return err
			}
			if memoized {
				e.memo.put(mk, memoWritten{out: strings.Clone(e.buf.String()[mark:]), end: e.state()})
			}
		}
		e.popIndent()
		return nil
	}
	return fmt.Errorf("%w: unknown node kind %d", ErrEmit, n.Kind)
}

// checkSimpleKey ports Emitter.checkSimpleKey: the event's tag is always
// set for scalars (e.g. "!!str", 5 characters) and counts towards the limit.
func checkSimpleKey(k *Node) bool {
	length := 0
	if k.Kind != AliasNode && k.Anchor != "" {
		length += len(k.Anchor)
	}
	switch k.Kind {
	case AliasNode:
		return length+len(k.Alias) < maxSimpleKeyLength
	case ScalarNode:
		length += utf16Len(prepareTag(k.tag()))
		length += utf16Len(k.Value)
		return length < maxSimpleKeyLength && k.Value != "" && !analyzeScalar(k.Value).multiline
	default:
		length += utf16Len(prepareTag(k.tag()))
		return length < maxSimpleKeyLength && len(k.Content) == 0
	}
}

// prepareTag maps a tag to its written form: short forms ("!!x", "!x") are
// written as they are, the yaml.org prefix becomes "!!", anything else is a
// verbatim tag.
func prepareTag(tag string) string {
	switch {
	case strings.HasPrefix(tag, "!"):
		return tag
	case strings.HasPrefix(tag, "tag:yaml.org,2002:") && len(tag) > len("tag:yaml.org,2002:"):
		return "!!" + strings.TrimPrefix(tag, "tag:yaml.org,2002:")
	default:
		return "!<" + tag + ">"
	}
}

type outStyle uint8

const (
	stylePlainOut outStyle = iota
	styleSingle
	styleDouble
	styleLiteralOut
)

func (e *emitter) chooseScalarStyle(n *Node, a analysis) outStyle {
	implicitPlain := n.tag() == Resolve(n.Value)
	if n.Style == StylePlain && implicitPlain {
		if !(e.simpleKey && (a.empty || a.multiline)) &&
			((e.flowLevel != 0 && a.allowFlowPlain) || (e.flowLevel == 0 && a.allowBlockPlain)) {
			return stylePlainOut
		}
	}
	if n.Style == StyleLiteral {
		if e.flowLevel == 0 && !e.simpleKey && a.allowBlock {
			return styleLiteralOut
		}
	}
	if n.Style == StylePlain {
		if a.allowSingleQuoted && !(e.simpleKey && a.multiline) {
			return styleSingle
		}
	}
	return styleDouble
}

type analysis struct {
	empty, multiline                                               bool
	allowFlowPlain, allowBlockPlain, allowSingleQuoted, allowBlock bool
}

func isLineBreak(c rune) bool { return c == '\n' || c == 0x85 || c == 0x2028 || c == 0x2029 }

func isSpaceOrBreakZ(c rune) bool {
	return c == 0 || c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == 0x85 || c == 0x2028 || c == 0x2029
}

// analyzeScalar ports Emitter.analyzeScalar (allowUnicode = true).
func analyzeScalar(s string) analysis {
	if s == "" {
		return analysis{empty: true, allowBlockPlain: true, allowSingleQuoted: true}
	}
	rs := []rune(s)
	var blockIndicators, flowIndicators, lineBreaks, specialCharacters bool
	var leadingSpace, leadingBreak, trailingSpace, trailingBreak, breakSpace, spaceBreak bool
	if strings.HasPrefix(s, "---") || strings.HasPrefix(s, "...") {
		blockIndicators, flowIndicators = true, true
	}
	precededByWhitespace := true
	followedByWhitespace := len(rs) == 1 || isSpaceOrBreakZ(rs[1])
	previousSpace, previousBreak := false, false
	for i, c := range rs {
		if i == 0 {
			if strings.ContainsRune("#,[]{}&*!|>'\"%@`", c) {
				flowIndicators, blockIndicators = true, true
			}
			if c == '?' || c == ':' {
				flowIndicators = true
				if followedByWhitespace {
					blockIndicators = true
				}
			}
			if c == '-' && followedByWhitespace {
				flowIndicators, blockIndicators = true, true
			}
		} else {
			if strings.ContainsRune(",?[]{}", c) {
				flowIndicators = true
			}
			if c == ':' {
				flowIndicators = true
				if followedByWhitespace {
					blockIndicators = true
				}
			}
			if c == '#' && precededByWhitespace {
				flowIndicators, blockIndicators = true, true
			}
		}
		if isLineBreak(c) {
			lineBreaks = true
		}
		if !(c == '\n' || (c >= 0x20 && c <= 0x7E)) {
			if (c == 0x85 || (c >= 0xA0 && c <= 0xD7FF) || (c >= 0xE000 && c <= 0xFFFD) || (c >= 0x10000 && c <= 0x10FFFF)) && c != 0xFEFF {
				// unicode character; allowed since allowUnicode is on
			} else {
				specialCharacters = true
			}
		}
		switch {
		case c == ' ':
			if i == 0 {
				leadingSpace = true
			}
			if i == len(rs)-1 {
				trailingSpace = true
			}
			if previousBreak {
				breakSpace = true
			}
			previousSpace, previousBreak = true, false
		case isLineBreak(c):
			if i == 0 {
				leadingBreak = true
			}
			if i == len(rs)-1 {
				trailingBreak = true
			}
			if previousSpace {
				spaceBreak = true
			}
			previousSpace, previousBreak = false, true
		default:
			previousSpace, previousBreak = false, false
		}
		precededByWhitespace = isSpaceOrBreakZ(c)
		followedByWhitespace = i+2 >= len(rs) || isSpaceOrBreakZ(rs[i+2])
	}
	a := analysis{multiline: lineBreaks, allowFlowPlain: true, allowBlockPlain: true, allowSingleQuoted: true, allowBlock: true}
	// SnakeYAML (since 1.2x) also refuses plain style for "0[0-9_]+", which
	// YAML 1.1 readers could take for an octal number.
	if leadingSpace || leadingBreak || trailingSpace || trailingBreak || leadingZero(s) {
		a.allowFlowPlain, a.allowBlockPlain = false, false
	}
	if trailingSpace {
		a.allowBlock = false
	}
	if breakSpace {
		a.allowFlowPlain, a.allowBlockPlain, a.allowSingleQuoted = false, false, false
	}
	if spaceBreak || specialCharacters {
		a.allowFlowPlain, a.allowBlockPlain, a.allowSingleQuoted, a.allowBlock = false, false, false, false
	}
	if lineBreaks {
		a.allowFlowPlain, a.allowBlockPlain = false, false
	}
	if flowIndicators {
		a.allowFlowPlain = false
	}
	if blockIndicators {
		a.allowBlockPlain = false
	}
	return a
}

// leadingZero reports whether s matches ^0[0-9_]+$.
func leadingZero(s string) bool {
	if len(s) < 2 || s[0] != '0' {
		return false
	}
	for i := 1; i < len(s); i++ {
		if c := s[i]; c != '_' && (c < '0' || c > '9') {
			return false
		}
	}
	return true
}

func (e *emitter) processScalar(value string, style outStyle, split bool) {
	// utf16.Encode([]rune(value)) into a buffer the scalars share (the
	// writers below do not keep it): two allocations less a scalar.
	u := e.units[:0]
	for _, r := range value {
		u = utf16.AppendRune(u, r)
	}
	e.units = u
	switch style {
	case stylePlainOut:
		e.writePlain(u, split)
	case styleSingle:
		e.writeSingleQuoted(u, split)
	case styleDouble:
		e.writeDoubleQuoted(u, split)
	case styleLiteralOut:
		e.writeLiteral(u)
	}
}

// --- low-level writers (Emitter.write*) ---

func (e *emitter) write(u []uint16) {
	for _, c := range u {
		if c >= utf8.RuneSelf {
			e.buf.WriteString(string(utf16.Decode(u)))
			return
		}
	}
	e.buf.Grow(len(u))
	for _, c := range u {
		e.buf.WriteByte(byte(c)) // ASCII: one byte per code unit
	}
}

func (e *emitter) writeString(s string) {
	e.buf.WriteString(s)
}

func (e *emitter) writeIndicator(indicator string, needWhitespace, whitespace, indentation bool) {
	if !e.whitespace && needWhitespace {
		e.column++
		e.buf.WriteByte(' ')
	}
	e.whitespace = whitespace
	e.indention = e.indention && indentation
	e.column += utf16Len(indicator)
	e.buf.WriteString(indicator)
}

func (e *emitter) writeIndent() {
	indent := e.indent
	if indent == noIndent {
		indent = 0
	}
	if !e.indention || e.column > indent || (e.column == indent && !e.whitespace) {
		e.writeLineBreak("")
	}
	if n := indent - e.column; n > 0 {
		e.whitespace = true
		e.buf.WriteString(strings.Repeat(" ", n))
		e.column += n
	}
}

func (e *emitter) writeLineBreak(data string) {
	e.whitespace = true
	e.indention = true
	e.column = 0
	if data == "" {
		data = "\n"
	}
	e.buf.WriteString(data)
}

func isBreakUnit(c uint16) bool { return c == '\n' || c == 0x85 || c == 0x2028 || c == 0x2029 }

func (e *emitter) writeBreaks(u []uint16) {
	for _, br := range u {
		if br == '\n' {
			e.writeLineBreak("")
		} else {
			e.writeLineBreak(string(rune(br)))
		}
	}
}

func (e *emitter) writePlain(text []uint16, split bool) {
	if len(text) == 0 {
		return
	}
	if !e.whitespace {
		e.column++
		e.buf.WriteByte(' ')
	}
	e.whitespace = false
	e.indention = false
	spaces, breaks := false, false
	start, end := 0, 0
	for end <= len(text) {
		var ch uint16
		if end < len(text) {
			ch = text[end]
		}
		if spaces {
			if ch != ' ' {
				if start+1 == end && e.column > bestWidth && split {
					e.writeIndent()
					e.whitespace = false
					e.indention = false
				} else {
					e.column += end - start
					e.write(text[start:end])
				}
				start = end
			}
		} else if breaks {
			if !isBreakUnit(ch) {
				if text[start] == '\n' {
					e.writeLineBreak("")
				}
				e.writeBreaks(text[start:end])
				e.writeIndent()
				e.whitespace = false
				e.indention = false
				start = end
			}
		} else if ch == 0 || ch == ' ' || isBreakUnit(ch) {
			e.column += end - start
			e.write(text[start:end])
			start = end
		}
		if ch != 0 {
			spaces = ch == ' '
			breaks = isBreakUnit(ch)
		}
		end++
	}
}

func (e *emitter) writeSingleQuoted(text []uint16, split bool) {
	e.writeIndicator("'", true, false, false)
	spaces, breaks := false, false
	start, end := 0, 0
	for end <= len(text) {
		var ch uint16
		if end < len(text) {
			ch = text[end]
		}
		if spaces {
			if ch == 0 || ch != ' ' {
				if start+1 == end && e.column > bestWidth && split && start != 0 && end != len(text) {
					e.writeIndent()
				} else {
					e.column += end - start
					e.write(text[start:end])
				}
				start = end
			}
		} else if breaks {
			if ch == 0 || !isBreakUnit(ch) {
				if text[start] == '\n' {
					e.writeLineBreak("")
				}
				e.writeBreaks(text[start:end])
				e.writeIndent()
				start = end
			}
		} else if ch == 0 || ch == ' ' || ch == '\'' || isBreakUnit(ch) {
			if start < end {
				e.column += end - start
				e.write(text[start:end])
				start = end
			}
		}
		if ch == '\'' {
			e.column += 2
			e.buf.WriteString("''")
			start = end + 1
		}
		if ch != 0 {
			spaces = ch == ' '
			breaks = isBreakUnit(ch)
		}
		end++
	}
	e.writeIndicator("'", false, false, false)
}

var escapeReplacements = map[uint16]string{
	0: "0", 0x07: "a", 0x08: "b", 0x09: "t", '\n': "n", 0x0B: "v", 0x0C: "f", '\r': "r", 0x1B: "e",
	'"': "\"", '\\': "\\", 0x85: "N", 0xA0: "_", 0x2028: "L", 0x2029: "P",
}

func (e *emitter) writeDoubleQuoted(text []uint16, split bool) {
	e.writeIndicator("\"", true, false, false)
	start, end := 0, 0
	for end <= len(text) {
		hasCh := end < len(text)
		var ch uint16
		if hasCh {
			ch = text[end]
		}
		if !hasCh || ch == '"' || ch == '\\' || ch == 0x85 || ch == 0x2028 || ch == 0x2029 || ch == 0xFEFF || !(ch >= 0x20 && ch <= 0x7E) {
			if start < end {
				e.column += end - start
				e.write(text[start:end])
				start = end
			}
			if hasCh {
				var data string
				if r, ok := escapeReplacements[ch]; ok {
					data = "\\" + r
				} else {
					cp := rune(ch)
					pair := false
					if utf16.IsSurrogate(cp) && ch < 0xDC00 && end+1 < len(text) {
						if d := utf16.DecodeRune(cp, rune(text[end+1])); d != 0xFFFD {
							cp, pair = d, true
						}
					}
					switch {
					case isPrintableRune(cp) && !(cp >= 0xD800 && cp <= 0xDFFF):
						data = string(cp)
						if pair {
							end++
						}
					case ch <= 0xFF:
						data = fmt.Sprintf("\\x%02x", ch)
					case pair:
						end++
						data = fmt.Sprintf("\\U%08x", cp)
					default:
						data = fmt.Sprintf("\\u%04x", ch)
					}
				}
				e.column += utf16Len(data)
				e.writeString(data)
				start = end + 1
			}
		}
		if 0 < end && end < len(text)-1 && (ch == ' ' || start >= end) && e.column+(end-start) > bestWidth && split {
			var data []uint16
			if start >= end {
				data = []uint16{'\\'}
			} else {
				data = append(append([]uint16{}, text[start:end]...), '\\')
			}
			if start < end {
				start = end
			}
			e.column += len(data)
			e.write(data)
			e.writeIndent()
			e.whitespace = false
			e.indention = false
			if text[start] == ' ' {
				e.column++
				e.buf.WriteByte('\\')
			}
		}
		end++
	}
	e.writeIndicator("\"", false, false, false)
}

func determineBlockHints(text []uint16) string {
	var hints string
	if isBreakUnit(text[0]) || text[0] == ' ' {
		hints += fmt.Sprint(bestIndent)
	}
	last := text[len(text)-1]
	if !isBreakUnit(last) {
		hints += "-"
	} else if len(text) == 1 || isBreakUnit(text[len(text)-2]) {
		hints += "+"
	}
	return hints
}

func (e *emitter) writeLiteral(text []uint16) {
	hints := determineBlockHints(text)
	e.writeIndicator("|"+hints, true, false, false)
	e.writeLineBreak("")
	breaks := true
	start, end := 0, 0
	for end <= len(text) {
		var ch uint16
		hasCh := end < len(text)
		if hasCh {
			ch = text[end]
		}
		if breaks {
			if !hasCh || !isBreakUnit(ch) {
				e.writeBreaks(text[start:end])
				if hasCh {
					e.writeIndent()
				}
				start = end
			}
		} else if !hasCh || isBreakUnit(ch) {
			e.write(text[start:end])
			if !hasCh {
				e.writeLineBreak("")
			}
			start = end
		}
		if hasCh {
			breaks = isBreakUnit(ch)
		}
		end++
	}
}
