package cli

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/ejob-io/ejob/core/reg"
	"github.com/ejob-io/ejob/core/reg/zookeeper"
	"github.com/ejob-io/ejob/host/httpapi"
	"github.com/ejob-io/ejob/host/namespaces"
	"github.com/ejob-io/ejob/host/pluginhost"
	"github.com/ejob-io/ejob/spi"
)

// switchTimeout bounds connecting to another registry center or data
// source.
const switchTimeout = 15 * time.Second

// nsSwitcher is `ejob serve`'s httpapi.Switcher: it connects to a
// registry center of the namespaces store and points the server at it,
// then closes the previous one; or it opens the
// RDB sink on a data source. The process's own registry (its flags or
// file) stays connected for the life of the process, so switching back
// is immediate. Which one is in use is not persisted: a restarted `ejob
// serve` starts on its own.
type nsSwitcher struct {
	log hclog.Logger
	srv *httpapi.Server
	// own is the process's registry, ownInfo as shown.
	own     reg.Client
	ownInfo httpapi.RegistryInfo
	// ownTracer is the process's own event-trace sink and settings (nil:
	// none).
	ownTracer spi.Tracer
	ownConfig map[string]string

	mu  sync.Mutex // one switch at a time
	cur reg.Client // nil: own
	cat *pluginhost.Catalog
	rdb spi.Tracer
}

// UseRegistry implements httpapi.Switcher.
func (s *nsSwitcher) UseRegistry(ctx context.Context, r *namespaces.Registry) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	prev := s.cur
	if r == nil {
		s.srv.SetRegistry(s.own, s.ownInfo)
		s.cur = nil
		s.log.Info("switched back to the registry center of the configuration", "servers", s.ownInfo.ZKAddressList, "namespace", s.ownInfo.Namespace)
	} else {
		run, err := s.connect(ctx, *r)
		if err != nil {
			return err
		}
		s.srv.SetRegistry(run, httpapi.RegistryInfo{Name: r.Name, ZKAddressList: r.Servers, Namespace: r.Namespace, HasDigest: r.Digest != ""})
		s.cur = run
		s.log.Info("switched registry center", "name", r.Name, "servers", r.Servers, "namespace", r.Namespace)
	}
	if prev != nil {
		// Requests still running on it fail with "closed": the page
		// refreshes on the new one.
		_ = prev.Close()
	}
	return nil
}

// connect opens r and checks that its namespace can be read (the digest is
// right).
func (s *nsSwitcher) connect(ctx context.Context, r namespaces.Registry) (reg.Client, error) {
	cfg := zookeeper.DefaultConfig(r.Servers, r.Namespace)
	cfg.Digest = r.Digest
	cfg.Logger = s.log.Named("zookeeper")
	ctx, cancel := context.WithTimeout(ctx, switchTimeout)
	defer cancel()
	c, err := zookeeper.Connect(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("registry center %s: connect to ZooKeeper %s: %w", r.Name, r.Servers, err)
	}
	if _, err := c.Children(ctx, "/"); err != nil && !errors.Is(err, reg.ErrNoNode) {
		_ = c.Close()
		if errors.Is(err, reg.ErrNoAuth) {
			err = fmt.Errorf("%w (the namespace belongs to another digest identity: check the digest)", err)
		}
		return nil, fmt.Errorf("registry center %s: read namespace %s: %w", r.Name, r.Namespace, err)
	}
	return c, nil
}

// UseDataSource implements httpapi.Switcher: the built-in RDB sink (one
// plugin process, started at the first switch) on d, checked with one
// query.
func (s *nsSwitcher) UseDataSource(ctx context.Context, d *namespaces.DataSource) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if d == nil {
		s.srv.SetTrace(s.ownTracer, s.ownConfig, httpapi.DefaultDataSource)
		s.log.Info("switched event-trace data source", "name", httpapi.DefaultDataSource)
		return nil
	}
	cfg, err := s.check(ctx, *d)
	if err != nil {
		return err
	}
	s.srv.SetTrace(s.rdb, cfg, d.Name)
	s.log.Info("switched event-trace data source", "name", d.Name, "driver", d.Driver, "url", namespaces.MaskDSN(d.URL))
	return nil
}

// TestDataSource implements httpapi.Switcher: d is checked as
// UseDataSource checks it, and nothing is switched.
func (s *nsSwitcher) TestDataSource(ctx context.Context, d namespaces.DataSource) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, err := s.check(ctx, d)
	return err
}

// check opens the built-in RDB sink on d (its plugin started at the first
// call) and runs one query; it answers the sink's settings. s.mu is held.
func (s *nsSwitcher) check(ctx context.Context, d namespaces.DataSource) (map[string]string, error) {
	if s.rdb == nil {
		b, err := builtinSource()
		if err != nil {
			return nil, err
		}
		cat, err := pluginhost.Open(ctx, pluginhost.Config{Builtin: b, Logger: s.log})
		if err != nil {
			return nil, fmt.Errorf("data source %s: %w", d.Name, err)
		}
		tr, err := spi.Resolve[spi.Tracer](cat, "RDB")
		if err != nil {
			_ = cat.Close()
			return nil, fmt.Errorf("data source %s: %w", d.Name, err)
		}
		s.cat, s.rdb = cat, tr
	}
	cfg := map[string]string{"driver": d.Driver, "url": d.URL}
	if d.Username != "" {
		cfg["username"] = d.Username
	}
	if d.Password != "" {
		cfg["password"] = d.Password
	}
	ctx, cancel := context.WithTimeout(ctx, switchTimeout)
	defer cancel()
	if _, err := s.rdb.QueryExecutions(ctx, spi.ExecutionQuery{Config: cfg, Limit: 1}); err != nil {
		return nil, fmt.Errorf("data source %s: %w", d.Name, err)
	}
	return cfg, nil
}

// Close stops the registry switched to, if any, and the RDB sink's
// plugin.
func (s *nsSwitcher) Close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cur != nil {
		_ = s.cur.Close()
		s.cur = nil
	}
	if s.cat != nil {
		_ = s.cat.Close()
	}
}
