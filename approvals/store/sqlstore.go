package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"sync"
	"time"
)

// dialect is what differs between the backends; everything else is one
// implementation over database/sql.
type dialect struct {
	name string
	// numbered rewrites ? placeholders as $1, $2... (PostgreSQL).
	numbered bool
	blob     string // the binary column type
	// lockMigrations serializes concurrent openers inside the migration
	// transaction (PostgreSQL: an advisory lock; SQLite's immediate
	// transactions already do).
	lockMigrations string
	// isUnique reports a primary-key violation.
	isUnique func(error) bool
	// lockPending serializes capped inserts inside their transaction
	// (PostgreSQL: an advisory lock; SQLite's immediate transactions
	// already do).
	lockPending string
	// answered runs after an approval is settled, inside its
	// transaction: PostgreSQL notifies the other replicas.
	answered func(ctx context.Context, tx *sql.Tx, id string) error
}

// sqlStore implements Store over database/sql.
type sqlStore struct {
	db   *sql.DB
	d    dialect
	opts Options
	hub  *hub
	// closeExtra stops what the backend runs beside db (the listener).
	closeExtra func()

	mu     sync.Mutex
	q      map[string]string // the statements, rewritten for the dialect
	closed chan struct{}
	once   sync.Once
}

func newSQLStore(db *sql.DB, d dialect, opts Options) *sqlStore {
	return &sqlStore{db: db, d: d, opts: opts.withDefaults(), hub: newHub(), q: map[string]string{}, closed: make(chan struct{})}
}

// query returns the statement for the dialect. Statements are constants
// of this package: the rewrite only numbers their placeholders.
func (s *sqlStore) query(q string) string {
	if !s.d.numbered {
		return q
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if r, ok := s.q[q]; ok {
		return r
	}
	var b strings.Builder
	n := 0
	for _, c := range q {
		if c == '?' {
			n++
			b.WriteString("$" + strconv.Itoa(n))
			continue
		}
		b.WriteRune(c)
	}
	s.q[q] = b.String()
	return s.q[q]
}

func (s *sqlStore) ctx(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, s.opts.QueryTimeout)
}

func (s *sqlStore) isClosed() bool {
	select {
	case <-s.closed:
		return true
	default:
		return false
	}
}

func (s *sqlStore) Close() error {
	var err error
	s.once.Do(func() {
		close(s.closed)
		if s.closeExtra != nil {
			s.closeExtra()
		}
		s.hub.wakeAll()
		err = s.db.Close()
	})
	return err
}

func ns(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixNano()
}

func fromNS(n int64) time.Time {
	if n == 0 {
		return time.Time{}
	}
	return time.Unix(0, n).UTC()
}

const pendingCols = `id, created, deadline, request, display, host, project, session, tool, policy, reason, last_words, on_timeout, status, answer_status, answer_by, answer_at, answer_how, origin`

type scanner interface{ Scan(...any) error }

func scanPending(r scanner) (Pending, error) {
	var p Pending
	var created, deadline, at int64
	var onTimeout, status, aStatus, how string
	err := r.Scan(&p.ID, &created, &deadline, &p.Request, &p.Display, &p.Host, &p.Project, &p.Session, &p.Tool, &p.Policy, &p.Reason, &p.LastWords,
		&onTimeout, &status, &aStatus, &p.Answer.By, &at, &how, &p.Origin)
	if err != nil {
		return Pending{}, err
	}
	p.Created, p.Deadline = fromNS(created), fromNS(deadline)
	p.OnTimeout, p.Status = Outcome(onTimeout), Status(status)
	if p.Status != StatusPending {
		p.Answer.Status, p.Answer.At, p.Answer.How = Status(aStatus), fromNS(at), How(how)
		switch p.Answer.Status {
		case StatusAllowed:
			p.Answer.Outcome = OutcomeAllow
		case StatusExpired:
			p.Answer.Outcome = p.OnTimeout
		default:
			p.Answer.Outcome = OutcomeDeny
		}
	} else {
		p.Answer.By = ""
	}
	if p.Request == nil {
		p.Request = []byte{}
	}
	return p, nil
}

func (s *sqlStore) CreatePending(ctx context.Context, p Pending) error {
	return s.createPending(ctx, p, 0, 0)
}

func (s *sqlStore) CreatePendingCapped(ctx context.Context, p Pending, maxTotal, maxOrigin int) error {
	if maxTotal <= 0 || maxOrigin <= 0 {
		return fmt.Errorf("%w: caps must be positive, got %d and %d", ErrInvalid, maxTotal, maxOrigin)
	}
	return s.createPending(ctx, p, maxTotal, maxOrigin)
}

