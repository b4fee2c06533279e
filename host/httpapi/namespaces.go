package httpapi

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/ejob-io/ejob/core/tracing"
	"github.com/ejob-io/ejob/host/namespaces"
	"github.com/ejob-io/ejob/spi/redact"
	"github.com/hashicorp/go-hclog"
)

// DefaultDataSource names the process's own event-trace data source (its
// elasticjob.tracing) in the data-source lists.
const DefaultDataSource = "default"

// Switcher connects the server to another registry center or data
// source (`ejob serve`): on success it has called SetRegistry or
// SetTrace; on error nothing changed.
type Switcher interface {
	// UseRegistry switches to r; nil: back to the process's own.
	UseRegistry(ctx context.Context, r *namespaces.Registry) error
	// UseDataSource switches to d; nil: back to the process's own.
	UseDataSource(ctx context.Context, d *namespaces.DataSource) error
	// TestDataSource checks d as UseDataSource does and switches
	// nothing.
	TestDataSource(ctx context.Context, d namespaces.DataSource) error
}

// errOwnOnly answers the namespace writes of a server without a store.
var errOwnOnly = errors.New("this server shows its own namespace only (a host's ejob.http); " +
	"add and switch registry centers and data sources in `ejob serve`")

// RegistryCenter is upstream's RegistryCenterConfig as the console lists
// it; the digest is never shown in clear.
type RegistryCenter struct {
	Name          string `json:"name"`
	ZKAddressList string `json:"zkAddressList"`
	Namespace     string `json:"namespace"`
	Digest        string `json:"digest"`
	Activated     bool   `json:"activated"`
}

// DataSourceInfo is upstream's EventTraceDataSourceConfig as the console
// lists it; the password and the URL's secrets are masked.
type DataSourceInfo struct {
	Name      string `json:"name"`
	Driver    string `json:"driver"`
	URL       string `json:"url"`
	Username  string `json:"username"`
	Password  string `json:"password"`
	Activated bool   `json:"activated"`
}

// RegistryEntry and DataSourceEntry are the Namespaces page's rows:
// upstream's fields, and Builtin for the process's own entry (from its
// configuration: cannot be edited or removed).
type (
	RegistryEntry struct {
		RegistryCenter
		Builtin bool `json:"builtin"`
	}
	DataSourceEntry struct {
		DataSourceInfo
		Builtin bool `json:"builtin"`
	}
)

func dataSourceInfo(d namespaces.DataSource, activated bool) DataSourceInfo {
	p := d.Public()
	return DataSourceInfo{Name: p.Name, Driver: p.Driver, URL: p.URL, Username: p.Username, Password: p.Password, Activated: activated}
}

// NamespacesModel is GET /api/namespaces: everything the Namespaces page
// shows.
type NamespacesModel struct {
	// Switchable: the lists may be edited and switched (ejob serve).
	Switchable bool `json:"switchable"`
	// File is the store's path; FileError why it cannot be used.
	File            string            `json:"file,omitempty"`
	FileError       string            `json:"fileError,omitempty"`
	RegistryCenters []RegistryEntry   `json:"registryCenters"`
	DataSources     []DataSourceEntry `json:"dataSources"`
}

