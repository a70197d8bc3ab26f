package store

import (
	"context"
	"database/sql"
	"errors"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/stdlib"
)

// notifyChannel is the PostgreSQL channel an answer is announced on; the
// payload is the approval's id.
const notifyChannel = "toolgate_approvals"

// OpenPostgres opens (creating or migrating) the PostgreSQL store at url
// (a libpq connection string or postgres:// URL). Several stores, in
// several processes, may share one database: an answer given through one
// releases WaitAnswered on all of them (LISTEN/NOTIFY, with a poll every
// Options.PollInterval in case a notification is lost).
func OpenPostgres(ctx context.Context, url string, opts Options) (Store, error) {
	cfg, err := pgx.ParseConfig(url)
	if err != nil {
		// pgx's message may quote the URL, password included.
		return nil, errors.New("postgres store: the connection URL does not parse")
	}
	if cfg.ConnectTimeout == 0 {
		cfg.ConnectTimeout = 10 * time.Second
	}
	db := stdlib.OpenDB(*cfg)
	db.SetMaxOpenConns(16)
	db.SetMaxIdleConns(4)
	db.SetConnMaxIdleTime(5 * time.Minute)
	s := newSQLStore(db, dialect{
		name:     "postgres",
		numbered: true,
		blob:     "BYTEA",
		// Serializes replicas migrating at the same time; the key is
		// "toolgate" in ASCII.
		lockMigrations: "SELECT pg_advisory_xact_lock(8390047142196114533)",
		lockPending:    "SELECT pg_advisory_xact_lock(8390047142196114534)",
		isUnique: func(err error) bool {
			var pe *pgconn.PgError
			return errors.As(err, &pe) && pe.Code == "23505"
		},
		answered: func(ctx context.Context, tx *sql.Tx, id string) error {
			// Delivered to the listeners when the transaction commits.
			_, err := tx.ExecContext(ctx, `SELECT pg_notify($1, $2)`, notifyChannel, id)
			return err
		},
	}, opts)
	if err := s.migrate(ctx); err != nil {
		db.Close()
		return nil, err
	}
	l := &listener{cfg: cfg, hub: s.hub, stop: make(chan struct{})}
	l.wg.Add(1)
	go l.run()
	s.closeExtra = l.close
	return s, nil
}

// listener holds one connection LISTENing for answers and wakes this
// store's waiters. When the connection drops it reconnects with backoff
// and wakes every waiter, since notifications sent meanwhile are lost.
type listener struct {
	cfg  *pgx.ConnConfig
	hub  *hub
	stop chan struct{}
	wg   sync.WaitGroup
	once sync.Once
}

func (l *listener) close() {
	l.once.Do(func() { close(l.stop) })
	l.wg.Wait()
}

func (l *listener) run() {
	defer l.wg.Done()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		<-l.stop
		cancel()
	}()
	backoff := 100 * time.Millisecond
	for ctx.Err() == nil {
		if err := l.listen(ctx); err != nil && ctx.Err() == nil {
			l.hub.wakeAll()
			select {
			case <-ctx.Done():
			case <-time.After(backoff):
			}
			backoff = min(2*backoff, 10*time.Second)
			continue
		}
		backoff = 100 * time.Millisecond
	}
}

func (l *listener) listen(ctx context.Context) error {
	cctx, cancel := context.WithTimeout(ctx, l.cfg.ConnectTimeout)
	conn, err := pgx.ConnectConfig(cctx, l.cfg)
	cancel()
	if err != nil {
		return err
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(ctx, "LISTEN "+notifyChannel); err != nil {
		return err
	}
	// Answers given before LISTEN took effect were not notified here.
	l.hub.wakeAll()
	for {
		n, err := conn.WaitForNotification(ctx)
		if err != nil {
			return err
		}
		l.hub.wake(n.Payload)
	}
}
