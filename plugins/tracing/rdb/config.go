package rdb

import (
	"database/sql"
	"fmt"
	"net"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"
	_ "modernc.org/sqlite" // registers database/sql driver "sqlite"

	"github.com/ejob-io/ejob/spi"
	"github.com/ejob-io/ejob/spi/redact"
)

// The data-source settings (TraceWriteRequest.Config and the other
// requests' Config), matched as Spring's relaxed binding does: any case,
// '-' and '_' ignored (maximum-pool-size is maximumPoolSize).
const (
	// KeyDriver is sqlite, postgres (postgresql, pgx) or mysql (mariadb).
	// It may be left out when URL is a JDBC URL or DriverClassName names
	// a known JDBC driver.
	KeyDriver = "driver"
	// KeyDriverClassName is a JDBC driver class (org.postgresql.Driver,
	// com.mysql.cj.jdbc.Driver, org.mariadb.jdbc.Driver, org.sqlite.JDBC),
	// accepted to tell the driver.
	KeyDriverClassName = "driverClassName"
	// KeyURL is a JDBC URL (jdbc:postgresql://host:5432/db,
	// jdbc:mysql://host:3306/db, jdbc:sqlite:/path/file.db) or the Go
	// driver's DSN (postgres://..., user:pass@tcp(host:3306)/db, a file
	// path).
	KeyURL = "url"
	// KeyJDBCURL is Hikari's name of KeyURL.
	KeyJDBCURL = "jdbcUrl"
	// KeyUsername and KeyPassword override the URL's credentials.
	KeyUsername = "username"
	KeyPassword = "password"
	// KeyMaximumPoolSize bounds the open connections (default
	// DefaultPoolSize).
	KeyMaximumPoolSize = "maximumPoolSize"
)

// DefaultPoolSize is the pool size when KeyMaximumPoolSize is unset
// (Hikari's default).
const DefaultPoolSize = 10

// The drivers, as KeyDriver names them.
const (
	DriverSQLite   = "sqlite"
	DriverPostgres = "postgres"
	DriverMySQL    = "mysql"
)

// sqliteBusyTimeout is how long an SQLite writer waits for another
// (another host on the same file) before SQLITE_BUSY.
const sqliteBusyTimeout = 10 * time.Second

// settings is a parsed Config.
type settings struct {
	driver string
	// open returns the pool; it does not connect.
	open     func() (*sql.DB, error)
	poolSize int
	// desc names the database without secrets, for messages.
	desc string
}

func invalid(format string, args ...any) error {
	return fmt.Errorf("%w: rdb tracing: %s", spi.ErrInvalidConfig, fmt.Sprintf(format, args...))
}

func relaxed(key string) string {
	return strings.ToLower(strings.NewReplacer("-", "", "_", "").Replace(key))
}

// parseConfig checks cfg and prepares its pool, without connecting.
func parseConfig(cfg map[string]string) (settings, error) {
	known := []string{KeyDriver, KeyDriverClassName, KeyURL, KeyJDBCURL, KeyUsername, KeyPassword, KeyMaximumPoolSize}
	vals := map[string]string{}
	var unknown []string
	for k, v := range cfg {
		i := slices.IndexFunc(known, func(n string) bool { return relaxed(n) == relaxed(k) })
		if i < 0 {
			unknown = append(unknown, k)
			continue
		}
		vals[known[i]] = strings.TrimSpace(v)
	}
	if len(unknown) > 0 {
		slices.Sort(unknown)
		return settings{}, invalid("unknown dataSource setting(s) %s (known: %s)", strings.Join(unknown, ", "), strings.Join(known, ", "))
	}
	raw := vals[KeyURL]
	if raw == "" {
		raw = vals[KeyJDBCURL]
	} else if vals[KeyJDBCURL] != "" {
		return settings{}, invalid("both %s and %s are set; keep one", KeyURL, KeyJDBCURL)
	}
	if raw == "" {
		return settings{}, invalid("%s is required", KeyURL)
	}
	drv, err := driverOf(vals[KeyDriver], vals[KeyDriverClassName], raw)
	if err != nil {
		return settings{}, err
	}
	s := settings{driver: drv, poolSize: DefaultPoolSize}
	if v := vals[KeyMaximumPoolSize]; v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			return settings{}, invalid("%s: want a positive integer, got %q", KeyMaximumPoolSize, v)
		}
		s.poolSize = n
	}
	user, pass := vals[KeyUsername], vals[KeyPassword]
	switch drv {
	case DriverPostgres:
		err = s.postgres(raw, user, pass)
	case DriverMySQL:
		err = s.mysql(raw, user, pass)
	case DriverSQLite:
		err = s.sqlite(raw)
	}
	return s, err
}

