package console_test

import (
	"io/fs"
	"regexp"
	"strings"
	"testing"

	"github.com/ejob-io/ejob/host/console"
)

// TestEveryStringKeyIsInEnglish: every t('group.key') of the console's
// modules (a literal key; computed keys are not checked) is in
// i18n/en.js, and en.js holds no key twice.
func TestEveryStringKeyIsInEnglish(t *testing.T) {
	assets := console.Assets()
	en, err := fs.ReadFile(assets, "i18n/en.js")
	if err != nil {
		t.Fatal(err)
	}
	keys := map[string]bool{}
	for _, m := range regexp.MustCompile(`(?m)^\s*'([\w.]+)':`).FindAllStringSubmatch(string(en), -1) {
		if keys[m[1]] {
			t.Errorf("en.js: key %s twice", m[1])
		}
		keys[m[1]] = true
	}
	if len(keys) < 50 {
		t.Fatalf("en.js: %d keys read: the pattern no longer matches the file", len(keys))
	}
	use := regexp.MustCompile(`\bt\('([\w.]+)'\s*[,)]`)
	used := 0
	err = fs.WalkDir(assets, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(p, ".js") || strings.HasPrefix(p, "vendor/") {
			return err
		}
		src, err := fs.ReadFile(assets, p)
		if err != nil {
			return err
		}
		for _, m := range use.FindAllStringSubmatch(string(src), -1) {
			used++
			if !keys[m[1]] {
				t.Errorf("%s: t(%q) is not in i18n/en.js", p, m[1])
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if used < 50 {
		t.Fatalf("%d uses of t found: the pattern no longer matches the modules", used)
	}
}
