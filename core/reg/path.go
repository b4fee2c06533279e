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
	bad := func(why string) error {
		return fmt.Errorf("path %q: %s: %w", path, why, ErrInvalidArgument)
	}
	if path == "" || path[0] != '/' {
		return bad("must start with /")
	}
	if path == "/" {
		return nil
	}
	body := path[1:]
	if strings.HasSuffix(body, "/") {
		if !sequential {
			return bad("trailing /")
		}
		body = strings.TrimSuffix(body, "/")
	}
	for el := range strings.SplitSeq(body, "/") {
		switch el {
		case "":
			return bad("empty element")
		case ".", "..":
			return bad("relative element")
		}
	}
	for _, r := range path {
		switch {
		case r == 0, r < 0x20, r >= 0x7f && r <= 0x9f, r >= 0xf000 && r <= 0xf8ff, r >= 0xfff0 && r < 0xffff:
			return bad("invalid character")
		}
	}
	return nil
}