func (s *Server) namespaceRoutes(mux *Mux) {
	mux.HandleFunc("GET /api/namespaces", func(w http.ResponseWriter, _ *http.Request) { ok(w, s.namespacesModel()) })
	mux.HandleFunc("GET /api/registry-center/activated", func(w http.ResponseWriter, _ *http.Request) {
		m := s.namespacesModel()
		ok(w, m.RegistryCenters[slices.IndexFunc(m.RegistryCenters, func(r RegistryEntry) bool { return r.Activated })].RegistryCenter)
	})
	mux.HandleFunc("GET /api/registry-center/load", func(w http.ResponseWriter, _ *http.Request) {
		var out []RegistryCenter
		for _, e := range s.namespacesModel().RegistryCenters {
			out = append(out, e.RegistryCenter)
		}
		ok(w, out)
	})

	mux.HandleFunc("GET /api/data-source/activated", func(w http.ResponseWriter, _ *http.Request) {
		write(w, http.StatusOK, s.backend().trace.tracer != nil)
	})
	mux.HandleFunc("GET /api/data-source/load", func(w http.ResponseWriter, _ *http.Request) {
		out := []DataSourceInfo{}
		for _, e := range s.namespacesModel().DataSources {
			out = append(out, e.DataSourceInfo)
		}
		ok(w, out)
	})
	mux.HandleFunc("POST /api/data-source/connectTest", s.connectTest)
	mux.HandleFunc("GET /api/data-source/drivers", func(w http.ResponseWriter, _ *http.Request) {
		ok(w, []string{"sqlite", "postgres", "mysql"})
	})
	// The writes, alike for both kinds.
	for _, k := range []struct {
		kind string
		put  func(w http.ResponseWriter, r *http.Request, old string)
	}{{"registry-center", s.putRegistry}, {"data-source", s.putDataSource}} {
		base := "/api/" + k.kind
		mux.HandleFunc("POST "+base+"/add", func(w http.ResponseWriter, r *http.Request) { k.put(w, r, "") })
		mux.HandleFunc("PUT "+base+"/{name}", func(w http.ResponseWriter, r *http.Request) { k.put(w, r, r.PathValue("name")) })
		mux.HandleFunc("DELETE "+base, func(w http.ResponseWriter, r *http.Request) { s.removeNamed(w, r, k.kind, "") })
		mux.HandleFunc("DELETE "+base+"/{name}", func(w http.ResponseWriter, r *http.Request) { s.removeNamed(w, r, k.kind, r.PathValue("name")) })
		mux.HandleFunc("POST "+base+"/connect", func(w http.ResponseWriter, r *http.Request) { s.connect(w, r, k.kind) })
	}
}

// namespacesModel lists the process's own registry center and data
// source, then the store's, secrets masked, the ones in use activated.
func (s *Server) namespacesModel() NamespacesModel {
	b := s.backend()
	own := s.opts.Registry
	m := NamespacesModel{Switchable: s.opts.Namespaces != nil, DataSources: []DataSourceEntry{}}
	rc := RegistryCenter{Name: own.Namespace, ZKAddressList: own.ZKAddressList, Namespace: own.Namespace, Activated: b.registry.Name == ""}
	if own.HasDigest {
		rc.Digest = redact.Mask
	}
	m.RegistryCenters = []RegistryEntry{{RegistryCenter: rc, Builtin: true}}
	// A standalone host's in-memory history is no data source to list.
	if s.opts.Tracer != nil && s.opts.TracerConfig["driver"] != tracing.MemoryDriver {
		c := s.opts.TracerConfig
		ds := namespaces.DataSource{Name: DefaultDataSource, Driver: c["driver"], URL: cmp.Or(c["url"], c["jdbcUrl"]),
			Username: c["username"], Password: c["password"]}
		m.DataSources = append(m.DataSources, DataSourceEntry{DataSourceInfo: dataSourceInfo(ds, b.trace.name == DefaultDataSource), Builtin: true})
	}
	if s.opts.Namespaces == nil {
		return m
	}
	m.File = s.opts.Namespaces.Path()
	f, err := s.opts.Namespaces.Load()
	if err != nil {
		m.FileError = err.Error()
		return m
	}
	for _, r := range f.Registries {
		p := r.Public()
		m.RegistryCenters = append(m.RegistryCenters, RegistryEntry{RegistryCenter: RegistryCenter{Name: p.Name, ZKAddressList: p.Servers,
			Namespace: p.Namespace, Digest: p.Digest, Activated: b.registry.Name == r.Name}})
	}
	for _, d := range f.DataSources {
		m.DataSources = append(m.DataSources, DataSourceEntry{DataSourceInfo: dataSourceInfo(d, b.trace.name == d.Name)})
	}
	return m
}

