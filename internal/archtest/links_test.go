package archtest

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestDocLinksStayInTheRepository: every relative link of README.md and
// docs/*.md names a file or directory of the repository (a reader of a
// checkout has nothing else), and no page points outside it.
func TestDocLinksStayInTheRepository(t *testing.T) {
	root := filepath.Join("..", "..")
	pages, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	pages = append(pages, filepath.Join(root, "README.md"))
	absRoot, err := filepath.Abs(root)
	if err != nil {
		t.Fatal(err)
	}
	link := regexp.MustCompile(`\]\(([^)\s]+)\)`)
	// Code is not prose: fenced blocks and inline code hold no links.
	code := regexp.MustCompile("(?s)```.*?```|`[^`\n]*`")
	for _, page := range pages {
		data, err := os.ReadFile(page)
		if err != nil {
			t.Fatal(err)
		}
		name, _ := filepath.Rel(root, page)
		if strings.Contains(string(data), "../shared") {
			t.Errorf("%s refers to ../shared, which is not part of the repository", name)
		}
		for _, m := range link.FindAllStringSubmatch(code.ReplaceAllString(string(data), ""), -1) {
			target := m[1]
			if strings.Contains(target, "://") || strings.HasPrefix(target, "#") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			target, _, _ = strings.Cut(target, "#")
			abs, err := filepath.Abs(filepath.Join(filepath.Dir(page), target))
			if err != nil {
				t.Fatal(err)
			}
			if rel, err := filepath.Rel(absRoot, abs); err != nil || strings.HasPrefix(rel, "..") {
				t.Errorf("%s links to %s, outside the repository", name, m[1])
				continue
			}
			if _, err := os.Stat(abs); err != nil {
				t.Errorf("%s links to %s, which does not exist", name, m[1])
			}
		}
	}
}

// TestDocsCiteNoSpec: user docs (README.md, docs/*.md, examples' READMEs)
// and the godoc of the packages plugin authors import (spi, sdk) cite no
// numbered section of a spec: the ElasticJob specs ejob was built from are
// not part of the repository, so a reader cannot follow such a reference.
func TestDocsCiteNoSpec(t *testing.T) {
	root := filepath.Join("..", "..")
	var files []string
	for _, glob := range []string{"README.md", "docs/*.md", "examples/*/README.md", "spi/*.go", "sdk/*.go"} {
		m, err := filepath.Glob(filepath.Join(root, glob))
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, m...)
	}
	cite := regexp.MustCompile(`(?i)spec\b[^.\n]{0,20}§|§\s*\d`)
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for i, line := range strings.Split(string(data), "\n") {
			if cite.MatchString(line) {
				name, _ := filepath.Rel(root, f)
				t.Errorf("%s:%d cites a spec readers do not have: %s", name, i+1, strings.TrimSpace(line))
			}
		}
	}
}
