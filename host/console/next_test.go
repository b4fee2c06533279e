package console

import "testing"

// TestSafeNext: a redirect target after login stays on this origin. A
// browser strips tabs and line breaks and reads "\" as "/", so each of
// these would reach another host if it were passed on.
func TestSafeNext(t *testing.T) {
	t.Parallel()
	for next, want := range map[string]string{
		"/jobs": "/jobs", "/jobs/j1?tab=items#x": "/jobs/j1?tab=items#x", "/servers/": "/servers/", "/": "/",
		"": "/", "jobs": "/", "//evil": "/", "/\\evil": "/", "/\t/evil": "/", "/\n/evil": "/", "/\r/evil": "/",
		"\t//evil": "/", "/ /evil": "/", "/\u00a0/evil": "/", "/\u2028/evil": "/", "/\u200b/evil": "/", "/\x00/evil": "/",
		"/%5c/evil": "/", "/%09/evil": "/", "/%2F/evil": "/", "/%2f%2fevil": "/", "/..//evil": "/", "/./evil": "/",
		"/a/../evil": "/", "https://evil": "/", "javascript:alert(1)": "/", "/login?next=//evil": "/", "/\xff/evil": "/",
	} {
		if got := safeNext(next); got != want {
			t.Errorf("safeNext(%q) = %q, want %q", next, got, want)
		}
	}
}