// driverOf tells the driver from the explicit name, the JDBC class or the
// JDBC URL, in that order.
func driverOf(name, class, raw string) (string, error) {
	if name != "" {
		switch strings.ToLower(name) {
		case "sqlite", "sqlite3":
			return DriverSQLite, nil
		case "postgres", "postgresql", "pgx":
			return DriverPostgres, nil
		case "mysql", "mariadb":
			return DriverMySQL, nil
		}
		return "", invalid("%s: unknown driver %q (want sqlite, postgres or mysql)", KeyDriver, name)
	}
	if class != "" {
		switch class {
		case "org.sqlite.JDBC":
			return DriverSQLite, nil
		case "org.postgresql.Driver":
			return DriverPostgres, nil
		case "com.mysql.cj.jdbc.Driver", "com.mysql.jdbc.Driver", "org.mariadb.jdbc.Driver":
			return DriverMySQL, nil
		}
		return "", invalid("%s: unknown driver class %q (known: org.sqlite.JDBC, org.postgresql.Driver, com.mysql.cj.jdbc.Driver, org.mariadb.jdbc.Driver)", KeyDriverClassName, class)
	}
	lower := strings.ToLower(raw)
	switch {
	case strings.HasPrefix(lower, "jdbc:sqlite:"):
		return DriverSQLite, nil
	case strings.HasPrefix(lower, "jdbc:postgresql:"), strings.HasPrefix(lower, "postgres://"), strings.HasPrefix(lower, "postgresql://"):
		return DriverPostgres, nil
	case strings.HasPrefix(lower, "jdbc:mysql:"), strings.HasPrefix(lower, "jdbc:mariadb:"):
		return DriverMySQL, nil
	}
	return "", invalid("%s is required unless %s is a JDBC URL (want sqlite, postgres or mysql)", KeyDriver, KeyURL)
}

// jdbcURL parses jdbc:<sub>://host:port/db?params.
func jdbcURL(raw string) (*url.URL, error) {
	u, err := url.Parse(raw[len("jdbc:"):])
	if err != nil || u.Host == "" {
		return nil, invalid("%s: not a JDBC URL of the form jdbc:<db>://host:port/database (%s)", KeyURL, redact.URLString(raw))
	}
	return u, nil
}

func (s *settings) postgres(raw, user, pass string) error {
	dsn := raw
	if strings.HasPrefix(strings.ToLower(raw), "jdbc:") {
		u, err := jdbcURL(raw)
		if err != nil {
			return err
		}
		u.Scheme = "postgres"
		dsn = u.String()
	}
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		return invalid("%s: not a PostgreSQL URL or DSN: %v", KeyURL, err)
	}
	if user != "" {
		cfg.User = user
	}
	if pass != "" {
		cfg.Password = pass
	}
	s.desc = fmt.Sprintf("postgres %s:%d/%s", cfg.Host, cfg.Port, cfg.Database)
	s.open = func() (*sql.DB, error) { return stdlib.OpenDB(*cfg), nil }
	return nil
}

func (s *settings) mysql(raw, user, pass string) error {
	var cfg *mysql.Config
	if strings.HasPrefix(strings.ToLower(raw), "jdbc:") {
		u, err := jdbcURL(raw)
		if err != nil {
			return err
		}
		if u.RawQuery != "" {
			return invalid("%s: JDBC URL parameters (%s) have no meaning for the Go driver; write a Go DSN (user:password@tcp(host:3306)/db?param=value) to set driver parameters", KeyURL, u.RawQuery)
		}
		cfg = mysql.NewConfig()
		cfg.Net, cfg.Addr = "tcp", u.Host
		if u.Port() == "" {
			cfg.Addr = net.JoinHostPort(u.Hostname(), "3306")
		}
		cfg.DBName = strings.TrimPrefix(u.Path, "/")
		if u.User != nil {
			cfg.User = u.User.Username()
			cfg.Passwd, _ = u.User.Password()
		}
	} else {
		var err error
		if cfg, err = mysql.ParseDSN(raw); err != nil {
			return invalid("%s: not a MySQL DSN (user:password@tcp(host:3306)/db): %v", KeyURL, err)
		}
	}
	if cfg.DBName == "" {
		return invalid("%s: names no database", KeyURL)
	}
	if user != "" {
		cfg.User = user
	}
	if pass != "" {
		cfg.Passwd = pass
	}
	// Timestamps travel as wall-clock fields (see wall).
	cfg.ParseTime, cfg.Loc = true, time.UTC
	s.desc = fmt.Sprintf("mysql %s/%s", cfg.Addr, cfg.DBName)
	s.open = func() (*sql.DB, error) {
		c, err := mysql.NewConnector(cfg)
		if err != nil {
			return nil, err
		}
		return sql.OpenDB(c), nil
	}
	return nil
}

func (s *settings) sqlite(raw string) error {
	path := raw
	if strings.HasPrefix(strings.ToLower(raw), "jdbc:sqlite:") {
		path = raw[len("jdbc:sqlite:"):]
	}
	path = strings.TrimPrefix(path, "file:")
	file, query, _ := strings.Cut(path, "?")
	if file == "" || file == ":memory:" {
		return invalid("%s: want an SQLite file path, got %q", KeyURL, raw)
	}
	q, err := url.ParseQuery(query)
	if err != nil {
		return invalid("%s: bad SQLite parameters %q: %v", KeyURL, query, err)
	}
	q.Add("_pragma", fmt.Sprintf("busy_timeout(%d)", sqliteBusyTimeout.Milliseconds()))
	q.Add("_pragma", "journal_mode(WAL)")
	if q.Get("_txlock") == "" {
		q.Set("_txlock", "immediate")
	}
	dsn := "file:" + file + "?" + q.Encode()
	s.desc = "sqlite " + file
	s.open = func() (*sql.DB, error) { return sql.Open("sqlite", dsn) }
	return nil
}