// nsStatus maps the store's and the switch's errors to HTTP statuses.
func nsStatus(err error) int {
	switch {
	case errors.Is(err, errOwnOnly):
		return http.StatusConflict
	case errors.Is(err, namespaces.ErrNotFound):
		return http.StatusNotFound
	case errors.Is(err, namespaces.ErrInvalid):
		return http.StatusBadRequest
	case errors.Is(err, errConnect):
		return http.StatusBadGateway
	}
	return http.StatusInternalServerError
}

var errConnect = errors.New("connect")

// nsAudit logs one namespace operation.
func (s *Server) nsAudit(r *http.Request, op, name string, err error) {
	args := []any{"user", UserOf(r), "op", op, "name", name}
	if err != nil {
		s.Audit(hclog.Warn, append(args, "result", "error", "error", err)...)
		return
	}
	s.Audit(hclog.Info, append(args, "result", "ok")...)
}

func (s *Server) nsAnswer(w http.ResponseWriter, r *http.Request, op, name string, err error) {
	s.nsAudit(r, op, name, err)
	if err != nil {
		fail(w, nsStatus(err), err.Error())
		return
	}
	ok(w, true)
}

// reserved refuses the name of the process's own entry.
func (s *Server) reserved(kind, name string) error {
	if kind == "registry-center" && name == s.opts.Registry.Namespace || kind == "data-source" && name == DefaultDataSource {
		return errors.Join(namespaces.ErrInvalid, errors.New("the name "+name+" is the process's own "+strings.ReplaceAll(kind, "-", " ")+"'s"))
	}
	return nil
}

// putRegistry adds (old "") or edits a registry center.
func (s *Server) putRegistry(w http.ResponseWriter, r *http.Request, old string) {
	op := "registry-center " + map[bool]string{true: "add", false: "edit"}[old == ""]
	var rc RegistryCenter
	if !s.decode(w, r, &rc) {
		return
	}
	if err := checkEntryName(strings.TrimSpace(rc.Name)); err != nil {
		s.nsAnswer(w, r, op, cmp.Or(old, rc.Name), fmt.Errorf("%w: name: %w", namespaces.ErrInvalid, err))
		return
	}
	err := s.storeUpdate("registry-center", rc.Name, func(f *namespaces.File) error {
		if old != "" && old == s.backend().registry.Name && old != rc.Name {
			return errors.Join(namespaces.ErrInvalid, errors.New("registry center "+old+" is in use: switch to another before renaming it"))
		}
		return f.PutRegistry(old, namespaces.Registry{Name: strings.TrimSpace(rc.Name), Servers: strings.TrimSpace(rc.ZKAddressList),
			Namespace: strings.TrimSpace(rc.Namespace), Digest: rc.Digest})
	})
	s.nsAnswer(w, r, op, cmp.Or(old, rc.Name), err)
}

// putDataSource adds (old "") or edits a data source.
func (s *Server) putDataSource(w http.ResponseWriter, r *http.Request, old string) {
	op := "data-source " + map[bool]string{true: "add", false: "edit"}[old == ""]
	var d namespaces.DataSource
	if !s.decode(w, r, &d) {
		return
	}
	d.Name, d.Driver, d.URL = strings.TrimSpace(d.Name), strings.TrimSpace(d.Driver), strings.TrimSpace(d.URL)
	if err := checkEntryName(d.Name); err != nil {
		s.nsAnswer(w, r, op, cmp.Or(old, d.Name), fmt.Errorf("%w: name: %w", namespaces.ErrInvalid, err))
		return
	}
	err := s.storeUpdate("data-source", d.Name, func(f *namespaces.File) error {
		if old != "" && old == s.backend().trace.name && old != d.Name {
			return errors.Join(namespaces.ErrInvalid, errors.New("data source "+old+" is in use: switch to another before renaming it"))
		}
		if err := f.PutDataSource(old, d); err != nil {
			return err
		}
		// Checked as stored (a masked URL sent back is the stored one).
		stored, _ := f.DataSource(d.Name)
		_, err := stored.Confine(s.opts.DataSourceDir)
		return err
	})
	s.nsAnswer(w, r, op, cmp.Or(old, d.Name), err)
}

