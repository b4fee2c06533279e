package hostconfig

import (
	"fmt"
	"strings"
)

// expand replaces the placeholders in s, as Spring resolves them, with the
// environment only:
//
//   - ${NAME} is the value of NAME; unset is an error wrapping ErrEnvNotSet
//     (set but empty is fine);
//   - ${NAME:default} is the default when NAME is unset; the default may
//     itself hold placeholders (${A:${B:x}});
//   - $${ is a literal ${; any other $ is literal;
//   - a variable's value is used as is, never expanded again.
func expand(s string, lookup func(string) (string, bool)) (string, error) {
	if !strings.Contains(s, "${") {
		return s, nil
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		switch {
		case strings.HasPrefix(s[i:], "$${"):
			b.WriteString("${")
			i += 3
		case strings.HasPrefix(s[i:], "${"):
			end := closing(s, i+2)
			if end < 0 {
				return "", fmt.Errorf("unterminated placeholder %q (write $${ for a literal ${)", s[i:])
			}
			name, def, hasDef := strings.Cut(s[i+2:end], ":")
			switch {
			case name == "":
				return "", fmt.Errorf("placeholder %q has no variable name", s[i:end+1])
			case strings.ContainsAny(name, "${}"):
				return "", fmt.Errorf("placeholder %q: invalid variable name %q", s[i:end+1], name)
			}
			if v, ok := lookup(name); ok {
				b.WriteString(v)
			} else if hasDef {
				v, err := expand(def, lookup)
				if err != nil {
					return "", err
				}
				b.WriteString(v)
			} else {
				return "", &unsetError{name: name}
			}
			i = end + 1
		default:
			b.WriteByte(s[i])
			i++
		}
	}
	return b.String(), nil
}

// closing returns the index of the "}" that closes a placeholder whose
// body starts at from, skipping nested placeholders, or -1.
func closing(s string, from int) int {
	depth := 0
	for i := from; i < len(s); i++ {
		switch {
		case strings.HasPrefix(s[i:], "$${"):
			i += 2
		case strings.HasPrefix(s[i:], "${"):
			depth++
			i++
		case s[i] == '}':
			if depth == 0 {
				return i
			}
			depth--
		}
	}
	return -1
}

// unsetError is a placeholder without default whose variable is unset.
type unsetError struct{ name string }

func (e *unsetError) Error() string {
	return fmt.Sprintf("environment variable %s is not set (write ${%s:default} to give a default)", e.name, e.name)
}

// Is makes errors.Is(err, ErrEnvNotSet) true.
func (e *unsetError) Is(target error) bool { return target == ErrEnvNotSet }
