package kernel_test

import (
	"errors"
	"testing"

	"github.com/ejob-io/ejob/core/kernel"
	"github.com/ejob-io/ejob/spi"
)

// TestValidatedPropsOncePerDistinctProps: a type's props are validated once
// however many jobs share them; other props, another type or another kind
// are validated again, and a refusal is never remembered.
func TestValidatedPropsOncePerDistinctProps(t *testing.T) {
	t.Parallel()
	var v kernel.ValidatedProps
	calls := 0
	check := func(kind spi.Kind, typ string, props map[string]string, err error) error {
		return v.Check(kind, typ, props, func() error { calls++; return err })
	}
	p := map[string]string{"script.command.line": "/bin/true", "a": "b"}
	for range 3 {
		if err := check(spi.KindJobType, "SCRIPT", map[string]string{"a": "b", "script.command.line": "/bin/true"}, nil); err != nil {
			t.Fatal(err)
		}
	}
	if calls != 1 {
		t.Fatalf("%d validations of the same props, want 1", calls)
	}
	for _, c := range []struct {
		kind  spi.Kind
		typ   string
		props map[string]string
	}{
		{spi.KindJobType, "SCRIPT", map[string]string{"script.command.line": "/bin/false", "a": "b"}},
		{spi.KindJobType, "SCRIPT", map[string]string{"a": "b"}},
		{spi.KindJobType, "SCRIPT", nil},
		{spi.KindJobType, "HTTP", p},
		{spi.KindErrorHandler, "SCRIPT", p},
		// No key or value imitates a separator.
		{spi.KindJobType, "SCRIPT", map[string]string{"a": "b\x001", "script.command.line": "/bin/true"}},
		{spi.KindJobType, "SCRIPT", map[string]string{"a=b": "", "script.command.line": "/bin/true"}},
	} {
		before := calls
		_ = check(c.kind, c.typ, c.props, nil)
		if calls != before+1 {
			t.Errorf("%s %s %v was taken for props validated before", c.kind, c.typ, c.props)
		}
	}
	refused := errors.New("refused")
	bad := map[string]string{"x": "y"}
	for range 2 {
		if err := check(spi.KindJobType, "SCRIPT", bad, refused); !errors.Is(err, refused) {
			t.Fatalf("refusal = %v", err)
		}
	}
	before := calls
	if err := check(spi.KindJobType, "SCRIPT", bad, nil); err != nil || calls != before+1 {
		t.Fatalf("a refusal was remembered: %v, %d calls", err, calls-before)
	}
}