// createPending inserts p; with caps (positive), only while fewer than
// maxTotal approvals are pending and fewer than maxOrigin from p.Origin,
// counted in the same transaction under the dialect's lock.
func (s *sqlStore) createPending(ctx context.Context, p Pending, maxTotal, maxOrigin int) error {
	if err := checkPending(&p); err != nil {
		return err
	}
	ctx, cancel := s.ctx(ctx)
	defer cancel()
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return s.wrap("create pending", err)
	}
	defer tx.Rollback() //nolint:errcheck // a no-op after Commit
	if maxTotal > 0 {
		if s.d.lockPending != "" {
			if _, err := tx.ExecContext(ctx, s.d.lockPending); err != nil {
				return s.wrap("create pending: lock", err)
			}
		}
		var total, fromOrigin int64
		if err := tx.QueryRowContext(ctx, s.query(countPending), p.Origin).Scan(&total, &fromOrigin); err != nil {
			return s.wrap("create pending: count", err)
		}
		if total >= int64(maxTotal) || fromOrigin >= int64(maxOrigin) {
			return fmt.Errorf("%w: %d pending, %d from %q; at most %d and %d", ErrFull, total, fromOrigin, p.Origin, maxTotal, maxOrigin)
		}
	}
	_, err = tx.ExecContext(ctx, s.query(`INSERT INTO approvals_pending (`+pendingCols+`)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 'pending', '', '', 0, '', ?)`),
		p.ID, ns(p.Created), ns(p.Deadline), nonNil(p.Request), p.Display, p.Host, p.Project, p.Session, p.Tool, p.Policy, p.Reason, p.LastWords, string(p.OnTimeout), p.Origin)
	if err != nil && s.d.isUnique(err) {
		return fmt.Errorf("pending %q: %w", p.ID, ErrExists)
	}
	if err != nil {
		return s.wrap("create pending", err)
	}
	return s.wrap("create pending", tx.Commit())
}

const countPending = `SELECT COUNT(*), COALESCE(SUM(CASE WHEN origin = ? THEN 1 ELSE 0 END), 0)
		FROM approvals_pending WHERE status = 'pending'`

func nonNil(b []byte) []byte {
	if b == nil {
		return []byte{}
	}
	return b
}

func (s *sqlStore) wrap(op string, err error) error {
	if err == nil {
		return nil
	}
	if s.isClosed() {
		return fmt.Errorf("%s store: %s: %w", s.d.name, op, ErrClosed)
	}
	return fmt.Errorf("%s store: %s: %w", s.d.name, op, err)
}

func (s *sqlStore) GetPending(ctx context.Context, id string) (Pending, error) {
	ctx, cancel := s.ctx(ctx)
	defer cancel()
	p, err := scanPending(s.db.QueryRowContext(ctx, s.query(`SELECT `+pendingCols+` FROM approvals_pending WHERE id = ?`), id))
	if errors.Is(err, sql.ErrNoRows) {
		return Pending{}, fmt.Errorf("pending %q: %w", id, ErrNotFound)
	}
	return p, s.wrap("get pending", err)
}

func (s *sqlStore) ListPending(ctx context.Context, limit int) ([]Pending, error) {
	ctx, cancel := s.ctx(ctx)
	defer cancel()
	rows, err := s.db.QueryContext(ctx, s.query(`SELECT `+pendingCols+` FROM approvals_pending
		WHERE status = 'pending' ORDER BY created, id LIMIT ?`), clampLimit(limit))
	if err != nil {
		return nil, s.wrap("list pending", err)
	}
	defer rows.Close()
	var out []Pending
	for rows.Next() {
		p, err := scanPending(rows)
		if err != nil {
			return nil, s.wrap("list pending", err)
		}
		out = append(out, p)
	}
	return out, s.wrap("list pending", rows.Err())
}

func (s *sqlStore) CountPending(ctx context.Context, origin string) (int, int, error) {
	ctx, cancel := s.ctx(ctx)
	defer cancel()
	var total, fromOrigin int64
	err := s.db.QueryRowContext(ctx, s.query(countPending), origin).Scan(&total, &fromOrigin)
	return int(total), int(fromOrigin), s.wrap("count pending", err)
}

