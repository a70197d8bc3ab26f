package store

import (
	"strings"
	"testing"
)

func TestConfigValidate(t *testing.T) {
	def := DefaultConfig()
	if err := def.Validate(); err != nil {
		t.Fatalf("the defaults: %v", err)
	}
	for _, c := range []struct {
		name   string
		mutate func(*Config)
		want   string // "" means valid
	}{
		{"postgres", func(c *Config) { c.Store = "postgres" }, ""},
		{"unknown store", func(c *Config) { c.Store = "mysql" }, `approvals.store: must be sqlite or postgres, got "mysql"`},
		{"relative sqlite path", func(c *Config) { c.SQLitePath = "approvals.db" }, `approvals.sqlite_path: must be an absolute path`},
		{"no sqlite path", func(c *Config) { c.SQLitePath = "" }, `approvals.sqlite_path: must be an absolute path`},
		{"a URL for the variable", func(c *Config) { c.Store, c.PostgresURLEnv = "postgres", "postgres://u:s3cret@db/x" }, `approvals.postgres_url_env: names the environment variable`},
		{"a DSN for the variable", func(c *Config) { c.Store, c.PostgresURLEnv = "postgres", "host=db password=s3cret" }, `approvals.postgres_url_env: names the environment variable`},
		{"no variable", func(c *Config) { c.Store, c.PostgresURLEnv = "postgres", "" }, `approvals.postgres_url_env: must be an environment variable's name`},
		{"zero query timeout", func(c *Config) { c.QueryTimeout = 0 }, `approvals.query_timeout: must be positive`},
		{"zero poll interval", func(c *Config) { c.PollInterval = -1 }, `approvals.poll_interval: must be positive`},
	} {
		cfg := DefaultConfig()
		c.mutate(&cfg)
		err := cfg.Validate()
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%s: %v", c.name, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%s: %v, want %q", c.name, err, c.want)
		case err != nil && strings.Contains(err.Error(), "s3cret"):
			t.Errorf("%s: the error shows the password: %v", c.name, err)
		}
	}
}

func TestConfigOpenPostgresNeedsTheVariable(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Store = "postgres"
	_, err := cfg.Open(t.Context(), func(string) string { return "" })
	if err == nil || !strings.Contains(err.Error(), "TOOLGATE_POSTGRES_URL") {
		t.Fatalf("open with the variable unset: %v", err)
	}
}

func TestConfigOpenSQLite(t *testing.T) {
	cfg := DefaultConfig()
	cfg.SQLitePath = t.TempDir() + "/approvals.db"
	s, err := cfg.Open(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
}

func TestPlaceholders(t *testing.T) {
	s := &sqlStore{d: dialect{numbered: true}, q: map[string]string{}}
	if got := s.query(`SELECT a FROM t WHERE b = ? AND (? = '' OR c = ?)`); got != `SELECT a FROM t WHERE b = $1 AND ($2 = '' OR c = $3)` {
		t.Fatal(got)
	}
	if got := clampLimit(MaxLimit + 1); got != MaxLimit {
		t.Fatalf("a limit past the maximum: %d", got)
	}
	if got := clampLimit(0); got != DefaultLimit {
		t.Fatalf("no limit: %d", got)
	}
}
