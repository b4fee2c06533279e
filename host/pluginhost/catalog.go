package pluginhost

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
	"golang.org/x/sync/errgroup"

	"github.com/ejob-io/ejob/internal/transport"
	"github.com/ejob-io/ejob/spi"
)

// Prefix is the file-name prefix of plugin executables.
const Prefix = "ejob-"

// Defaults used when Config leaves a field zero.
const (
	DefaultCallTimeout  = 30 * time.Second
	DefaultStartTimeout = 10 * time.Second
)

// ErrDuplicateType means two binaries offer the same (kind, type name).
var ErrDuplicateType = errors.New("duplicate plugin type")

// Builtin says how to start the process that serves ejob's built-in types
// (the ejob binary itself under a hidden subcommand) and what it serves, so
// the catalog knows the built-in types without starting it.
type Builtin struct {
	Path    string
	Args    []string
	Version string
	Types   []spi.TypeKey
	// NoChecksum leaves the built-in Binary's SHA256 empty. Only the
	// listings (ejob plugins) show it; hashing the ejob binary is some
	// 30 ms of a host's start.
	NoChecksum bool
}

// Config configures a Catalog.
type Config struct {
	// Dir is the plugins directory; empty means built-ins only.
	Dir string
	// LockFile pins binaries by SHA-256. Empty means Dir/ejob-plugins.lock
	// when that file exists, and no pinning otherwise.
	LockFile string
	// IgnoreLock skips pinning (used when writing a new lock file).
	IgnoreLock bool
	// Builtin serves the built-in types; nil means none.
	Builtin *Builtin
	// Logger receives catalog logs and the plugins' re-levelled logs.
	Logger hclog.Logger
	// SkipsReported means the caller prints Skipped() itself (the plugins
	// list, lock and check commands), so skipped entries are not logged
	// as well: each is said once.
	SkipsReported bool
	// CallTimeout bounds every call whose ctx has no earlier deadline,
	// except JobExecutor.Execute, which is bounded by the job's own
	// execution timeout (the caller's ctx).
	CallTimeout time.Duration
	// StartTimeout bounds spawn + handshake of one process.
	StartTimeout time.Duration
	// StopGrace bounds how long a job type's Execute whose ctx ended
	// (execution timeout, resharding, shutdown, session loss) waits for
	// the plugin to stop the item; default transport.DefaultStopGrace.
	// When it passes, the plugin process is killed (see Lookup).
	StopGrace time.Duration
	// Observer is told of plugin process launches and failed calls
	// (metrics); nil: none.
	Observer Observer
}

// Observer is told what happens to plugin processes. Its methods must be
// safe for concurrent use and must not block. plugin is the binary's
// file name (ejob-... or the ejob binary for the built-ins).
type Observer interface {
	// Restarted: the plugin's process was launched again after its
	// previous one exited or was killed.
	Restarted(plugin string)
	// CallFailed: a call to the plugin returned an error (not the
	// caller's cancellation).
	CallFailed(plugin string)
}

// Binary describes one discovered plugin binary.
type Binary struct {
	Path    string
	SHA256  string
	Info    spi.Info
	Builtin bool
}

// Skipped is a file in the plugins directory that was not loaded, and why.
type Skipped struct {
	Path   string
	Reason error
}

// Catalog indexes plugin types and supervises their processes. It is safe
// for concurrent use. Close stops every process it started.
type Catalog struct {
	cfg      Config
	log      hclog.Logger
	lock     Lock
	binaries []Binary
	skipped  []Skipped
	byType   map[spi.TypeKey]*supervisor
	sups     []*supervisor

	closeOnce sync.Once
}

// Open scans the plugins directory and builds the catalog. Files that are
// not usable plugins are skipped with a warning naming them; two binaries
// offering the same type is an error naming both.
func Open(ctx context.Context, cfg Config) (*Catalog, error) {
	if cfg.Logger == nil {
		cfg.Logger = hclog.NewNullLogger()
	}
	if cfg.CallTimeout <= 0 {
		cfg.CallTimeout = DefaultCallTimeout
	}
	if cfg.StopGrace <= 0 {
		cfg.StopGrace = transport.DefaultStopGrace
	}
	if cfg.StartTimeout <= 0 {
		cfg.StartTimeout = DefaultStartTimeout
	}
	c := &Catalog{cfg: cfg, log: cfg.Logger.Named("plugins"), byType: map[spi.TypeKey]*supervisor{}}
	if cfg.Dir != "" {
		if err := checkDir(cfg.Dir); err != nil {
			return nil, err
		}
	}
	if err := c.loadLock(); err != nil {
		return nil, err
	}
	if cfg.Builtin != nil {
		c.addBuiltin(*cfg.Builtin)
	}
	if cfg.Dir != "" {
		if err := c.scan(ctx); err != nil {
			c.Close()
			return nil, err
		}
	}
	return c, nil
}