// settle moves one approval from pending to a, in one transaction with
// the dialect's notification and a's rule. The WHERE status = 'pending'
// makes it exactly once: of two concurrent settlers, on any replica, the
// database lets one update the row and the other finds it settled. An
// approver's answer (not an expiry) also needs the deadline not passed
// at a.At.
func (s *sqlStore) settle(ctx context.Context, id string, a Answer) (bool, error) {
	ctx, cancel := s.ctx(ctx)
	defer cancel()
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return false, s.wrap("settle", err)
	}
	defer tx.Rollback() //nolint:errcheck // a no-op after Commit
	// An answer only before the deadline; an expiry whatever the time.
	before := int64(math.MinInt64)
	if a.Status != StatusExpired {
		before = ns(a.At)
	}
	res, err := tx.ExecContext(ctx, s.query(`UPDATE approvals_pending
		SET status = ?, answer_status = ?, answer_by = ?, answer_at = ?, answer_how = ?
		WHERE id = ? AND status = 'pending' AND deadline > ?`),
		string(a.Status), string(a.Status), a.By, ns(a.At), string(a.How), id, before)
	if err != nil {
		return false, s.wrap("settle", err)
	}
	n, err := res.RowsAffected()
	if err != nil || n == 0 {
		return false, s.wrap("settle", err)
	}
	if r := a.Rule; r != nil {
		if err := s.insertRule(ctx, tx, *r); err != nil {
			return false, err
		}
	}
	if s.d.answered != nil {
		if err := s.d.answered(ctx, tx, id); err != nil {
			return false, s.wrap("settle: notify", err)
		}
	}
	if err := tx.Commit(); err != nil {
		return false, s.wrap("settle", err)
	}
	s.hub.wake(id)
	return true, nil
}

func (s *sqlStore) AnswerPending(ctx context.Context, id string, a Answer) (Pending, error) {
	if err := checkAnswer(&a); err != nil {
		return Pending{}, err
	}
	if a.At.IsZero() {
		a.At = s.opts.Now()
	}
	won, err := s.settle(ctx, id, a)
	if err != nil {
		return Pending{}, err
	}
	p, err := s.GetPending(ctx, id)
	if err != nil {
		return Pending{}, err
	}
	if !won && p.Status == StatusPending {
		// Too late: its deadline passed before the answer. Whoever
		// notices settles it, with the policy's outcome.
		if _, err := s.settle(ctx, id, Answer{Status: StatusExpired, At: a.At, How: HowTimeout}); err != nil {
			return Pending{}, err
		}
		if p, err = s.GetPending(ctx, id); err != nil {
			return Pending{}, err
		}
	}
	if !won {
		return p, fmt.Errorf("pending %q: %w (%s by %q)", id, ErrSettled, p.Answer.Status, p.Answer.By)
	}
	return p, nil
}

func (s *sqlStore) ExpireDue(ctx context.Context, now time.Time, limit int) ([]Pending, error) {
	qctx, cancel := s.ctx(ctx)
	rows, err := s.db.QueryContext(qctx, s.query(`SELECT id FROM approvals_pending
		WHERE status = 'pending' AND deadline <= ? ORDER BY deadline, id LIMIT ?`), ns(now), clampLimit(limit))
	if err != nil {
		cancel()
		return nil, s.wrap("expire", err)
	}
	var ids []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			rows.Close()
			cancel()
			return nil, s.wrap("expire", err)
		}
		ids = append(ids, id)
	}
	err = rows.Err()
	rows.Close()
	cancel()
	if err != nil {
		return nil, s.wrap("expire", err)
	}
	var out []Pending
	for _, id := range ids {
		won, err := s.settle(ctx, id, Answer{Status: StatusExpired, At: now, How: HowTimeout})
		if err != nil {
			return out, err
		}
		if !won {
			continue // answered meanwhile
		}
		p, err := s.GetPending(ctx, id)
		if err != nil {
			return out, err
		}
		out = append(out, p)
	}
	return out, nil
}

func (s *sqlStore) WaitAnswered(ctx context.Context, id string) (Answer, error) {
	wake, unsubscribe := s.hub.subscribe(id)
	defer unsubscribe()
	for {
		if s.isClosed() {
			return Answer{}, ErrClosed
		}
		p, err := s.GetPending(ctx, id)
		if err != nil {
			return Answer{}, err
		}
		if p.Status != StatusPending {
			return p.Answer, nil
		}
		now := s.opts.Now()
		if !now.Before(p.Deadline) {
			// Whoever notices the deadline first settles it; a concurrent
			// answer may still win, and the next read shows which did.
			if _, err := s.settle(ctx, id, Answer{Status: StatusExpired, At: now, How: HowTimeout}); err != nil {
				return Answer{}, err
			}
			continue
		}
		wait := p.Deadline.Sub(now)
		if s.d.answered != nil { // another replica may answer: poll as a fallback
			wait = min(wait, s.opts.PollInterval)
		}
		if s.opts.Waiting != nil {
			s.opts.Waiting(id)
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return Answer{}, ctx.Err()
		case <-wake:
		case <-t.C:
		case <-s.closed:
		}
		t.Stop()
	}
}

