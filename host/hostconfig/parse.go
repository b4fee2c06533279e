package hostconfig

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/ejob-io/ejob/core/reg/zookeeper"
)

// maxFlattenNodes bounds the entries visited when flattening props and
// dataSource maps.
const maxFlattenNodes = 100_000

func parse(name string, data []byte, opts LoadOptions, baseDir string) (*File, error) {
	d := newDecoder(name, opts)
	h := d.head(data, baseDir)
	f := d.rest(h, opts, baseDir)
	if len(d.problems) > 0 {
		return nil, d.fileError(d.problems)
	}
	return f, nil
}

func newDecoder(name string, opts LoadOptions) *decoder {
	d := &decoder{file: name, lookup: opts.Getenv, suggested: map[string]bool{}, budget: maxFlattenNodes}
	if d.lookup == nil {
		d.lookup = os.LookupEnv
	}
	return d
}

func (d *decoder) fileError(problems []*Problem) *FileError {
	problems = slices.Clone(problems)
	slices.SortStableFunc(problems, func(a, b *Problem) int { return a.Line - b.Line })
	return &FileError{Problems: problems}
}

// Opened is a configuration file read and decoded up to its ejob: host
// settings (Open); Check decodes and checks the rest. The host settings
// name the plugins directory that the job types are checked against, so
// a caller opens it in between, and the file is read and parsed once.
// Every problem of the file, those of the ejob: section and of the
// plugins directory included, is reported by Check, all together.
type Opened struct {
	d       *decoder
	h       head
	baseDir string
}

// Open reads the configuration file at path and decodes its YAML, top
// level and ejob: section; getenv is Load's LoadOptions.Getenv. Its error
// is for a file it cannot read, and for YAML it cannot decode (nothing
// more can be checked then). Problems in the top level or the ejob:
// section are kept: HostOK reports them, Check returns them with the
// rest.
func Open(path string, getenv func(string) (string, bool)) (*Opened, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("configuration file: %w", err)
	}
	d := newDecoder(path, LoadOptions{Getenv: getenv})
	baseDir := filepath.Dir(path)
	h := d.head(data, baseDir)
	if h.top == nil {
		return nil, d.fileError(d.problems)
	}
	return &Opened{d: d, h: h, baseDir: baseDir}, nil
}

// Host returns the file's ejob: host settings, but for DumpPort: it is
// read from the elasticjob: section (Check's File has it). When HostOK is
// false they are incomplete: the plugin catalog is not to be opened
// with them.
func (o *Opened) Host() HostSettings { return o.h.f.Host }

// HostOK reports whether the top level and the ejob: section have no
// problem, so that Host's settings can open the plugin catalog.
func (o *Opened) HostOK() bool { return len(o.d.problems) == 0 }

// PluginsProblem records err, the plugin catalog failing to open with
// Host's settings, as a problem of ejob.pluginsDir: at the key's line,
// else at the ejob: section's, else at line 1. overridden says the
// directory came from outside the file (--plugins-dir or
// EJOB_PLUGINS_DIR). Check reports it with the file's other problems.
func (o *Opened) PluginsProblem(err error, overridden bool) {
	line, key := o.h.pluginsLine, "ejob.pluginsDir"
	if overridden || line == 0 {
		line = max(o.h.ejobLine, 1)
	}
	if overridden {
		key = "plugins directory (--plugins-dir or EJOB_PLUGINS_DIR)"
	}
	o.d.report(line, err, "%s: %v", key, err)
}

// Check decodes and checks the rest of the file, as Load does with opts
// (whose Getenv is ignored: Open's applies). It is called once. Its
// error lists every problem of the file, Open's and PluginsProblem's
// included, sorted by line; with any problem it returns no File.
func (o *Opened) Check(opts LoadOptions) (*File, error) {
	f := o.d.rest(o.h, opts, o.baseDir)
	if len(o.d.problems) > 0 {
		return nil, o.d.fileError(o.d.problems)
	}
	return f, nil
}

// head is a document decoded up to its host settings: the File with
// Host set, and the top level's entries (nil when the document or its
// top level could not be decoded).
type head struct {
	f   *File
	top map[string]entry
	// ejobLine, pluginsLine and controlLine are the lines of the ejob:
	// section and of its pluginsDir and controlSocket keys (0: absent).
	ejobLine, pluginsLine, controlLine int
}

