package store

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"time"
)

// Config is where a central toolgate keeps its approvals (the approvals
// section of the config file; field paths in errors are approvals.*).
// The URL of a PostgreSQL database holds its password, so the file names
// the environment variable that holds it, never the URL itself.
type Config struct {
	// Store is sqlite (one server; the default) or postgres (several
	// replicas over one database).
	Store string `yaml:"store"`
	// SQLitePath is the SQLite database file, absolute.
	SQLitePath string `yaml:"sqlite_path"`
	// PostgresURLEnv names the environment variable holding the
	// PostgreSQL connection URL (postgres://user:password@host/db).
	PostgresURLEnv string `yaml:"postgres_url_env"`
	// QueryTimeout bounds each query.
	QueryTimeout time.Duration `yaml:"query_timeout"`
	// PollInterval is how often a waiting check re-reads its approval
	// when no notification came (PostgreSQL).
	PollInterval time.Duration `yaml:"poll_interval"`
}

// DefaultConfig returns the defaults: SQLite in /var/lib/toolgate.
func DefaultConfig() Config {
	return Config{
		Store:          "sqlite",
		SQLitePath:     "/var/lib/toolgate/approvals.db",
		PostgresURLEnv: "TOOLGATE_POSTGRES_URL",
		QueryTimeout:   5 * time.Second,
		PollInterval:   2 * time.Second,
	}
}

var envName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// Validate reports every bad field.
func (c *Config) Validate() error {
	var errs []error
	bad := func(field, format string, a ...any) {
		errs = append(errs, fmt.Errorf("approvals.%s: %s", field, fmt.Sprintf(format, a...)))
	}
	switch c.Store {
	case "sqlite":
		if !filepath.IsAbs(c.SQLitePath) {
			bad("sqlite_path", "must be an absolute path, got %q", c.SQLitePath)
		}
	case "postgres":
		switch {
		case strings.Contains(c.PostgresURLEnv, "://") || strings.Contains(c.PostgresURLEnv, "="):
			// Said without the value: it may be a URL with its password.
			bad("postgres_url_env", "names the environment variable that holds the URL, not the URL itself")
		case !envName.MatchString(c.PostgresURLEnv):
			bad("postgres_url_env", "must be an environment variable's name, got %q", c.PostgresURLEnv)
		}
	default:
		bad("store", "must be sqlite or postgres, got %q", c.Store)
	}
	if c.QueryTimeout <= 0 {
		bad("query_timeout", "must be positive, got %s", c.QueryTimeout)
	}
	if c.PollInterval <= 0 {
		bad("poll_interval", "must be positive, got %s", c.PollInterval)
	}
	return errors.Join(errs...)
}

// Open opens the configured store. getenv reads the PostgreSQL URL's
// variable (os.Getenv when nil).
func (c *Config) Open(ctx context.Context, getenv func(string) string) (Store, error) {
	if getenv == nil {
		getenv = os.Getenv
	}
	opts := Options{QueryTimeout: c.QueryTimeout, PollInterval: c.PollInterval}
	switch c.Store {
	case "sqlite":
		return OpenSQLite(ctx, c.SQLitePath, opts)
	case "postgres":
		url := getenv(c.PostgresURLEnv)
		if url == "" {
			return nil, fmt.Errorf("approvals.postgres_url_env: the environment variable %s is empty or unset", c.PostgresURLEnv)
		}
		return OpenPostgres(ctx, url, opts)
	}
	return nil, fmt.Errorf("approvals.store: must be sqlite or postgres, got %q", c.Store)
}
