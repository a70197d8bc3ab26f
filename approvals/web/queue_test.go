package web_test

import (
	"context"
	"path/filepath"
	"sync"
	"testing"

	"github.com/toolgate/toolgate/approvals"
	"github.com/toolgate/toolgate/approvals/store"
	"github.com/toolgate/toolgate/approvals/web"
)

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

// newQueue is the approvals queue over a real SQLite store in t's
// temporary directory.
func newQueue(t *testing.T) (*spy, store.Store) {
	t.Helper()
	st, err := store.OpenSQLite(t.Context(), filepath.Join(t.TempDir(), "a.db"), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return &spy{Queue: approvals.New(st, approvals.Options{})}, st
}
