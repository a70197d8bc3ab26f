package web_test

import (
	"context"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/toolgate/toolgate/approvals/store"
	"github.com/toolgate/toolgate/approvals/web"
)

// storeQueue is the page's Queue over a real SQLite store, as the
// approvals queue does it (the parts the page sees).
type storeQueue struct {
	st  store.Store
	now func() time.Time
}

func (q storeQueue) List(ctx context.Context, limit int) ([]store.Pending, error) {
	return q.st.ListPending(ctx, limit)
}

func (q storeQueue) Get(ctx context.Context, id string) (store.Pending, error) {
	return q.st.GetPending(ctx, id)
}

func (q storeQueue) Answer(ctx context.Context, id string, a web.Answer) (store.Pending, error) {
	sa := store.Answer{Status: store.StatusDenied, By: a.By, How: store.HowOnce}
	if a.Allow {
		sa.Status = store.StatusAllowed
	}
	if a.AsRule {
		sa.How = store.HowRule
	}
	p, err := q.st.AnswerPending(ctx, id, sa)
	if err != nil || !a.AsRule {
		return p, err
	}
	now := q.now()
	return p, q.st.AddRule(ctx, store.Rule{ID: "r-" + id, Text: fmt.Sprintf("%s(exact)", p.Tool), Project: p.Project, CreatedBy: a.By, CreatedAt: now, ExpiresAt: now.Add(a.RuleTTL), PendingID: id})
}

func (q storeQueue) Rules(ctx context.Context) ([]store.Rule, error) {
	return q.st.ListRules(ctx, q.now(), store.MaxLimit)
}

func (q storeQueue) DeleteRule(ctx context.Context, id, _ string) error {
	return q.st.DeleteRule(ctx, id)
}

func (q storeQueue) Records(ctx context.Context, f store.RecordFilter) ([]store.Record, error) {
	return q.st.QueryRecords(ctx, f)
}

// spy records what the page asked of the queue.
type spy struct {
	web.Queue
	mu      sync.Mutex
	filters []store.RecordFilter
	answers []web.Answer
}

func (s *spy) Records(ctx context.Context, f store.RecordFilter) ([]store.Record, error) {
	s.mu.Lock()
	s.filters = append(s.filters, f)
	s.mu.Unlock()
	return s.Queue.Records(ctx, f)
}

func (s *spy) Answer(ctx context.Context, id string, a web.Answer) (store.Pending, error) {
	s.mu.Lock()
	s.answers = append(s.answers, a)
	s.mu.Unlock()
	return s.Queue.Answer(ctx, id, a)
}

func (s *spy) lastFilter(t *testing.T) store.RecordFilter {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.filters) == 0 {
		t.Fatal("the page asked for no records")
	}
	return s.filters[len(s.filters)-1]
}

func (s *spy) lastAnswer(t *testing.T) web.Answer {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.answers) == 0 {
		t.Fatal("the page gave no answer")
	}
	return s.answers[len(s.answers)-1]
}

// newQueue opens a real SQLite store in t's temporary directory.
func newQueue(t *testing.T) (*spy, store.Store) {
	t.Helper()
	st, err := store.OpenSQLite(t.Context(), filepath.Join(t.TempDir(), "a.db"), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return &spy{Queue: storeQueue{st: st, now: time.Now}}, st
}
