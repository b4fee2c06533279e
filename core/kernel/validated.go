package kernel

import (
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/ejob-io/ejob/spi"
)

// ValidatedProps remembers which (kind, type, props) a plugin accepted, so
// that jobs sharing a type and props are checked once (a host with 1,000
// jobs of one type and the same props would otherwise make 2,000 Validate
// calls to its plugin process before registering any). Validation depends on
// the props alone (spi.JobExecutor.Validate, spi.ErrorHandler.Validate);
// a refusal is never remembered, so each job gets its own message. Safe
// for concurrent use; the zero value is ready.
type ValidatedProps struct {
	mu sync.Mutex
	ok map[string]struct{}
}

// Check calls validate unless the same kind, type and props passed before,
// and remembers that they pass when it returns nil.
func (v *ValidatedProps) Check(kind spi.Kind, typ string, props map[string]string, validate func() error) error {
	key := propsKey(kind, typ, props)
	v.mu.Lock()
	_, done := v.ok[key]
	v.mu.Unlock()
	if done {
		return nil
	}
	if err := validate(); err != nil {
		return err
	}
	v.mu.Lock()
	if v.ok == nil {
		v.ok = map[string]struct{}{}
	}
	v.ok[key] = struct{}{}
	v.mu.Unlock()
	return nil
}

// propsKey is kind, normalized type and props (sorted) as one string.
func propsKey(kind spi.Kind, typ string, props map[string]string) string {
	keys := make([]string, 0, len(props))
	for k := range props {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var b strings.Builder
	b.WriteString(string(kind))
	b.WriteByte(0)
	b.WriteString(spi.NormalizeType(typ))
	for _, k := range keys {
		// Lengths first: no key or value can imitate a separator.
		b.WriteByte(0)
		b.WriteString(strconv.Itoa(len(k)))
		b.WriteByte(':')
		b.WriteString(k)
		b.WriteString(strconv.Itoa(len(props[k])))
		b.WriteByte(':')
		b.WriteString(props[k])
	}
	return b.String()
}
