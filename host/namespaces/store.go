// Package namespaces keeps the registry centers and trace data sources an
// operator adds in the console (upstream ElasticJob-UI's Configurations.xml
// of RegistryCenterConfiguration entries) in one JSON file under the user's
// configuration directory (os.UserConfigDir()/ejob/namespaces.json). The file
// holds secrets (a ZooKeeper digest, a database password): it is written with
// mode 0600, atomically (a temporary file renamed over it), and a file that
// others may read is refused, never used. Secrets leave the package masked
// (Public) and a masked value sent back keeps the stored one (Merge).
package namespaces

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"github.com/ejob-io/ejob/spi/redact"
)

// FileName is the store's file in its directory.
const FileName = "namespaces.json"

// Sentinels callers branch on.
var (
	// ErrInsecure: the file (or its directory) may be read or written by
	// others than its owner.
	ErrInsecure = errors.New("readable or writable by others")
	// ErrInvalid: an entry is incomplete or its name is taken.
	ErrInvalid = errors.New("invalid")
	// ErrNotFound: no entry of that name.
	ErrNotFound = errors.New("not found")
)

// Registry is a registry center (upstream's RegistryCenterConfig; the
// JSON names are its wire names).
type Registry struct {
	Name string `json:"name"`
	// Servers is the ZooKeeper connect string (host:port,...).
	Servers   string `json:"zkAddressList"`
	Namespace string `json:"namespace"`
	// Digest is user:password of ZooKeeper's digest scheme; a secret.
	Digest string `json:"digest,omitempty"`
}

// DataSource is an event-trace database (upstream's
// EventTraceDataSourceConfig): the RDB tracing sink's settings.
type DataSource struct {
	Name string `json:"name"`
	// Driver is sqlite, postgres or mysql.
	Driver string `json:"driver"`
	// URL is the DSN: a JDBC URL or the Go driver's DSN.
	URL      string `json:"url"`
	Username string `json:"username,omitempty"`
	// Password is a secret.
	Password string `json:"password,omitempty"`
}

// File is the store's content.
type File struct {
	Registries  []Registry   `json:"registryCenters"`
	DataSources []DataSource `json:"dataSources"`
}

// Store is the file at Path. Its methods are safe for concurrent use by
// one process.
type Store struct {
	path string
	mu   sync.Mutex
}

// DefaultPath is os.UserConfigDir()/ejob/namespaces.json.
func DefaultPath() (string, error) {
	dir, err := os.UserConfigDir()
	if err != nil {
		return "", fmt.Errorf("namespaces: %w", err)
	}
	return filepath.Join(dir, "ejob", FileName), nil
}

// Open returns the store at path (the file need not exist yet).
func Open(path string) *Store { return &Store{path: path} }

// Path is the store's file.
func (s *Store) Path() string { return s.path }

// Load reads the file: an empty File when it does not exist, ErrInsecure
// when its mode lets others read or write it.
func (s *Store) Load() (File, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.load()
}

func (s *Store) load() (File, error) {
	var f File
	fh, err := os.Open(s.path)
	if errors.Is(err, fs.ErrNotExist) {
		return f, nil
	}
	if err != nil {
		return f, fmt.Errorf("namespaces: %w", err)
	}
	defer fh.Close()
	st, err := fh.Stat()
	if err != nil {
		return f, fmt.Errorf("namespaces: %w", err)
	}
	if perm := st.Mode().Perm(); perm&0o077 != 0 {
		return f, fmt.Errorf("namespaces: %s is %w (mode %#o): it holds secrets; run chmod 600 %s", s.path, ErrInsecure, perm, s.path)
	}
	if err := json.NewDecoder(fh).Decode(&f); err != nil {
		return f, fmt.Errorf("namespaces: %s: %w", s.path, err)
	}
	return f, nil
}

// Update loads the file, applies fn, checks the result and writes it
// atomically with mode 0600 (its directory created 0700). Nothing is
// written when fn or the check fails.
func (s *Store) Update(fn func(*File) error) (File, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	f, err := s.load()
	if err != nil {
		return f, err
	}
	if err := fn(&f); err != nil {
		return f, err
	}
	if err := f.check(); err != nil {
		return f, err
	}
	return f, s.write(f)
}

func (s *Store) write(f File) error {
	data, err := json.MarshalIndent(f, "", "  ")
	if err != nil {
		return fmt.Errorf("namespaces: %w", err)
	}
	dir := filepath.Dir(s.path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("namespaces: %w", err)
	}
	tmp, err := os.CreateTemp(dir, "."+FileName+".*")
	if err != nil {
		return fmt.Errorf("namespaces: %w", err)
	}
	defer os.Remove(tmp.Name()) // after a successful rename: nothing to remove
	// CreateTemp makes the file 0600 already; said again so that it stays
	// true.
	if err := tmp.Chmod(0o600); err != nil {
		tmp.Close()
		return fmt.Errorf("namespaces: %w", err)
	}
	_, err = tmp.Write(append(data, '\n'))
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), s.path)
	}
	if err != nil {
		return fmt.Errorf("namespaces: write %s: %w", s.path, err)
	}
	if d, err := os.Open(dir); err == nil {
		_ = d.Sync() // the rename survives a crash
		d.Close()
	}
	return nil
}