func (s *Server) storeUpdate(kind, name string, fn func(*namespaces.File) error) error {
	if s.opts.Namespaces == nil {
		return errOwnOnly
	}
	if err := s.reserved(kind, name); err != nil {
		return err
	}
	_, err := s.opts.Namespaces.Update(fn)
	return err
}

type nameRequest struct {
	Name string `json:"name"`
}

// removeNamed removes a registry center or data source, named in the
// path or, as upstream, in the body.
func (s *Server) removeNamed(w http.ResponseWriter, r *http.Request, kind, name string) {
	if name == "" {
		var req nameRequest
		if !s.decode(w, r, &req) {
			return
		}
		name = req.Name
	}
	err := s.storeUpdate(kind, name, func(f *namespaces.File) error {
		b := s.backend()
		if kind == "registry-center" {
			if name == b.registry.Name {
				return errors.Join(namespaces.ErrInvalid, errors.New("registry center "+name+" is in use: switch to another first"))
			}
			return f.RemoveRegistry(name)
		}
		if name == b.trace.name {
			return errors.Join(namespaces.ErrInvalid, errors.New("data source "+name+" is in use: switch to another first"))
		}
		return f.RemoveDataSource(name)
	})
	s.nsAnswer(w, r, kind+" remove", name, err)
}

// connect switches to the named registry center or data source (the
// process's own by its name).
func (s *Server) connect(w http.ResponseWriter, r *http.Request, kind string) {
	var req nameRequest
	if !s.decode(w, r, &req) {
		return
	}
	err := func() error {
		if s.opts.Namespaces == nil {
			return errOwnOnly
		}
		f, err := s.opts.Namespaces.Load()
		if err != nil {
			return err
		}
		ctx, cancel := s.ctx(r)
		defer cancel()
		if kind == "registry-center" {
			if req.Name == s.opts.Registry.Namespace {
				return connectErr(s.opts.Switch.UseRegistry(ctx, nil))
			}
			rc, found := f.Registry(req.Name)
			if !found {
				return errors.Join(namespaces.ErrNotFound, errors.New("registry center "+req.Name))
			}
			return connectErr(s.opts.Switch.UseRegistry(ctx, &rc))
		}
		if req.Name == DefaultDataSource {
			return connectErr(s.opts.Switch.UseDataSource(ctx, nil))
		}
		d, found := f.DataSource(req.Name)
		if !found {
			return errors.Join(namespaces.ErrNotFound, errors.New("data source "+req.Name))
		}
		// The file opened is the one checked, wherever the store's entry
		// came from.
		d, err = d.Confine(s.opts.DataSourceDir)
		if err != nil {
			return err
		}
		return connectErr(s.opts.Switch.UseDataSource(ctx, &d))
	}()
	s.nsAnswer(w, r, kind+" connect", req.Name, err)
}

// connectTest is POST /api/data-source/connectTest: the data source in
// the body (not stored; an SQLite file confined as an added one is) is
// opened and queried once; model true, or the error. Nothing is switched.
func (s *Server) connectTest(w http.ResponseWriter, r *http.Request) {
	var d namespaces.DataSource
	if !s.decode(w, r, &d) {
		return
	}
	d.Name, d.Driver, d.URL = strings.TrimSpace(d.Name), strings.TrimSpace(d.Driver), strings.TrimSpace(d.URL)
	err := func() error {
		if s.opts.Namespaces == nil {
			return errOwnOnly
		}
		switch {
		case d.Driver == "":
			return fmt.Errorf("%w: data source %q: driver (sqlite, postgres or mysql) is required", namespaces.ErrInvalid, d.Name)
		case d.URL == "":
			return fmt.Errorf("%w: data source %q: url is required", namespaces.ErrInvalid, d.Name)
		}
		d, err := d.Confine(s.opts.DataSourceDir)
		if err != nil {
			return err
		}
		ctx, cancel := s.ctx(r)
		defer cancel()
		return connectErr(s.opts.Switch.TestDataSource(ctx, d))
	}()
	s.nsAnswer(w, r, "data-source connectTest", d.Name, err)
}

func connectErr(err error) error {
	if err == nil {
		return nil
	}
	return errors.Join(errConnect, err)
}
