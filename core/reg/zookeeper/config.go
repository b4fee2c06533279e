package zookeeper

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/ejob-io/ejob/core/config"
	"github.com/ejob-io/ejob/core/reg"
)

// Defaults, as ElasticJob's ZookeeperConfiguration and Curator's.
const (
	DefaultBaseSleepTimeMilliseconds     = 1000
	DefaultMaxSleepTimeMilliseconds      = 3000
	DefaultMaxRetries                    = 3
	DefaultSessionTimeoutMilliseconds    = 60000
	DefaultConnectionTimeoutMilliseconds = 15000
)

// Config is ElasticJob's ZookeeperConfiguration. Zero durations mean the
// defaults (as upstream, where 0 timeouts mean Curator's defaults);
// MaxRetries is taken literally (0: no retries), so start from DefaultConfig.
type Config struct {
	// ServerLists is the connect string "host:port,host:port".
	ServerLists string `json:"serverLists" yaml:"serverLists"`
	// Namespace is the chroot every path is relative to (no leading "/";
	// may contain "/"). Created as needed.
	Namespace string `json:"namespace" yaml:"namespace"`
	// BaseSleepTimeMilliseconds is the first retry back-off (default 1000).
	BaseSleepTimeMilliseconds int `json:"baseSleepTimeMilliseconds" yaml:"baseSleepTimeMilliseconds"`
	// MaxSleepTimeMilliseconds caps one retry back-off (default 3000).
	MaxSleepTimeMilliseconds int `json:"maxSleepTimeMilliseconds" yaml:"maxSleepTimeMilliseconds"`
	// MaxRetries is how many times a failed retryable operation is retried
	// (default 3).
	MaxRetries int `json:"maxRetries" yaml:"maxRetries"`
	// SessionTimeoutMilliseconds is the requested session timeout (default
	// 60000); the server clamps it to [2, 20] x its tickTime.
	SessionTimeoutMilliseconds int `json:"sessionTimeoutMilliseconds" yaml:"sessionTimeoutMilliseconds"`
	// ConnectionTimeoutMilliseconds bounds how long one attempt of an
	// operation waits for a connection, and each phase of one connection
	// attempt: the dial, the server's connect response, the SASL exchange
	// (default 15000).
	ConnectionTimeoutMilliseconds int `json:"connectionTimeoutMilliseconds" yaml:"connectionTimeoutMilliseconds"`
	// Digest is "user:password": the client authenticates with the digest
	// scheme and every node it creates gets CREATOR_ALL_ACL. Empty: open ACL.
	Digest string `json:"digest,omitempty" yaml:"digest,omitempty"`
	// SASL authenticates every connection with SASL (DIGEST-MD5 or
	// GSSAPI) before any other request; zero: none.
	SASL SASL `json:"sasl,omitzero" yaml:"sasl,omitempty"`

	// Logger receives the client's and go-zookeeper's logs (default: none).
	Logger hclog.Logger `json:"-" yaml:"-"`
	// Dialer opens TCP connections to servers (default net.Dialer); tests
	// put proxies here.
	Dialer func(ctx context.Context, network, address string) (net.Conn, error) `json:"-" yaml:"-"`
}

// DefaultConfig returns a Config with the upstream defaults.
func DefaultConfig(serverLists, namespace string) Config {
	return Config{
		ServerLists:                   serverLists,
		Namespace:                     namespace,
		BaseSleepTimeMilliseconds:     DefaultBaseSleepTimeMilliseconds,
		MaxSleepTimeMilliseconds:      DefaultMaxSleepTimeMilliseconds,
		MaxRetries:                    DefaultMaxRetries,
		SessionTimeoutMilliseconds:    DefaultSessionTimeoutMilliseconds,
		ConnectionTimeoutMilliseconds: DefaultConnectionTimeoutMilliseconds,
	}
}

