package namespaces_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ejob-io/ejob/host/namespaces"
)

// TestConfine: an SQLite data source sent over HTTP (POST
// /api/data-source/add, then connect) created its file at any path it
// named. Its file must resolve, links followed, under the configured
// directory; anything else is refused and no file is made.
func TestConfine(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	dir := filepath.Join(root, "data")
	outside := filepath.Join(root, "outside")
	for _, d := range []string{dir, outside, filepath.Join(dir, "sub")} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "sub", "in.db"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	for link, target := range map[string]string{"out": outside, "out.db": filepath.Join(outside, "x.db"), "dangling.db": filepath.Join(root, "nowhere", "x.db"),
		"in.db": filepath.Join(dir, "sub", "in.db")} {
		if err := os.Symlink(target, filepath.Join(dir, link)); err != nil {
			t.Fatal(err)
		}
	}
	ds := func(driver, url string) namespaces.DataSource {
		return namespaces.DataSource{Name: "h", Driver: driver, URL: url}
	}
	for _, tc := range []struct {
		d    namespaces.DataSource
		want string // the confined URL; "" when refused
	}{
		{ds("sqlite", "jdbc:sqlite:"+filepath.Join(dir, "a.db")), "jdbc:sqlite:" + filepath.Join(dir, "a.db")},
		{ds("sqlite", "a.db"), "jdbc:sqlite:" + filepath.Join(dir, "a.db")},
		{ds("SQLite3", "file:sub/b.db"), "jdbc:sqlite:" + filepath.Join(dir, "sub", "b.db")},
		{ds("", "JDBC:SQLITE:sub/../c.db"), "jdbc:sqlite:" + filepath.Join(dir, "c.db")},
		{ds("sqlite", "in.db"), "jdbc:sqlite:" + filepath.Join(dir, "sub", "in.db")},
		{ds("postgres", "postgres://db:5432/x"), "postgres://db:5432/x"},

		{ds("sqlite", "jdbc:sqlite:/any/path.db"), ""},
		{ds("sqlite", "jdbc:sqlite:"+filepath.Join(outside, "x.db")), ""},
		{ds("sqlite", "../outside/x.db"), ""},
		{ds("sqlite", "out/x.db"), ""},
		{ds("sqlite", "out.db"), ""},
		{ds("sqlite", "dangling.db"), ""},
		{ds("sqlite", "nodir/x.db"), ""},
		{ds("sqlite", "sub"), ""},
		{ds("sqlite", "."), ""},
		{ds("sqlite", dir), ""},
		{ds("sqlite", "a.db?mode=memory"), ""},
		{ds("sqlite", "a.db?_pragma=temp_store_directory('/tmp')"), ""},
		{ds("sqlite", "%2e%2e/outside/x.db"), ""},
		{ds("sqlite", "a.db#x"), ""},
		{ds("sqlite", "a\x00.db"), ""},
		{ds("sqlite", ":memory:"), ""},
		{ds("sqlite", "jdbc:sqlite:"), ""},
		{ds("postgres", "jdbc:sqlite:/any/path.db"), ""},
	} {
		got, err := tc.d.Confine(dir)
		switch {
		case tc.want == "" && !errors.Is(err, namespaces.ErrInvalid):
			t.Errorf("Confine(%q, %q) = %q, %v; want ErrInvalid", tc.d.Driver, tc.d.URL, got.URL, err)
		case tc.want != "" && (err != nil || got.URL != tc.want):
			t.Errorf("Confine(%q, %q) = %q, %v; want %q", tc.d.Driver, tc.d.URL, got.URL, err, tc.want)
		case err != nil && !strings.Contains(err.Error(), `data source "h"`):
			t.Errorf("Confine(%q): %v does not name the data source", tc.d.URL, err)
		}
	}
	// Without a directory, every SQLite data source is refused.
	if _, err := ds("sqlite", filepath.Join(dir, "a.db")).Confine(""); !errors.Is(err, namespaces.ErrNoDataSourceDir) || !errors.Is(err, namespaces.ErrInvalid) {
		t.Errorf("without a directory: %v, want ErrNoDataSourceDir", err)
	}
	if d, err := ds("mysql", "u:p@tcp(db:3306)/x").Confine(""); err != nil || d.URL != "u:p@tcp(db:3306)/x" {
		t.Errorf("mysql without a directory: %v %v", d, err)
	}
	// Nothing was created by checking.
	for _, p := range []string{filepath.Join(outside, "x.db"), filepath.Join(dir, "a.db"), "/any/path.db"} {
		if _, err := os.Lstat(p); err == nil {
			t.Errorf("%s exists", p)
		}
	}
}