// head decodes the YAML document, its top level and the ejob: section.
func (d *decoder) head(data []byte, baseDir string) head {
	f := &File{Name: d.file, Host: HostSettings{DrainTimeout: DefaultDrainTimeout, JavaPeers: DefaultJavaPeers}}
	root, ok := d.document(data)
	if !ok {
		return head{}
	}
	top, ok := d.section(root, "", topKeys(), false)
	if !ok {
		return head{}
	}
	h := head{f: f, top: top}
	if e, ok := top[keyEjob]; ok {
		h.ejobLine = e.line()
		h.pluginsLine, h.controlLine = d.host(e, &f.Host, baseDir)
	}
	return h
}

// document decodes data as one YAML document and returns its root (nil
// for an empty document); false after a problem was reported.
func (d *decoder) document(data []byte) (*yaml.Node, bool) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil && !errors.Is(err, io.EOF) {
		d.syntax(data, err)
		return nil, false
	}
	var extra yaml.Node
	switch err := dec.Decode(&extra); {
	case err == nil:
		d.report(extra.Line, nil, "a second YAML document (---): the file must hold one document")
		return nil, false
	case !errors.Is(err, io.EOF):
		d.syntax(data, err)
		return nil, false
	}
	if len(doc.Content) > 0 {
		return resolve(doc.Content[0]), true
	}
	return nil, true
}

// rest decodes the elasticjob: section of a head; the result is only
// meaningful when no problem was reported.
func (d *decoder) rest(h head, opts LoadOptions, baseDir string) *File {
	f, top := h.f, h.top
	if top == nil {
		return nil
	}
	e, ok := top[keyElasticjob]
	if !ok {
		d.report(1, nil, "no elasticjob section: a host without jobs has nothing to run (add jobs under elasticjob.jobs)")
		return f
	}
	ej, ok := d.section(e.value, e.path, elasticjobKeys(), false)
	if !ok {
		return f
	}
	if e, ok := ej[keyEnabled]; ok {
		if on, ok := d.boolean(e); ok && !on {
			d.report(e.line(), nil, "%s: false would disable every job; remove the key to run them", e.path)
		}
	}
	if e, ok := ej[keyRegCenter]; ok {
		f.Registry = d.regCenter(e, baseDir)
		if h.controlLine > 0 {
			d.report(h.controlLine, nil, "ejob.controlSocket: only a standalone host (no %s) serves a control socket; "+
				"the operator commands reach this host's jobs through ZooKeeper (remove the key)", e.path)
		}
	}
	if e, ok := ej[keyDump]; ok {
		f.Host.DumpPort, f.Host.DumpAddress = d.dump(e)
	}
	if te, ok := ej[keyTracing]; ok {
		f.Tracing = d.tracing(te, opts, f.Registry == nil, baseDir)
	} else if f.Host.TracingRetention > 0 {
		d.report(e.line(), nil, "ejob.tracingRetention is set but %s has no tracing section: nothing is recorded to purge", e.path)
	}
	jobs, ok := ej[keyJobs]
	if !ok {
		d.report(e.line(), nil, "%s: no jobs: a host without jobs has nothing to run (add jobs under elasticjob.jobs)", e.path)
		return f
	}
	f.Jobs = d.jobs(jobs, opts)
	return f
}

// dump reads elasticjob.dump as the starter does: the service runs when
// port is set and enabled is not false. A section that would serve nothing
// while enabled (no port) is refused rather than ignored. address (ejob's
// own key) is the IP address to listen on; "" is loopback.
func (d *decoder) dump(e entry) (*int, string) {
	fs, ok := d.section(e.value, e.path, dumpKeys(), false)
	if !ok {
		return nil, ""
	}
	enabled := true
	if fe, ok := fs[keyEnabled]; ok {
		if enabled, ok = d.boolean(fe); !ok {
			return nil, ""
		}
	}
	var addr string
	if fe, ok := fs[keyAddress]; ok {
		if addr, ok = d.str(fe); !ok {
			return nil, ""
		}
		if addr != "" && net.ParseIP(addr) == nil {
			d.report(fe.value.Line, nil, "%s: %q is not an IP address (want 127.0.0.1, the default, or ::1 for loopback; a host's own address; 0.0.0.0 or :: for every interface)", fe.path, addr)
			return nil, ""
		}
	}
	fe, ok := fs[keyPort]
	if !ok {
		if enabled {
			d.missing(e.line(), e.path, keyPort, " (or enabled: false, or remove the section)")
		}
		return nil, ""
	}
	port, ok := d.integer(fe)
	if !ok {
		return nil, ""
	}
	if port < 0 || port > 65535 {
		d.report(fe.value.Line, nil, "%s: Port value out of range: %d (want 0 to 65535; 0 picks a free port)", fe.path, port)
		return nil, ""
	}
	if !enabled {
		return nil, ""
	}
	return &port, addr
}

