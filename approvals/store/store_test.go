package store_test

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"
	_ "github.com/ncruces/go-sqlite3/driver"

	"github.com/toolgate/toolgate/approvals/store"
	"github.com/toolgate/toolgate/approvals/store/pgtest"
	"github.com/toolgate/toolgate/approvals/store/storetest"
)

type sqliteBackend struct{}

func (sqliteBackend) Shared() bool { return false }

func (sqliteBackend) NewDB(t *testing.T) storetest.DB {
	return sqliteDB(filepath.Join(t.TempDir(), "approvals.db"))
}

type sqliteDB string

func (p sqliteDB) Open(ctx context.Context, opts store.Options) (store.Store, error) {
	return store.OpenSQLite(ctx, string(p), opts)
}

func (p sqliteDB) SetSchemaVersion(ctx context.Context, v int) error {
	db, err := sql.Open("sqlite3", "file:"+string(p))
	if err != nil {
		return err
	}
	defer db.Close()
	_, err = db.ExecContext(ctx, `UPDATE approvals_schema SET version = ?`, v)
	return err
}

func TestSQLite(t *testing.T) {
	storetest.Run(t, sqliteBackend{})
}

func TestSQLiteRelativePath(t *testing.T) {
	if _, err := store.OpenSQLite(t.Context(), "approvals.db", store.Options{}); err == nil {
		t.Fatal("opened a relative path")
	}
}

// One cluster serves every PostgreSQL test of the package, a fresh
// database for each.
var pg struct {
	once    sync.Once
	cluster *pgtest.Cluster
	err     error
}

func TestMain(m *testing.M) {
	code := m.Run()
	if pg.cluster != nil {
		if err := pg.cluster.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, err)
			code = 1
		}
	}
	os.Exit(code)
}

type pgBackend struct{}

func (pgBackend) Shared() bool { return true }

func (pgBackend) NewDB(t *testing.T) storetest.DB {
	url, err := pg.cluster.NewDatabase(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	return pgDB(url)
}

type pgDB string

func (u pgDB) Open(ctx context.Context, opts store.Options) (store.Store, error) {
	return store.OpenPostgres(ctx, string(u), opts)
}

func (u pgDB) SetSchemaVersion(ctx context.Context, v int) error {
	conn, err := pgx.Connect(ctx, string(u))
	if err != nil {
		return err
	}
	defer conn.Close(context.Background())
	_, err = conn.Exec(ctx, `UPDATE approvals_schema SET version = $1`, v)
	return err
}

func startPostgres(t *testing.T) {
	pgtest.SkipOrFail(t)
	pg.once.Do(func() { pg.cluster, pg.err = pgtest.Start() })
	if pg.err != nil {
		t.Fatal(pg.err)
	}
}

func TestPostgres(t *testing.T) {
	startPostgres(t)
	storetest.Run(t, pgBackend{})
}

func TestPostgresBadURL(t *testing.T) {
	_, err := store.OpenPostgres(t.Context(), "postgres://user:s3cret@[bad", store.Options{})
	if err == nil || strings.Contains(err.Error(), "s3cret") {
		t.Fatalf("a bad URL: %v; want an error that does not show the password", err)
	}
}

// TestSchemaTooNewDocumented: the refusal of a newer schema reads as
// docs/approvals.md shows it.
func TestSchemaTooNewDocumented(t *testing.T) {
	startPostgres(t)
	doc, err := os.ReadFile(filepath.Join("..", "..", "docs", "approvals.md"))
	if err != nil {
		t.Fatal(err)
	}
	db := pgBackend{}.NewDB(t)
	s, err := db.Open(t.Context(), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	if err := db.SetSchemaVersion(t.Context(), store.SchemaVersion+1); err != nil {
		t.Fatal(err)
	}
	_, err = db.Open(t.Context(), store.Options{})
	if err == nil {
		t.Fatal("opened a newer schema")
	}
	if !strings.Contains(string(doc), "```\n"+err.Error()+"\n```") {
		t.Fatalf("docs/approvals.md does not show the error as it is:\n%v", err)
	}
}
