package namespaces

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// ErrNoDataSourceDir: an SQLite data source is refused because no
// directory for SQLite files is configured.
var ErrNoDataSourceDir = errors.New("SQLite data sources are off: no directory for their files is configured")

// SQLiteFile returns the file an SQLite data source names (its URL with
// jdbc:sqlite: and file: taken off, parameters included), and false when d
// is not an SQLite data source (neither its driver nor its URL says
// sqlite).
func (d DataSource) SQLiteFile() (string, bool) {
	drv := strings.ToLower(strings.TrimSpace(d.Driver))
	url := strings.TrimSpace(d.URL)
	lower := strings.ToLower(url)
	if drv != "sqlite" && drv != "sqlite3" && !strings.HasPrefix(lower, "jdbc:sqlite:") {
		return "", false
	}
	if strings.HasPrefix(lower, "jdbc:sqlite:") {
		url = url[len("jdbc:sqlite:"):]
	}
	if strings.HasPrefix(strings.ToLower(url), "file:") {
		url = url[len("file:"):]
	}
	return url, true
}

// Confine returns d with its SQLite file (SQLiteFile) resolved inside dir:
// a relative path is taken from dir; the path, its symbolic links
// followed, must lie under dir's, in a directory that exists. The URL of
// the result is jdbc:sqlite: and that resolved path, so what opens it
// opens the file checked. A data source of another driver is returned as
// it is.
//
// Refused (ErrInvalid, nothing created): any SQLite data source when dir
// is "" (ErrNoDataSourceDir too); a path outside dir, through ".." or a
// symbolic link; a path with URL parameters, a fragment or
// percent-encoding ('?', '#', '%': SQLite's URI parameters and escapes
// could name another file or mode); ":memory:" and an empty path.
func (d DataSource) Confine(dir string) (DataSource, error) {
	file, ok := d.SQLiteFile()
	if !ok {
		return d, nil
	}
	bad := func(format string, args ...any) (DataSource, error) {
		return d, fmt.Errorf("%w: data source %q: SQLite file %q: %s", ErrInvalid, d.Name, file, fmt.Sprintf(format, args...))
	}
	if dir == "" {
		return d, fmt.Errorf("%w: data source %q: %w (start ejob serve with --data-source-dir DIR to allow SQLite files under DIR)",
			ErrInvalid, d.Name, ErrNoDataSourceDir)
	}
	switch {
	case file == "" || file == ":memory:":
		return bad("want the path of a file")
	case strings.ContainsAny(file, "?#%"):
		return bad("URL parameters, fragments and percent-encoding are not accepted here ('?', '#', '%%')")
	case strings.ContainsFunc(file, func(r rune) bool { return r < 0x20 || r == 0x7f }):
		return bad("has a control character")
	}
	root, err := filepath.Abs(dir)
	if err == nil {
		root, err = filepath.EvalSymlinks(root)
	}
	if err != nil {
		return d, fmt.Errorf("namespaces: data-source directory %s: %w", dir, err)
	}
	path := file
	if !filepath.IsAbs(path) {
		path = filepath.Join(root, path)
	}
	path = filepath.Clean(path)
	// The directory the file goes in, its links followed.
	parent, err := filepath.EvalSymlinks(filepath.Dir(path))
	if err != nil {
		return bad("its directory cannot be used: %v", err)
	}
	target := filepath.Join(parent, filepath.Base(path))
	if st, err := os.Lstat(target); err == nil && st.Mode()&fs.ModeSymlink != 0 {
		if target, err = filepath.EvalSymlinks(target); err != nil {
			return bad("a symbolic link that leads nowhere: %v", err)
		}
	} else if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return bad("%v", err)
	}
	if rel, err := filepath.Rel(root, target); err != nil || rel == "." || !filepath.IsLocal(rel) {
		return bad("not under the data-source directory %s", root)
	}
	if st, err := os.Stat(target); err == nil && !st.Mode().IsRegular() {
		return bad("not a regular file")
	}
	d.URL = "jdbc:sqlite:" + target
	return d, nil
}
