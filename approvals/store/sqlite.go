package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"path/filepath"

	"github.com/ncruces/go-sqlite3"
	_ "github.com/ncruces/go-sqlite3/driver" // registers "sqlite3"
)

// OpenSQLite opens (creating or migrating) the SQLite store at path, an
// absolute file path. It serves one toolgate process: a WaitAnswered is
// released by answers given through this store only (an in-process
// broadcast), so two servers must not share the file; PostgreSQL is the
// store for replicas.
func OpenSQLite(ctx context.Context, path string, opts Options) (Store, error) {
	if !filepath.IsAbs(path) {
		return nil, fmt.Errorf("sqlite store: path must be absolute, got %q", path)
	}
	q := url.Values{}
	// WAL lets reads run beside the writer; synchronous=full makes a
	// committed answer survive a power loss, not only a crash; the busy
	// timeout covers another process (a CLI) holding the write lock.
	q.Add("_pragma", "busy_timeout(5000)")
	q.Add("_pragma", "journal_mode(wal)")
	q.Add("_pragma", "synchronous(full)")
	q.Set("_txlock", "immediate")
	dsn := (&url.URL{Scheme: "file", OmitHost: true, Path: path, RawQuery: q.Encode()}).String()
	db, err := sql.Open("sqlite3", dsn)
	if err != nil {
		return nil, fmt.Errorf("sqlite store: %w", err)
	}
	// One connection: SQLite has one writer anyway, and a single
	// connection never meets SQLITE_BUSY from its own process.
	db.SetMaxOpenConns(1)
	s := newSQLStore(db, dialect{
		name: "sqlite",
		blob: "BLOB",
		isUnique: func(err error) bool {
			return errors.Is(err, sqlite3.CONSTRAINT_PRIMARYKEY) || errors.Is(err, sqlite3.CONSTRAINT_UNIQUE)
		},
	}, opts)
	if err := s.migrate(ctx); err != nil {
		db.Close()
		return nil, err
	}
	return s, nil
}
