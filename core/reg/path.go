package reg

import (
	"fmt"
	"strings"
)

// Join joins path elements into a namespace-relative path: Join("/job",
// "leader", "election") is "/job/leader/election". Empty elements are
// skipped; the result always starts with "/".
func Join(elem ...string) string {
	n := 0
	for _, e := range elem {
		if e = strings.Trim(e, "/"); e != "" {
			n += 1 + len(e)
		}
	}
	if n == 0 {
		return "/"
	}
	var b strings.Builder
	b.Grow(n) // one allocation: paths are built on every trigger
	for _, e := range elem {
		if e = strings.Trim(e, "/"); e != "" {
			b.WriteByte('/')
			b.WriteString(e)
		}
	}
	return b.String()
}

// Parent returns the parent of path ("/" for a top-level node and for "/").
func Parent(path string) string {
	i := strings.LastIndexByte(path, '/')
	if i <= 0 {
		return "/"
	}
	return path[:i]
}

// Base returns the last element of path ("" for "/").
func Base(path string) string {
	return path[strings.LastIndexByte(path, '/')+1:]
}

// ValidatePath checks a namespace-relative path the way ZooKeeper does: it
// starts with "/", has no empty, "." or ".." element, no trailing "/"
// (unless sequential, whose prefix may end with "/"), and no control or NUL
// characters. Errors wrap ErrInvalidArgument.
func ValidatePath(path string, sequential bool) error {
	if path == "" || path[0] != '/' {
		return badPath(path, "must start with /")
	}
	if path == "/" {
		return nil
	}
	end := len(path) // the elements are path[1:end]
	if path[end-1] == '/' {
		if !sequential {
			return badPath(path, "trailing /")
		}
		end--
	}
	// One pass over the bytes (every registry request checks its paths):
	// the elements, and ASCII control characters; the rest of a path
	// with a byte past ASCII is checked rune by rune.
	from := 1
	for i := 1; i <= end; i++ {
		if i < end && path[i] != '/' {
			continue
		}
		switch path[from:i] {
		case "":
			return badPath(path, "empty element")
		case ".", "..":
			return badPath(path, "relative element")
		}
		from = i + 1
	}
	for i := 0; i < len(path); i++ {
		switch b := path[i]; {
		case b < 0x20, b == 0x7f:
			return badPath(path, "invalid character")
		case b >= 0x80:
			for _, r := range path[i:] {
				switch {
				case r < 0x20, r >= 0x7f && r <= 0x9f, r >= 0xf000 && r <= 0xf8ff, r >= 0xfff0 && r < 0xffff:
					return badPath(path, "invalid character")
				}
			}
			return nil
		}
	}
	return nil
}

// badPath is ValidatePath's error.
func badPath(path, why string) error {
	return fmt.Errorf("path %q: %s: %w", path, why, ErrInvalidArgument)
}