// withDefaults fills zero durations.
func (c Config) withDefaults() Config {
	if c.BaseSleepTimeMilliseconds == 0 {
		c.BaseSleepTimeMilliseconds = DefaultBaseSleepTimeMilliseconds
	}
	if c.MaxSleepTimeMilliseconds == 0 {
		c.MaxSleepTimeMilliseconds = DefaultMaxSleepTimeMilliseconds
	}
	if c.SessionTimeoutMilliseconds == 0 {
		c.SessionTimeoutMilliseconds = DefaultSessionTimeoutMilliseconds
	}
	if c.ConnectionTimeoutMilliseconds == 0 {
		c.ConnectionTimeoutMilliseconds = DefaultConnectionTimeoutMilliseconds
	}
	if c.Logger == nil {
		c.Logger = hclog.NewNullLogger()
	}
	return c
}

// Servers returns the connect string split into host:port entries.
func (c Config) Servers() []string {
	var out []string
	for _, s := range strings.Split(c.ServerLists, ",") {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	return out
}

// FieldError is one invalid Config field (by its upstream key).
type FieldError struct {
	Field  string // e.g. "serverLists"
	Reason string
}

func (e *FieldError) Error() string { return "zookeeper config: " + e.Field + ": " + e.Reason }

// Validate reports every invalid field, naming it, in one error wrapping
// reg.ErrInvalidArgument and an errors.Join of *FieldError (use errors.As
// or walk the join). Zero durations are valid (defaults).
func (c Config) Validate() error {
	var errs []error
	bad := func(field, format string, a ...any) {
		errs = append(errs, &FieldError{Field: field, Reason: fmt.Sprintf(format, a...)})
	}
	servers := c.Servers()
	if len(servers) == 0 {
		bad("serverLists", "must list at least one host:port")
	}
	for _, s := range servers {
		host, port, err := net.SplitHostPort(s)
		if err != nil {
			bad("serverLists", "%q is not host:port: %v", s, err)
			continue
		}
		if host == "" {
			bad("serverLists", "%q has no host", s)
		}
		if p, err := strconv.Atoi(port); err != nil || p <= 0 || p > 65535 {
			bad("serverLists", "%q has an invalid port", s)
		}
	}
	if c.Namespace != "" {
		if strings.HasPrefix(c.Namespace, "/") || strings.HasSuffix(c.Namespace, "/") {
			bad("namespace", "%q must not start or end with /", c.Namespace)
		} else if err := reg.ValidatePath("/"+c.Namespace, false); err != nil {
			bad("namespace", "%v", err)
		} else if len(c.Namespace) > config.MaxNamespaceBytes {
			bad("namespace", "%d bytes is above the limit of %d bytes (every node path holds it, and a job's "+
				"resharding commit must fit ZooKeeper's packet limit)", len(c.Namespace), config.MaxNamespaceBytes)
		}
	}
	for _, f := range []struct {
		name string
		v    int
	}{
		{"baseSleepTimeMilliseconds", c.BaseSleepTimeMilliseconds},
		{"maxSleepTimeMilliseconds", c.MaxSleepTimeMilliseconds},
		{"maxRetries", c.MaxRetries},
		{"sessionTimeoutMilliseconds", c.SessionTimeoutMilliseconds},
		{"connectionTimeoutMilliseconds", c.ConnectionTimeoutMilliseconds},
	} {
		if f.v < 0 {
			bad(f.name, "must not be negative, got %d", f.v)
		}
	}
	if c.MaxRetries > 29 {
		bad("maxRetries", "must be at most 29 (Curator's limit), got %d", c.MaxRetries)
	}
	d := c.withDefaults()
	if d.MaxSleepTimeMilliseconds < d.BaseSleepTimeMilliseconds && c.BaseSleepTimeMilliseconds >= 0 && c.MaxSleepTimeMilliseconds >= 0 {
		bad("maxSleepTimeMilliseconds", "%d is less than baseSleepTimeMilliseconds %d", d.MaxSleepTimeMilliseconds, d.BaseSleepTimeMilliseconds)
	}
	if c.Digest != "" {
		if u, p, ok := strings.Cut(c.Digest, ":"); !ok || u == "" || p == "" {
			bad("digest", "must be user:password")
		}
	}
	c.SASL.validate(bad)
	if len(errs) == 0 {
		return nil
	}
	return fmt.Errorf("%w: %w", reg.ErrInvalidArgument, errors.Join(errs...))
}

func ms(n int) time.Duration { return time.Duration(n) * time.Millisecond }
