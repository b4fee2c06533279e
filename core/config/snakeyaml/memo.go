package snakeyaml

import "sync"

// Memo remembers how Dump wrote the entries of a root mapping whose key
// and value are scalars, so that documents that share most of their
// entries (the configs of many jobs: all but the name, as a rule) have
// each entry analysed and written once. What an entry writes depends only
// on its key and value and on where the previous one left the output (the
// column, and whether it ended in whitespace or an indentation): that is
// the memo's key, and the column and flags it ends with are kept with the
// text. It is safe for concurrent use; the zero value is ready.
type Memo struct {
	mu      sync.Mutex
	written map[memoKey]memoWritten
}

// maxMemo bounds a Memo: past it, entries are written anew.
const maxMemo = 4096

// Dump is the package's Dump, with the root mapping's scalar entries
// written as m remembers them, and remembered the first time; except the
// entry whose key is unique, whose value differs in every document (a
// job's name), which is never asked for again.
func (m *Memo) Dump(root *Node, unique string) ([]byte, error) { return dump(root, m, unique) }

// emitState is where an entry of the root mapping starts or ends: the
// rest of the emitter's state is the same at every entry (indent 0, the
// root's indents, no flow).
type emitState struct {
	column                int
	whitespace, indention bool
}

// scalar is what of a scalar node its writing depends on.
type scalar struct {
	value, tag string
	style      Style
}

type memoKey struct {
	start      emitState
	key, value scalar
}

type memoWritten struct {
	out string
	end emitState
}

// memoable reports whether n's writing is a function of its scalar.
func memoable(n *Node) bool { return n.Kind == ScalarNode && n.Anchor == "" }

func scalarOf(n *Node) scalar { return scalar{value: n.Value, tag: n.tag(), style: n.Style} }

func (e *emitter) state() emitState {
	return emitState{column: e.column, whitespace: e.whitespace, indention: e.indention}
}

// Len returns how many entries m remembers.
func (m *Memo) Len() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.written)
}

func (m *Memo) get(k memoKey) (memoWritten, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	w, ok := m.written[k]
	return w, ok
}

func (m *Memo) put(k memoKey, w memoWritten) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.written == nil {
		m.written = make(map[memoKey]memoWritten)
	}
	if len(m.written) < maxMemo {
		m.written[k] = w
	}
}