// check refuses incomplete entries and taken names.
func (f *File) check() error {
	seen := map[string]bool{}
	for _, r := range f.Registries {
		switch {
		case strings.TrimSpace(r.Name) == "":
			return fmt.Errorf("%w: a registry center needs a name", ErrInvalid)
		case seen[r.Name]:
			return fmt.Errorf("%w: registry center %q exists already", ErrInvalid, r.Name)
		case strings.TrimSpace(r.Servers) == "":
			return fmt.Errorf("%w: registry center %q: zkAddressList (host:port,...) is required", ErrInvalid, r.Name)
		case strings.TrimSpace(r.Namespace) == "":
			return fmt.Errorf("%w: registry center %q: namespace is required", ErrInvalid, r.Name)
		case r.Digest != "" && !strings.Contains(r.Digest, ":"):
			return fmt.Errorf("%w: registry center %q: digest must be user:password", ErrInvalid, r.Name)
		}
		seen[r.Name] = true
	}
	seen = map[string]bool{}
	for _, d := range f.DataSources {
		switch {
		case strings.TrimSpace(d.Name) == "":
			return fmt.Errorf("%w: a data source needs a name", ErrInvalid)
		case seen[d.Name]:
			return fmt.Errorf("%w: data source %q exists already", ErrInvalid, d.Name)
		case strings.TrimSpace(d.Driver) == "":
			return fmt.Errorf("%w: data source %q: driver (sqlite, postgres or mysql) is required", ErrInvalid, d.Name)
		case strings.TrimSpace(d.URL) == "":
			return fmt.Errorf("%w: data source %q: url is required", ErrInvalid, d.Name)
		}
		seen[d.Name] = true
	}
	return nil
}

// Registry returns the registry center named name.
func (f *File) Registry(name string) (Registry, bool) {
	i := slices.IndexFunc(f.Registries, func(r Registry) bool { return r.Name == name })
	if i < 0 {
		return Registry{}, false
	}
	return f.Registries[i], true
}

// DataSource returns the data source named name.
func (f *File) DataSource(name string) (DataSource, bool) {
	i := slices.IndexFunc(f.DataSources, func(d DataSource) bool { return d.Name == name })
	if i < 0 {
		return DataSource{}, false
	}
	return f.DataSources[i], true
}

// PutRegistry adds r, or replaces the entry named old ("" adds; a rename
// is an edit). A masked digest keeps the stored one.
func (f *File) PutRegistry(old string, r Registry) error {
	if old == "" {
		f.Registries = append(f.Registries, r)
		return nil
	}
	i := slices.IndexFunc(f.Registries, func(x Registry) bool { return x.Name == old })
	if i < 0 {
		return fmt.Errorf("%w: registry center %q", ErrNotFound, old)
	}
	if r.Digest == redact.Mask {
		r.Digest = f.Registries[i].Digest
	}
	f.Registries[i] = r
	return nil
}

// RemoveRegistry removes the entry named name.
func (f *File) RemoveRegistry(name string) error {
	n := len(f.Registries)
	f.Registries = slices.DeleteFunc(f.Registries, func(r Registry) bool { return r.Name == name })
	if len(f.Registries) == n {
		return fmt.Errorf("%w: registry center %q", ErrNotFound, name)
	}
	return nil
}

// PutDataSource adds d, or replaces the entry named old. A masked
// password or URL keeps the stored one.
func (f *File) PutDataSource(old string, d DataSource) error {
	if old == "" {
		f.DataSources = append(f.DataSources, d)
		return nil
	}
	i := slices.IndexFunc(f.DataSources, func(x DataSource) bool { return x.Name == old })
	if i < 0 {
		return fmt.Errorf("%w: data source %q", ErrNotFound, old)
	}
	stored := f.DataSources[i]
	if d.Password == redact.Mask {
		d.Password = stored.Password
	}
	if d.URL != stored.URL && d.URL == MaskDSN(stored.URL) {
		d.URL = stored.URL
	}
	f.DataSources[i] = d
	return nil
}

// RemoveDataSource removes the entry named name.
func (f *File) RemoveDataSource(name string) error {
	n := len(f.DataSources)
	f.DataSources = slices.DeleteFunc(f.DataSources, func(d DataSource) bool { return d.Name == name })
	if len(f.DataSources) == n {
		return fmt.Errorf("%w: data source %q", ErrNotFound, name)
	}
	return nil
}

// Public is r as it may be shown: the digest masked.
func (r Registry) Public() Registry {
	if r.Digest != "" {
		r.Digest = redact.Mask
	}
	return r
}

// Public is d as it may be shown: the password and the URL's secrets
// masked.
func (d DataSource) Public() DataSource {
	if d.Password != "" {
		d.Password = redact.Mask
	}
	d.URL = MaskDSN(d.URL)
	return d
}

// MaskDSN masks a DSN's secrets: a URL's user info and query values
// (redact.URLString), or the user:password@ of a MySQL-style DSN.
func MaskDSN(dsn string) string {
	if strings.Contains(dsn, "://") {
		return redact.URLString(dsn)
	}
	if i := strings.LastIndex(dsn, "@"); i >= 0 {
		return redact.Mask + dsn[i:]
	}
	return dsn
}