func (c *Catalog) loadLock() error {
	if c.cfg.IgnoreLock {
		return nil
	}
	path := c.cfg.LockFile
	explicit := path != ""
	if !explicit {
		if c.cfg.Dir == "" {
			return nil
		}
		path = filepath.Join(c.cfg.Dir, LockFileName)
	}
	lock, err := ReadLock(path)
	switch {
	case err == nil:
		c.lock = lock
		fi, err := os.Stat(path)
		if err != nil {
			return fmt.Errorf("plugin lock file: %w", err)
		}
		return checkTrusted("lock file", path, fi)
	case errors.Is(err, fs.ErrNotExist) && !explicit:
		return nil
	default:
		return err
	}
}

func (c *Catalog) addBuiltin(b Builtin) {
	var sum string
	if !b.NoChecksum {
		var err error
		if sum, err = FileSHA256(b.Path); err != nil {
			c.log.Warn("cannot checksum the built-in plugin server", "path", b.Path, "error", err)
		}
	}
	bin := Binary{Path: b.Path, SHA256: sum, Builtin: true,
		Info: spi.Info{PluginVersion: b.Version, APIVersion: spi.APIVersion, Types: normalizedTypes(b.Types)}}
	sup := c.newSupervisor(bin, b.Args)
	for _, k := range bin.Info.Types {
		c.byType[k] = sup
	}
	c.binaries = append(c.binaries, bin)
}

func normalizedTypes(in []spi.TypeKey) []spi.TypeKey {
	out := make([]spi.TypeKey, 0, len(in))
	for _, k := range in {
		out = append(out, spi.TypeKey{Kind: k.Kind, Type: spi.NormalizeType(k.Type)})
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Kind != out[j].Kind {
			return out[i].Kind < out[j].Kind
		}
		return out[i].Type < out[j].Type
	})
	return out
}

// candidates lists the plugin files of the directory: names starting with
// Prefix that are not the lock file or hidden temp files.
func (c *Catalog) candidates() ([]string, error) {
	entries, err := os.ReadDir(c.cfg.Dir)
	if err != nil {
		return nil, fmt.Errorf("read plugins directory: %w", err)
	}
	var paths []string
	for _, e := range entries {
		name := e.Name()
		if !strings.HasPrefix(name, Prefix) || name == LockFileName || e.IsDir() {
			continue
		}
		paths = append(paths, filepath.Join(c.cfg.Dir, name))
	}
	return paths, nil
}

// check refuses files that must not be launched: not regular, not
// executable, empty, group/world-writable, or not matching the lock file.
func (c *Catalog) check(path string) (string, error) {
	if lst, err := os.Lstat(path); err == nil && lst.Mode()&os.ModeSymlink != 0 {
		if err := checkLink(c.cfg.Dir, path); err != nil {
			return "", err
		}
	}
	st, err := os.Stat(path)
	if err != nil {
		return "", fmt.Errorf("stat: %w", err)
	}
	mode := st.Mode()
	switch {
	case !mode.IsRegular():
		return "", fmt.Errorf("not a regular file")
	case mode.Perm()&0o111 == 0:
		return "", fmt.Errorf("not executable (mode %v)", mode.Perm())
	case st.Size() == 0:
		return "", fmt.Errorf("empty file (0 bytes)")
	}
	if err := checkTrusted("plugin", path, st); err != nil {
		return "", err
	}
	sum, err := FileSHA256(path)
	if err != nil {
		return "", err
	}
	if c.lock != nil {
		if err := c.lock.Verify(path); err != nil {
			return "", err
		}
	}
	return sum, nil
}

func (c *Catalog) scan(ctx context.Context) error {
	paths, err := c.candidates()
	if err != nil {
		return err
	}
	found := make([]*Binary, len(paths))
	reasons := make([]error, len(paths))
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(4)
	for i, path := range paths {
		g.Go(func() error {
			bin, err := c.probe(gctx, path)
			found[i], reasons[i] = bin, err
			return nil
		})
	}
	_ = g.Wait() // probe reports per file; nothing aborts the scan
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("scan plugins directory %s: %w", c.cfg.Dir, err)
	}
	owner := map[spi.TypeKey]string{}
	for i, path := range paths {
		if reasons[i] != nil {
			c.skipped = append(c.skipped, Skipped{Path: path, Reason: reasons[i]})
			if !c.cfg.SkipsReported {
				c.log.Warn("skipping plugins directory entry", "path", path, "reason", reasons[i])
			}
			continue
		}
		bin := *found[i]
		sup := c.newSupervisor(bin, nil)
		for _, k := range bin.Info.Types {
			if other, dup := owner[k]; dup {
				return fmt.Errorf("%w: %s type %q is offered by both %s and %s; remove one of them", ErrDuplicateType, k.Kind, k.Type, other, path)
			}
			owner[k] = path
			if prev, ok := c.byType[k]; ok && prev.bin.Builtin {
				c.log.Info("plugin overrides built-in type", "kind", k.Kind, "type", k.Type, "path", path)
			}
			c.byType[k] = sup
		}
		c.binaries = append(c.binaries, bin)
	}
	return nil
}