func (d *decoder) regCenter(e entry, baseDir string) *zookeeper.Config {
	fs, ok := d.section(e.value, e.path, regCenterKeys(), false)
	if !ok {
		return nil
	}
	cfg := zookeeper.DefaultConfig("", "")
	bad := map[string]bool{}
	var saslFs map[string]entry
	if se, ok := fs[keySASL]; ok {
		saslFs = d.sasl(se, &cfg.SASL, baseDir, bad)
	}
	for _, k := range []struct {
		key string
		dst *string
	}{{keyServerLists, &cfg.ServerLists}, {keyNamespace, &cfg.Namespace}, {keyDigest, &cfg.Digest}} {
		if fe, ok := fs[k.key]; ok {
			if *k.dst, ok = d.str(fe); !ok {
				bad[k.key] = true
			}
		}
	}
	for _, k := range []struct {
		key string
		dst *int
	}{
		{keyBaseSleepTimeMilliseconds, &cfg.BaseSleepTimeMilliseconds},
		{keyMaxSleepTimeMilliseconds, &cfg.MaxSleepTimeMilliseconds},
		{keyMaxRetries, &cfg.MaxRetries},
		{keySessionTimeoutMilliseconds, &cfg.SessionTimeoutMilliseconds},
		{keyConnectionTimeoutMilliseconds, &cfg.ConnectionTimeoutMilliseconds},
	} {
		if fe, ok := fs[k.key]; ok {
			if *k.dst, ok = d.integer(fe); !ok {
				bad[k.key] = true
			}
		}
	}
	for _, k := range []struct{ key, val string }{{keyServerLists, cfg.ServerLists}, {keyNamespace, cfg.Namespace}} {
		if fe, ok := fs[k.key]; !ok {
			d.missing(e.line(), e.path, k.key, " (remove regCenter to run standalone on the embedded registry)")
			bad[k.key] = true
		} else if !bad[k.key] && strings.TrimSpace(k.val) == "" {
			d.report(fe.value.Line, nil, "%s: must not be empty", fe.path)
			bad[k.key] = true
		}
	}
	if err := cfg.Validate(); err != nil {
		for _, ve := range zkFieldErrors(err) {
			msg := strings.TrimPrefix(ve.Error(), zkErrPrefix)
			field, reason, _ := strings.Cut(msg, ": ")
			if bad[field] {
				continue
			}
			line := e.line()
			if fe, ok := fs[field]; ok {
				line = fe.value.Line
			} else if k, ok := strings.CutPrefix(field, keySASL+"."); ok {
				line = fs[keySASL].line()
				if fe, ok := saslFs[k]; ok {
					line = fe.value.Line
				}
			}
			d.report(line, ve, "%s.%s: %s", e.path, field, reason)
		}
	}
	return &cfg
}

