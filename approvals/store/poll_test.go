package store

import (
	"context"
	"database/sql"
	"path/filepath"
	"testing"
	"time"
)

// TestWaitPollsWithoutNotification: on a backend whose replicas notify
// each other, a waiter also re-reads its approval every PollInterval, so
// an answer whose notification was lost (a dropped LISTEN connection)
// still releases it. Two SQLite stores over one file stand in for two
// replicas with no notification between them.
func TestWaitPollsWithoutNotification(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	path := filepath.Join(t.TempDir(), "approvals.db")
	waiting := make(chan string, 1)
	opened := []*sqlStore{}
	for _, opts := range []Options{{}, {PollInterval: 20 * time.Millisecond, Waiting: func(id string) {
		select {
		case waiting <- id:
		default:
		}
	}}} {
		s, err := OpenSQLite(ctx, path, opts)
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		ss := s.(*sqlStore)
		// Replicas that notify, but whose notification never arrives.
		ss.d.answered = func(context.Context, *sql.Tx, string) error { return nil }
		opened = append(opened, ss)
	}
	answerer, waiter := opened[0], opened[1]
	now := time.Now()
	if err := answerer.CreatePending(ctx, Pending{ID: "p", Created: now, Deadline: now.Add(time.Hour)}); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		a, err := waiter.WaitAnswered(ctx, "p")
		if err == nil && a.By != "alice" {
			t.Errorf("answer %+v", a)
		}
		done <- err
	}()
	select {
	case <-waiting:
	case err := <-done:
		t.Fatalf("the wait ended before the answer: %v", err)
	}
	if _, err := answerer.AnswerPending(ctx, "p", Answer{Status: StatusAllowed, By: "alice", How: HowOnce}); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}