// probe checks one file and asks it for Info, then stops it: processes are
// started for real on first use.
func (c *Catalog) probe(ctx context.Context, path string) (*Binary, error) {
	sum, err := c.check(path)
	if err != nil {
		return nil, err
	}
	proc, err := transport.Launch(ctx, c.launchConfig(path, nil, false))
	if le := (*transport.LaunchError)(nil); errors.As(err, &le) {
		return nil, le.Err // Skipped names the path
	}
	if err != nil {
		return nil, err
	}
	defer proc.Kill()
	ictx, cancel := context.WithTimeout(ctx, c.cfg.CallTimeout)
	defer cancel()
	info, err := proc.Info(ictx)
	if err != nil {
		return nil, err
	}
	if len(info.Types) == 0 {
		return nil, fmt.Errorf("plugin serves no types")
	}
	for _, k := range info.Types {
		if !k.Kind.Valid() {
			return nil, fmt.Errorf("plugin reports unknown kind %q for type %q", k.Kind, k.Type)
		}
	}
	info.Types = normalizedTypes(info.Types)
	return &Binary{Path: path, SHA256: sum, Info: info}, nil
}

// launchConfig: a plugin's logs appear under its file name; the built-in
// server's under "builtin" (its file is the ejob binary itself).
func (c *Catalog) launchConfig(path string, args []string, builtin bool) transport.LaunchConfig {
	name := filepath.Base(path)
	if builtin {
		name = "builtin"
	}
	return transport.LaunchConfig{
		Path:         path,
		Args:         args,
		Name:         name,
		Logger:       c.cfg.Logger,
		StartTimeout: c.cfg.StartTimeout,
		StopGrace:    c.cfg.StopGrace,
	}
}

// Binaries lists every usable binary, built-in first, then by path.
func (c *Catalog) Binaries() []Binary {
	out := append([]Binary(nil), c.binaries...)
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].Builtin != out[j].Builtin {
			return out[i].Builtin
		}
		return out[i].Path < out[j].Path
	})
	return out
}

// Skipped lists the directory entries that were not loaded, with reasons.
func (c *Catalog) Skipped() []Skipped { return append([]Skipped(nil), c.skipped...) }

// Types lists the type names available for a kind, sorted.
func (c *Catalog) Types(kind spi.Kind) []string {
	var names []string
	for k := range c.byType {
		if k.Kind == kind {
			names = append(names, k.Type)
		}
	}
	sort.Strings(names)
	return names
}

// Provider reports which binary serves a type.
func (c *Catalog) Provider(kind spi.Kind, name string) (Binary, error) {
	sup, err := c.lookup(kind, name)
	if err != nil {
		return Binary{}, err
	}
	return sup.bin, nil
}

func (c *Catalog) lookup(kind spi.Kind, name string) (*supervisor, error) {
	key := spi.TypeKey{Kind: kind, Type: spi.NormalizeType(name)}
	if sup, ok := c.byType[key]; ok {
		return sup, nil
	}
	where := "no plugins directory configured"
	if c.cfg.Dir != "" {
		where = "plugins directory " + c.cfg.Dir
	}
	avail := strings.Join(c.Types(kind), ", ")
	if avail == "" {
		avail = "none"
	}
	return nil, fmt.Errorf("%w: no %s type %q (available: %s; searched the built-ins and %s)", spi.ErrUnknownType, kind, name, avail, where)
}

// Lookup implements spi.Resolver: it returns a client of the type of kind
// registered under name (matched case-insensitively) whose calls run on
// the process of the binary that serves it (started on first use,
// relaunched after it exits). Every call is bounded by CallTimeout except
// a job type's Execute, which is bounded by its ctx (the job's execution
// timeout) and, once that ends, by the stop grace: a plugin that does not
// stop the item within it is killed. An unknown name is an error wrapping
// spi.ErrUnknownType that lists the available types and where the catalog
// looked.
func (c *Catalog) Lookup(kind spi.Kind, name string) (any, error) {
	sup, err := c.lookup(kind, name)
	if err != nil {
		return nil, err
	}
	return transport.NewClient(sup, kind, name)
}

var _ spi.Resolver = (*Catalog)(nil)

// Close stops every plugin process the catalog started. It is idempotent.
func (c *Catalog) Close() error {
	c.closeOnce.Do(func() {
		var wg sync.WaitGroup
		for _, s := range c.sups {
			wg.Add(1)
			go func() {
				defer wg.Done()
				s.close()
			}()
		}
		wg.Wait()
	})
	return nil
}
