package archtest

import (
	"go/scanner"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// notebookPattern is one kind of text that belongs in git history, not in
// the product's docs or comments. ok, when set, accepts a match in its line
// (legitimate product language that the pattern also catches).
type notebookPattern struct {
	what string
	re   *regexp.Regexp
	docs bool // checked in README.md and docs/ only, not in code comments
	ok   func(line string, match []int) bool
}

// followedBy reports whether the text right after the match starts with one
// of the words.
func followedBy(words ...string) func(string, []int) bool {
	return func(line string, m []int) bool {
		rest := strings.TrimLeft(line[m[1]:], " ")
		for _, w := range words {
			if strings.HasPrefix(rest, w) && (len(rest) == len(w) || !isWordByte(rest[len(w)])) {
				return true
			}
		}
		return false
	}
}

// precededBy reports whether one of the words ends within a few characters
// before the match.
func precededBy(words ...string) func(string, []int) bool {
	return func(line string, m []int) bool {
		before := line[max(0, m[0]-24):m[0]]
		for _, w := range words {
			if strings.Contains(before, w) {
				return true
			}
		}
		return false
	}
}

func isWordByte(b byte) bool {
	return b == '_' || b >= '0' && b <= '9' || b >= 'a' && b <= 'z' || b >= 'A' && b <= 'Z'
}

var notebookPatterns = []notebookPattern{
	{what: "a numbered stop of the development log", re: regexp.MustCompile(`(?i)\bstops? \d+\b`),
		ok: followedBy("s", "ms", "min", "minutes", "seconds", "h")},
	{what: "an issue number of ejob's tracker", re: regexp.MustCompile(`(?i)\bissues? #?\d+\b`),
		ok: precededBy("Go ", "ElasticJob", "go-zookeeper", "upstream", "Curator", "ZOOKEEPER", "golang")},
	{what: "a word about who worked on it", re: regexp.MustCompile(`(?i)\bhelper'?s?'? (branch|session|work)\b|\bother helpers\b`)},
	{what: "a tree or round of the development", re: regexp.MustCompile(`(?i)\bmerged[- ]tree\b|\bfinal tree\b|\b(this|at|each) stop\b|\b(second|third|fourth|fifth) round\b`),
		ok: followedBy("trip", "trips")},
	{what: "an incident name of the chaos log", re: regexp.MustCompile(`\bchaos V\d+\b|\bV[1-9]\d?\b`),
		ok: precededBy("Kerberos ")},
	{what: "a section of a spec outside the repository", re: regexp.MustCompile(`(?i)\bspec\b[^.\n]{0,20}§|§\s*\d`)},
	{what: "a path on a development machine", re: regexp.MustCompile(`(^|[\s("'\x60])/(work|root)/`)},
	{what: "a branch of the development", re: regexp.MustCompile(`(?i)\bbranch(es)?\b`), docs: true,
		ok: followedBy("on", "with")},
}

var generatedHeader = regexp.MustCompile(`(?m)^// Code generated .* DO NOT EDIT\.$`)

// TestNoNotebookWords: README.md, docs/ and every comment of the
// non-generated Go code speak about the product in the present tense. They
// name no numbered stop or issue of the development, no tree, round or
// branch it was measured on, no incident of the chaos suite's log (its
// regression tests say what they pin), no section of a spec that is not in
// the repository, and no path of a development machine: a reader of a
// checkout has none of these, and history lives in git.
func TestNoNotebookWords(t *testing.T) {
	root := filepath.Join("..", "..")
	check := func(rel string, line int, text string, docs bool) {
		for _, p := range notebookPatterns {
			if p.docs && !docs {
				continue
			}
			for _, m := range p.re.FindAllStringIndex(text, -1) {
				if p.ok != nil && p.ok(text, m) {
					continue
				}
				t.Errorf("%s:%d: %s (%q): %s", rel, line, p.what, text[m[0]:m[1]], strings.TrimSpace(text))
			}
		}
	}
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		rel = filepath.ToSlash(rel)
		name := d.Name()
		if d.IsDir() {
			if rel != "." && (strings.HasPrefix(name, ".") || name == "testdata" || name == "node_modules" || name == "bin") {
				return filepath.SkipDir
			}
			return nil
		}
		switch {
		case rel == "README.md" || strings.HasPrefix(rel, "docs/") && strings.HasSuffix(name, ".md") ||
			strings.HasPrefix(rel, "examples/") && name == "README.md":
			data, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			for i, line := range strings.Split(string(data), "\n") {
				check(rel, i+1, line, true)
			}
		case strings.HasSuffix(name, ".go"):
			data, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			if generatedHeader.Match(data) {
				return nil
			}
			fset := token.NewFileSet()
			file := fset.AddFile(rel, -1, len(data))
			var s scanner.Scanner
			s.Init(file, data, nil, scanner.ScanComments)
			for {
				pos, tok, lit := s.Scan()
				if tok == token.EOF {
					break
				}
				if tok != token.COMMENT {
					continue
				}
				first := fset.Position(pos).Line
				for i, line := range strings.Split(lit, "\n") {
					check(rel, first+i, line, false)
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
