package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"
)

// migrations are the schema's versions: migrations[i] takes the schema
// from version i to i+1. Append only; never edit a released one. {{blob}}
// is the dialect's binary type.
var migrations = []string{
	`CREATE TABLE approvals_pending (
		id TEXT PRIMARY KEY,
		created BIGINT NOT NULL,
		deadline BIGINT NOT NULL,
		request {{blob}} NOT NULL,
		display TEXT NOT NULL,
		host TEXT NOT NULL,
		project TEXT NOT NULL,
		session TEXT NOT NULL,
		tool TEXT NOT NULL,
		policy TEXT NOT NULL,
		reason TEXT NOT NULL,
		last_words TEXT NOT NULL,
		on_timeout TEXT NOT NULL,
		status TEXT NOT NULL,
		answer_status TEXT NOT NULL,
		answer_by TEXT NOT NULL,
		answer_at BIGINT NOT NULL,
		answer_how TEXT NOT NULL
	);
	CREATE INDEX approvals_pending_status ON approvals_pending (status, created, id);
	CREATE INDEX approvals_pending_deadline ON approvals_pending (status, deadline, id);
	CREATE INDEX approvals_pending_answered ON approvals_pending (status, answer_at);
	CREATE TABLE approvals_rules (
		id TEXT PRIMARY KEY,
		text TEXT NOT NULL,
		project TEXT NOT NULL,
		policy TEXT NOT NULL,
		created_by TEXT NOT NULL,
		created_at BIGINT NOT NULL,
		expires_at BIGINT NOT NULL,
		pending_id TEXT NOT NULL
	);
	CREATE INDEX approvals_rules_expires ON approvals_rules (expires_at);
	CREATE TABLE approvals_records (
		id TEXT PRIMARY KEY,
		at BIGINT NOT NULL,
		host TEXT NOT NULL,
		project TEXT NOT NULL,
		session TEXT NOT NULL,
		tool TEXT NOT NULL,
		decision TEXT NOT NULL,
		source TEXT NOT NULL,
		reason TEXT NOT NULL,
		approval_id TEXT NOT NULL,
		data {{blob}} NOT NULL
	);
	CREATE INDEX approvals_records_at ON approvals_records (at, id);`,
	// 2: who asked, as the centre authenticated them (a local server's
	// token, a client's), on approvals and on the rules they teach.
	`ALTER TABLE approvals_pending ADD COLUMN origin TEXT NOT NULL DEFAULT '';
	CREATE INDEX approvals_pending_origin ON approvals_pending (status, origin);
	ALTER TABLE approvals_rules ADD COLUMN origin TEXT NOT NULL DEFAULT ''`,
	// 3: a learned rule is looked up by the call it names.
	`CREATE INDEX approvals_rules_call ON approvals_rules (text, project, policy, origin, expires_at)`,
}

// SchemaVersion is the schema this code writes and reads.
var SchemaVersion = len(migrations)

// migrate creates or upgrades the schema in one transaction, and refuses
// a schema newer than this code: a newer toolgate may store what this one
// would misread or overwrite.
func (s *sqlStore) migrate(ctx context.Context) error {
	db, d := s.db, s.d
	// A migration may take longer than one query, and runs once at open.
	ctx, cancel := context.WithTimeout(ctx, max(s.opts.QueryTimeout, time.Minute))
	defer cancel()
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("%s store: migrate: %w", d.name, err)
	}
	defer tx.Rollback() //nolint:errcheck // a no-op after Commit
	if d.lockMigrations != "" {
		if _, err := tx.ExecContext(ctx, d.lockMigrations); err != nil {
			return fmt.Errorf("%s store: migrate: lock: %w", d.name, err)
		}
	}
	if _, err := tx.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS approvals_schema (version INTEGER NOT NULL)`); err != nil {
		return fmt.Errorf("%s store: migrate: %w", d.name, err)
	}
	var version int
	err = tx.QueryRowContext(ctx, `SELECT version FROM approvals_schema`).Scan(&version)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		if _, err := tx.ExecContext(ctx, `INSERT INTO approvals_schema (version) VALUES (0)`); err != nil {
			return fmt.Errorf("%s store: migrate: %w", d.name, err)
		}
	case err != nil:
		return fmt.Errorf("%s store: migrate: %w", d.name, err)
	}
	if version > len(migrations) {
		return fmt.Errorf("%s store: %w: the database is at schema version %d, this toolgate knows up to %d; run a newer toolgate against it", d.name, ErrSchemaTooNew, version, len(migrations))
	}
	for v := version; v < len(migrations); v++ {
		for stmt := range strings.SplitSeq(strings.ReplaceAll(migrations[v], "{{blob}}", d.blob), ";") {
			if strings.TrimSpace(stmt) == "" {
				continue
			}
			if _, err := tx.ExecContext(ctx, stmt); err != nil {
				return fmt.Errorf("%s store: migrate to schema version %d: %w", d.name, v+1, err)
			}
		}
	}
	if version < len(migrations) {
		if _, err := tx.ExecContext(ctx, s.query(`UPDATE approvals_schema SET version = ?`), len(migrations)); err != nil {
			return fmt.Errorf("%s store: migrate: %w", d.name, err)
		}
	}
	return tx.Commit()
}