const ruleCols = `id, text, project, policy, created_by, created_at, expires_at, pending_id, origin`

func (s *sqlStore) AddRule(ctx context.Context, r Rule) error {
	if err := checkRule(&r); err != nil {
		return err
	}
	ctx, cancel := s.ctx(ctx)
	defer cancel()
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return s.wrap("add rule", err)
	}
	defer tx.Rollback() //nolint:errcheck // a no-op after Commit
	if err := s.insertRule(ctx, tx, r); err != nil {
		return err
	}
	return s.wrap("add rule", tx.Commit())
}

// insertRule adds r within tx.
func (s *sqlStore) insertRule(ctx context.Context, tx *sql.Tx, r Rule) error {
	_, err := tx.ExecContext(ctx, s.query(`INSERT INTO approvals_rules (`+ruleCols+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`),
		r.ID, r.Text, r.Project, r.Policy, r.CreatedBy, ns(r.CreatedAt), ns(r.ExpiresAt), r.PendingID, r.Origin)
	if err != nil && s.d.isUnique(err) {
		return fmt.Errorf("rule %q: %w", r.ID, ErrExists)
	}
	return s.wrap("add rule", err)
}

func (s *sqlStore) ListRules(ctx context.Context, at time.Time, limit int) ([]Rule, error) {
	return s.rules(ctx, "list rules", `SELECT `+ruleCols+` FROM approvals_rules
		WHERE created_at <= ? AND expires_at > ? ORDER BY created_at, id LIMIT ?`, ns(at), ns(at), clampLimit(limit))
}

func (s *sqlStore) FindRule(ctx context.Context, r Rule, at time.Time) (Rule, error) {
	found, err := s.rules(ctx, "find rule", `SELECT `+ruleCols+` FROM approvals_rules
		WHERE text = ? AND project = ? AND policy = ? AND origin = ? AND created_at <= ? AND expires_at > ?
		ORDER BY created_at, id LIMIT 1`, r.Text, r.Project, r.Policy, r.Origin, ns(at), ns(at))
	if err != nil {
		return Rule{}, err
	}
	if len(found) == 0 {
		return Rule{}, ErrNotFound
	}
	return found[0], nil
}

// rules runs a query of rules (op names it in errors).
func (s *sqlStore) rules(ctx context.Context, op, q string, args ...any) ([]Rule, error) {
	ctx, cancel := s.ctx(ctx)
	defer cancel()
	rows, err := s.db.QueryContext(ctx, s.query(q), args...)
	if err != nil {
		return nil, s.wrap(op, err)
	}
	defer rows.Close()
	var out []Rule
	for rows.Next() {
		var r Rule
		var created, expires int64
		if err := rows.Scan(&r.ID, &r.Text, &r.Project, &r.Policy, &r.CreatedBy, &created, &expires, &r.PendingID, &r.Origin); err != nil {
			return nil, s.wrap(op, err)
		}
		r.CreatedAt, r.ExpiresAt = fromNS(created), fromNS(expires)
		out = append(out, r)
	}
	return out, s.wrap(op, rows.Err())
}

func (s *sqlStore) DeleteRule(ctx context.Context, id string) error {
	ctx, cancel := s.ctx(ctx)
	defer cancel()
	res, err := s.db.ExecContext(ctx, s.query(`DELETE FROM approvals_rules WHERE id = ?`), id)
	if err != nil {
		return s.wrap("delete rule", err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return s.wrap("delete rule", err)
	}
	if n == 0 {
		return fmt.Errorf("rule %q: %w", id, ErrNotFound)
	}
	return nil
}

func (s *sqlStore) AppendRecords(ctx context.Context, recs []Record) (int, error) {
	if len(recs) > MaxAppend {
		return 0, fmt.Errorf("%w: %d records in one append, more than %d", ErrInvalid, len(recs), MaxAppend)
	}
	for i := range recs {
		if err := checkRecord(&recs[i]); err != nil {
			return 0, fmt.Errorf("record %d: %w", i, err)
		}
	}
	ctx, cancel := s.ctx(ctx)
	defer cancel()
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return 0, s.wrap("append records", err)
	}
	defer tx.Rollback() //nolint:errcheck // a no-op after Commit
	stmt, err := tx.PrepareContext(ctx, s.query(`INSERT INTO approvals_records
		(id, at, host, project, session, tool, decision, source, reason, approval_id, data)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (id) DO NOTHING`))
	if err != nil {
		return 0, s.wrap("append records", err)
	}
	defer stmt.Close()
	added := 0
	for _, r := range recs {
		res, err := stmt.ExecContext(ctx, r.ID, ns(r.Time), r.Host, r.Project, r.Session, r.Tool, r.Decision, r.Source, r.Reason, r.ApprovalID, nonNil(r.Data))
		if err != nil {
			return 0, s.wrap("append records", err)
		}
		n, err := res.RowsAffected()
		if err != nil {
			return 0, s.wrap("append records", err)
		}
		added += int(n)
	}
	if err := tx.Commit(); err != nil {
		return 0, s.wrap("append records", err)
	}
	return added, nil
}

func (s *sqlStore) QueryRecords(ctx context.Context, f RecordFilter) ([]Record, error) {
	if err := checkFilter(&f); err != nil {
		return nil, err
	}
	before := int64(1<<63 - 1)
	if !f.Before.IsZero() {
		before = ns(f.Before)
	}
	ctx, cancel := s.ctx(ctx)
	defer cancel()
	// An empty filter field matches every row: (? = '' OR col = ?), with
	// the value passed twice.
	rows, err := s.db.QueryContext(ctx, s.query(`SELECT id, at, host, project, session, tool, decision, source, reason, approval_id, data
		FROM approvals_records
		WHERE at < ?
		  AND (? = '' OR host = ?) AND (? = '' OR project = ?) AND (? = '' OR session = ?)
		  AND (? = '' OR decision = ?) AND (? = '' OR source = ?)
		ORDER BY at DESC, id DESC LIMIT ?`),
		before, f.Host, f.Host, f.Project, f.Project, f.Session, f.Session, f.Decision, f.Decision, f.Source, f.Source, f.Limit)
	if err != nil {
		return nil, s.wrap("query records", err)
	}
	defer rows.Close()
	var out []Record
	for rows.Next() {
		var r Record
		var at int64
		if err := rows.Scan(&r.ID, &at, &r.Host, &r.Project, &r.Session, &r.Tool, &r.Decision, &r.Source, &r.Reason, &r.ApprovalID, &r.Data); err != nil {
			return nil, s.wrap("query records", err)
		}
		r.Time = fromNS(at)
		out = append(out, r)
	}
	return out, s.wrap("query records", rows.Err())
}

func (s *sqlStore) Prune(ctx context.Context, before time.Time, limit int) (int, error) {
	limit = clampLimit(limit)
	total := 0
	// DELETE takes no LIMIT in PostgreSQL: the ids come from a limited
	// subquery, the same in both dialects.
	for _, q := range []string{
		`DELETE FROM approvals_records WHERE id IN (SELECT id FROM approvals_records WHERE at < ? ORDER BY at LIMIT ?)`,
		`DELETE FROM approvals_pending WHERE id IN (SELECT id FROM approvals_pending WHERE status <> 'pending' AND answer_at < ? ORDER BY answer_at LIMIT ?)`,
		`DELETE FROM approvals_rules WHERE id IN (SELECT id FROM approvals_rules WHERE expires_at <= ? ORDER BY expires_at LIMIT ?)`,
	} {
		qctx, cancel := s.ctx(ctx)
		res, err := s.db.ExecContext(qctx, s.query(q), ns(before), limit)
		cancel()
		if err != nil {
			return total, s.wrap("prune", err)
		}
		n, err := res.RowsAffected()
		if err != nil {
			return total, s.wrap("prune", err)
		}
		total += int(n)
	}
	return total, nil
}

// hub wakes the WaitAnswered calls of this store waiting on an id.
type hub struct {
	mu      sync.Mutex
	waiters map[string]map[chan struct{}]struct{}
}

func newHub() *hub { return &hub{waiters: map[string]map[chan struct{}]struct{}{}} }

func (h *hub) subscribe(id string) (<-chan struct{}, func()) {
	ch := make(chan struct{}, 1)
	h.mu.Lock()
	if h.waiters[id] == nil {
		h.waiters[id] = map[chan struct{}]struct{}{}
	}
	h.waiters[id][ch] = struct{}{}
	h.mu.Unlock()
	return ch, func() {
		h.mu.Lock()
		delete(h.waiters[id], ch)
		if len(h.waiters[id]) == 0 {
			delete(h.waiters, id)
		}
		h.mu.Unlock()
	}
}

func poke(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default: // already woken; it re-reads anyway
	}
}

func (h *hub) wake(id string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for ch := range h.waiters[id] {
		poke(ch)
	}
}

// wakeAll makes every waiter re-read: after a lost notification
// connection, notifications may have been missed.
func (h *hub) wakeAll() {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, set := range h.waiters {
		for ch := range set {
			poke(ch)
		}
	}
}