// sasl reads regCenter.sasl into s; paths are relative to baseDir. Keys
// that fail to decode are marked in bad as "sasl.KEY".
func (d *decoder) sasl(e entry, s *zookeeper.SASL, baseDir string, bad map[string]bool) map[string]entry {
	fs, ok := d.section(e.value, e.path, saslKeys(), false)
	if !ok {
		bad[keySASL] = true
		return nil
	}
	for _, k := range []struct {
		key  string
		dst  *string
		path bool
	}{
		{keyMechanism, &s.Mechanism, false},
		{keyUsername, &s.Username, false},
		{keyPassword, &s.Password, false},
		{keyPrincipal, &s.Principal, false},
		{keyKeytab, &s.Keytab, true},
		{keyTicketCache, &s.TicketCache, true},
		{keyKrb5Conf, &s.Krb5Conf, true},
		{keyServiceName, &s.ServiceName, false},
		{keyServiceHost, &s.ServiceHost, false},
		{keyJAASFile, &s.JAASFile, true},
	} {
		fe, ok := fs[k.key]
		if !ok {
			continue
		}
		v, ok := d.str(fe)
		if !ok {
			bad[keySASL+"."+k.key] = true
			continue
		}
		if k.path && v != "" && baseDir != "" && !filepath.IsAbs(v) {
			v = filepath.Join(baseDir, v)
		}
		*k.dst = v
	}
	if fe, ok := fs[keyACL]; ok {
		if s.ACL, ok = d.boolean(fe); !ok {
			bad[keySASL+"."+keyACL] = true
		}
	}
	if len(fs) == 0 {
		d.report(e.line(), nil, "%s: empty: set mechanism and its credentials, or jaasFile (or remove the section)", e.path)
		bad[keySASL] = true
	}
	return fs
}

// zkFieldErrors returns the per-field errors of zookeeper.Config.Validate
// ("zookeeper config: FIELD: reason"), found in its errors.Join tree.
func zkFieldErrors(err error) []error {
	if u, ok := err.(interface{ Unwrap() []error }); ok {
		var out []error
		for _, e := range u.Unwrap() {
			out = append(out, zkFieldErrors(e)...)
		}
		return out
	}
	if strings.HasPrefix(err.Error(), zkErrPrefix) {
		return []error{err}
	}
	return nil
}

const zkErrPrefix = "zookeeper config: "

// host decodes the ejob: section into h; it returns the line of its
// pluginsDir key (0: absent).
func (d *decoder) host(e entry, h *HostSettings, baseDir string) (pluginsLine, controlLine int) {
	fs, ok := d.section(e.value, e.path, ejobKeys(), false)
	if !ok {
		return 0, 0
	}
	if fe, ok := fs[keyPluginsDir]; ok {
		pluginsLine = fe.line()
	}
	if fe, ok := fs[keyControlSocket]; ok {
		controlLine = fe.line()
	}
	for _, k := range []struct {
		key  string
		dst  *string
		path bool
	}{
		{keyPluginsDir, &h.PluginsDir, true},
		{keyLockFile, &h.LockFile, true},
		{keyControlSocket, &h.ControlSocket, true},
		{keyPreferredNetworkInterface, &h.PreferredNetworkInterface, false},
		{keyPreferredNetworkIP, &h.PreferredNetworkIP, false},
	} {
		fe, ok := fs[k.key]
		if !ok {
			continue
		}
		s, ok := d.str(fe)
		if !ok {
			continue
		}
		if k.path && s != "" && baseDir != "" && !filepath.IsAbs(s) {
			s = filepath.Join(baseDir, s)
		}
		*k.dst = s
	}
	if fe, ok := fs[keyDrainTimeout]; ok {
		h.DrainTimeout, _ = d.duration(fe)
	}
	if fe, ok := fs[keyPluginStopGrace]; ok {
		h.PluginStopGrace, _ = d.duration(fe)
	}
	if fe, ok := fs[keyTracingRetention]; ok {
		h.TracingRetention, _ = d.days(fe)
	}
	if fe, ok := fs[keyHTTP]; ok {
		h.HTTP = d.http(fe, baseDir)
	}
	if fe, ok := fs[keyLogLevel]; ok {
		if s, ok := d.str(fe); ok {
			switch l := strings.ToLower(strings.TrimSpace(s)); l {
			case "", "trace", "debug", "info", "warn", "error":
				h.LogLevel = l
			default:
				d.report(fe.value.Line, nil, "%s: want trace, debug, info, warn or error, got %q", fe.path, s)
			}
		}
	}
	if fe, ok := fs[keyJavaPeers]; ok {
		if s, ok := d.str(fe); ok {
			switch m := JavaPeers(strings.ToLower(strings.TrimSpace(s))); m {
			case JavaPeersWarn, JavaPeersStrict, JavaPeersOff:
				h.JavaPeers = m
			default:
				d.report(fe.value.Line, nil, "%s: want warn, strict or off, got %q", fe.path, s)
			}
		}
	}
	return pluginsLine, controlLine
}
