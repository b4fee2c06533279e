package namespaces_test

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/ejob-io/ejob/host/namespaces"
)

func TestStoreFileModeAndContent(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "cfg", "ejob", namespaces.FileName)
	s := namespaces.Open(path)
	if f, err := s.Load(); err != nil || len(f.Registries)+len(f.DataSources) != 0 {
		t.Fatalf("Load of a missing file = %+v, %v; want empty", f, err)
	}
	_, err := s.Update(func(f *namespaces.File) error {
		if err := f.PutRegistry("", namespaces.Registry{Name: "prod", Servers: "zk1:2181", Namespace: "jobs", Digest: "ops:s3cret"}); err != nil {
			return err
		}
		return f.PutDataSource("", namespaces.DataSource{Name: "hist", Driver: "postgres", URL: "postgres://ops:dbpw@db:5432/ejob", Password: "pw2"})
	})
	if err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode().Perm() != 0o600 {
		t.Errorf("file mode %#o, want 0600", st.Mode().Perm())
	}
	if dst, _ := os.Stat(filepath.Dir(path)); dst.Mode().Perm() != 0o700 {
		t.Errorf("dir mode %#o, want 0700", dst.Mode().Perm())
	}
	var onDisk map[string]any
	data, _ := os.ReadFile(path)
	if err := json.Unmarshal(data, &onDisk); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{
		"registryCenters": []any{map[string]any{"name": "prod", "zkAddressList": "zk1:2181", "namespace": "jobs", "digest": "ops:s3cret"}},
		"dataSources":     []any{map[string]any{"name": "hist", "driver": "postgres", "url": "postgres://ops:dbpw@db:5432/ejob", "password": "pw2"}},
	}
	if !reflect.DeepEqual(onDisk, want) {
		t.Errorf("file:\n%s\nwant %v", data, want)
	}
	if ents, _ := os.ReadDir(filepath.Dir(path)); len(ents) != 1 {
		t.Errorf("directory holds %d entries, want the file only (no temporary left)", len(ents))
	}

	// Shown masked; a masked value sent back keeps the secret.
	f, _ := s.Load()
	pr, pd := f.Registries[0].Public(), f.DataSources[0].Public()
	if pr.Digest != "***" || pd.Password != "***" || pd.URL != "postgres://***@db:5432/ejob" {
		t.Errorf("Public: %+v %+v", pr, pd)
	}
	pr.Servers = "zk2:2181"
	pr.Name = "production"
	pd.Driver = "pgx"
	if _, err := s.Update(func(f *namespaces.File) error {
		if err := f.PutRegistry("prod", pr); err != nil {
			return err
		}
		return f.PutDataSource("hist", pd)
	}); err != nil {
		t.Fatal(err)
	}
	f, _ = s.Load()
	if r := f.Registries[0]; r != (namespaces.Registry{Name: "production", Servers: "zk2:2181", Namespace: "jobs", Digest: "ops:s3cret"}) {
		t.Errorf("after edit: %+v", r)
	}
	if d := f.DataSources[0]; d != (namespaces.DataSource{Name: "hist", Driver: "pgx", URL: "postgres://ops:dbpw@db:5432/ejob", Password: "pw2"}) {
		t.Errorf("after edit: %+v", d)
	}
	if got := namespaces.MaskDSN("ops:pw@tcp(db:3306)/ejob"); got != "***@tcp(db:3306)/ejob" {
		t.Errorf("MaskDSN(mysql) = %q", got)
	}
}

func TestStoreRefusesReadableFile(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), namespaces.FileName)
	if err := os.WriteFile(path, []byte(`{"registryCenters":[]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, 0o644); err != nil {
		t.Fatal(err)
	}
	s := namespaces.Open(path)
	_, err := s.Load()
	if !errors.Is(err, namespaces.ErrInsecure) || !strings.Contains(err.Error(), "chmod 600 "+path) {
		t.Errorf("Load of a 0644 file: %v", err)
	}
	if _, err := s.Update(func(*namespaces.File) error { return nil }); !errors.Is(err, namespaces.ErrInsecure) {
		t.Errorf("Update of a 0644 file: %v", err)
	}
}

func TestStoreRefusesInvalid(t *testing.T) {
	t.Parallel()
	s := namespaces.Open(filepath.Join(t.TempDir(), namespaces.FileName))
	for name, fn := range map[string]func(*namespaces.File) error{
		"duplicate": func(f *namespaces.File) error {
			_ = f.PutRegistry("", namespaces.Registry{Name: "a", Servers: "h:1", Namespace: "n"})
			return f.PutRegistry("", namespaces.Registry{Name: "a", Servers: "h:2", Namespace: "n"})
		},
		"no servers": func(f *namespaces.File) error {
			return f.PutRegistry("", namespaces.Registry{Name: "a", Namespace: "n"})
		},
		"bad digest": func(f *namespaces.File) error {
			return f.PutRegistry("", namespaces.Registry{Name: "a", Servers: "h:1", Namespace: "n", Digest: "x"})
		},
		"no url": func(f *namespaces.File) error {
			return f.PutDataSource("", namespaces.DataSource{Name: "d", Driver: "sqlite"})
		},
		"edit missing": func(f *namespaces.File) error {
			return f.PutRegistry("zz", namespaces.Registry{Name: "a", Servers: "h:1", Namespace: "n"})
		},
	} {
		if _, err := s.Update(fn); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	if _, err := os.Stat(s.Path()); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a refused update wrote the file: %v", err)
	}
}
