package reg_test

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/ejob-io/ejob/core/reg"
)

// zkPathCheck is ZooKeeper's path rules written plainly (PathUtils
// .validatePath: elements, then every character), the reference the
// one-pass ValidatePath must agree with.
func zkPathCheck(path string, sequential bool) error {
	bad := func(why string) error { return fmt.Errorf("path %q: %s: %w", path, why, reg.ErrInvalidArgument) }
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
	for _, el := range strings.Split(body, "/") {
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

// TestValidatePathAgreesWithZooKeeper: ValidatePath gives the reference's
// answer and error text for hand-picked paths and for random ones built
// from slashes, dots, letters, control bytes and non-ASCII runes
// (invalid UTF-8 included), sequential or not.
func TestValidatePathAgreesWithZooKeeper(t *testing.T) {
	t.Parallel()
	paths := []string{"", "/", "//", "///", "/a", "/a/", "/a//", "/a//b", "/.", "/..", "/a/.", "/a/..", "/.a", "/..a",
		"/a/\x00", "/a\x01", "/a\x1f", "/a\x7f", "/é", "/é/\x01", "/\u0085", "/\uf000", "/\ufffd", "/\xff", "/a/\u00e9\x02",
		"/job/sharding/0/running", "/job/instances/10.0.0.1@-@1", "/seq-", "/seq/"}
	parts := []string{"/", "/", "/", ".", "..", "a", "job", "0", "\x00", "\x01", "\x7f", "é", "\u0090", "\uf8ff", "\ufffe", "\xc3", "-"}
	rng := rand.New(rand.NewPCG(1, 2))
	for range 20000 {
		var b strings.Builder
		if rng.IntN(8) > 0 {
			b.WriteByte('/')
		}
		for range rng.IntN(7) {
			b.WriteString(parts[rng.IntN(len(parts))])
		}
		paths = append(paths, b.String())
	}
	for _, p := range paths {
		for _, seq := range []bool{false, true} {
			got, want := reg.ValidatePath(p, seq), zkPathCheck(p, seq)
			if fmt.Sprint(got) != fmt.Sprint(want) {
				t.Fatalf("ValidatePath(%q, %v) = %v, want %v", p, seq, got, want)
			}
		}
	}
}

// BenchmarkValidatePath: a trigger's typical path.
func BenchmarkValidatePath(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		if err := reg.ValidatePath("/every-second-42/sharding/0/running", false); err != nil {
			b.Fatal(err)
		}
	}
}
