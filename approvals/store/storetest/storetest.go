// Package storetest is the conformance suite every approvals store
// backend passes: Run it with a Backend that makes fresh databases.
package storetest

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/toolgate/toolgate/approvals/store"
)

// Backend makes fresh, empty databases for the suite.
type Backend interface {
	// NewDB returns a new empty database; t's cleanup removes it.
	NewDB(t *testing.T) DB
	// Shared reports whether several stores over one database share
	// answers (WaitAnswered on one is released by an answer on another):
	// PostgreSQL does; the SQLite store serves one process.
	Shared() bool
}

// DB is one database of a backend.
type DB interface {
	// Open opens a store over the database (creating or migrating it).
	Open(ctx context.Context, opts store.Options) (store.Store, error)
	// SetSchemaVersion writes the schema version directly, as a newer
	// toolgate would.
	SetSchemaVersion(ctx context.Context, v int) error
}

// timeout bounds each test: a missed notification fails the test here
// rather than hanging it.
const timeout = 20 * time.Second

// t0 is the suite's time: now, so that an answer stamped now comes
// before the deadlines made from it (an hour later), as a store requires.
var t0 = time.Now().UTC().Truncate(time.Millisecond)

func ctxFor(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), timeout)
	t.Cleanup(cancel)
	return ctx
}

func open(t *testing.T, db DB, opts store.Options) store.Store {
	t.Helper()
	s, err := db.Open(ctxFor(t), opts)
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func pending(id string, created time.Time) store.Pending {
	return store.Pending{
		ID: id, Created: created, Deadline: created.Add(time.Hour),
		Request: []byte(`{"tool":{"name":"Bash","input":{"command":"make deploy"}}}`),
		Display: `{"command":"make deploy"}`,
		Host:    "ci-runner-7", Project: "/work/app", Session: "s-" + id, Tool: "Bash", Policy: "ci",
		Reason: "the classifier could not decide", LastWords: "deploy it when the tests pass",
	}
}

// Run runs the suite against b.
func Run(t *testing.T, b Backend) {
	t.Run("Pending", func(t *testing.T) { testPending(t, b) })
	t.Run("CountPending", func(t *testing.T) { testCountPending(t, b) })
	t.Run("CreateCapped", func(t *testing.T) { testCreateCapped(t, b) })
	t.Run("LateAnswer", func(t *testing.T) { testLateAnswer(t, b) })
	t.Run("AnswerWithRule", func(t *testing.T) { testAnswerWithRule(t, b) })
	t.Run("FindRule", func(t *testing.T) { testFindRule(t, b) })
	t.Run("Answer", func(t *testing.T) { testAnswer(t, b) })
	t.Run("AnswerExactlyOnce", func(t *testing.T) { testExactlyOnce(t, b) })
	t.Run("Expire", func(t *testing.T) { testExpire(t, b) })
	t.Run("WaitAnswered", func(t *testing.T) { testWait(t, b) })
	t.Run("Rules", func(t *testing.T) { testRules(t, b) })
	t.Run("Records", func(t *testing.T) { testRecords(t, b) })
	t.Run("Restart", func(t *testing.T) { testRestart(t, b) })
	t.Run("Migrations", func(t *testing.T) { testMigrations(t, b) })
	t.Run("Bounds", func(t *testing.T) { testBounds(t, b) })
	t.Run("Prune", func(t *testing.T) { testPrune(t, b) })
}

func testPending(t *testing.T, b Backend) {
	ctx := ctxFor(t)
	s := open(t, b.NewDB(t), store.Options{})
	// Created out of order: the list is oldest first.
	for i, id := range []string{"p2", "p0", "p1"} {
		p := pending(id, t0.Add(time.Duration([]int{2, 0, 1}[i])*time.Second))
		if err := s.CreatePending(ctx, p); err != nil {
			t.Fatalf("create %s: %v", id, err)
		}
	}
	if err := s.CreatePending(ctx, pending("p1", t0)); !errors.Is(err, store.ErrExists) {
		t.Fatalf("create a taken id: %v, want ErrExists", err)
	}
	got, err := s.GetPending(ctx, "p1")
	if err != nil {
		t.Fatal(err)
	}
	want := pending("p1", t0.Add(time.Second))
	want.Status, want.OnTimeout = store.StatusPending, store.OutcomeDeny
	if !equalPending(got, want) {
		t.Fatalf("get:\n got %+v\nwant %+v", got, want)
	}
	if _, err := s.GetPending(ctx, "nope"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("get unknown: %v, want ErrNotFound", err)
	}
	list, err := s.ListPending(ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	if ids := idsOf(list); ids != "p0 p1 p2" {
		t.Fatalf("list: %s, want p0 p1 p2", ids)
	}
	list, err = s.ListPending(ctx, 2)
	if err != nil {
		t.Fatal(err)
	}
	if ids := idsOf(list); ids != "p0 p1" {
		t.Fatalf("list limit 2: %s, want p0 p1", ids)
	}
	// Bad values are refused before any query.
	for name, mutate := range map[string]func(*store.Pending){
		"no id":            func(p *store.Pending) { p.ID = "" },
		"long id":          func(p *store.Pending) { p.ID = strings.Repeat("x", store.MaxIDBytes+1) },
		"huge request":     func(p *store.Pending) { p.Request = make([]byte, store.MaxRequestBytes+1) },
		"huge display":     func(p *store.Pending) { p.Display = strings.Repeat("x", store.MaxDisplayBytes+1) },
		"long host":        func(p *store.Pending) { p.Host = strings.Repeat("x", store.MaxFieldBytes+1) },
		"invalid UTF-8":    func(p *store.Pending) { p.Tool = "\xff" },
		"no deadline":      func(p *store.Pending) { p.Deadline = time.Time{} },
		"deadline first":   func(p *store.Pending) { p.Deadline = p.Created.Add(-time.Second) },
		"unknown outcome":  func(p *store.Pending) { p.OnTimeout = "maybe" },
		"SQL in the value": nil,
	} {
		p := pending("bad-"+strings.ReplaceAll(name, " ", "-"), t0)
		if mutate == nil {
			// Values are parameters: quotes are stored as they are.
			p.Display = `'); DROP TABLE approvals_pending; --`
			if err := s.CreatePending(ctx, p); err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			if got, err := s.GetPending(ctx, p.ID); err != nil || got.Display != p.Display {
				t.Fatalf("%s: got %q, %v", name, got.Display, err)
			}
			continue
		}
		mutate(&p)
		if err := s.CreatePending(ctx, p); !errors.Is(err, store.ErrInvalid) {
			t.Errorf("%s: %v, want ErrInvalid", name, err)
		}
	}
}

func equalPending(a, b store.Pending) bool {
	return a.ID == b.ID && a.Created.Equal(b.Created) && a.Deadline.Equal(b.Deadline) && string(a.Request) == string(b.Request) &&
		a.Display == b.Display && a.Host == b.Host && a.Project == b.Project && a.Session == b.Session && a.Tool == b.Tool &&
		a.Policy == b.Policy && a.Reason == b.Reason && a.LastWords == b.LastWords && a.OnTimeout == b.OnTimeout && a.Status == b.Status && equalAnswer(a.Answer, b.Answer)
}

func equalAnswer(a, b store.Answer) bool {
	return a.Status == b.Status && a.Outcome == b.Outcome && a.By == b.By && a.At.Equal(b.At) && a.How == b.How
}

func idsOf(ps []store.Pending) string {
	var ids []string
	for _, p := range ps {
		ids = append(ids, p.ID)
	}
	return strings.Join(ids, " ")
}

func testAnswer(t *testing.T, b Backend) {
	ctx := ctxFor(t)
	s := open(t, b.NewDB(t), store.Options{})
	for _, id := range []string{"a", "b"} {
		if err := s.CreatePending(ctx, pending(id, t0)); err != nil {
			t.Fatal(err)
		}
	}
	at := t0.Add(time.Minute)
	p, err := s.AnswerPending(ctx, "a", store.Answer{Status: store.StatusAllowed, By: "alice@example.com", At: at, How: store.HowRule})
	if err != nil {
		t.Fatal(err)
	}
	want := store.Answer{Status: store.StatusAllowed, Outcome: store.OutcomeAllow, By: "alice@example.com", At: at, How: store.HowRule}
	if p.Status != store.StatusAllowed || !equalAnswer(p.Answer, want) {
		t.Fatalf("answered: %+v, want status allowed and %+v", p, want)
	}
	// A second answer loses and sees the first.
	p, err = s.AnswerPending(ctx, "a", store.Answer{Status: store.StatusDenied, By: "bob", At: at, How: store.HowOnce})
	if !errors.Is(err, store.ErrSettled) || !equalAnswer(p.Answer, want) {
		t.Fatalf("second answer: %v, %+v; want ErrSettled and the first answer", err, p.Answer)
	}
	if _, err := s.AnswerPending(ctx, "nope", store.Answer{Status: store.StatusDenied, By: "bob", How: store.HowOnce}); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("answer unknown: %v, want ErrNotFound", err)
	}
	for name, a := range map[string]store.Answer{
		"no approver":   {Status: store.StatusAllowed, How: store.HowOnce},
		"deny as rule":  {Status: store.StatusDenied, By: "bob", How: store.HowRule},
		"expired":       {Status: store.StatusExpired, By: "bob", How: store.HowOnce},
		"pending":       {Status: store.StatusPending, By: "bob", How: store.HowOnce},
		"timeout how":   {Status: store.StatusDenied, By: "bob", How: store.HowTimeout},
		"long approver": {Status: store.StatusDenied, By: strings.Repeat("x", store.MaxFieldBytes+1), How: store.HowOnce},
	} {
		if _, err := s.AnswerPending(ctx, "b", a); !errors.Is(err, store.ErrInvalid) {
			t.Errorf("%s: %v, want ErrInvalid", name, err)
		}
	}
	// A deny with no time is stamped now.
	before := time.Now().Add(-time.Second)
	p, err = s.AnswerPending(ctx, "b", store.Answer{Status: store.StatusDenied, By: "bob", How: store.HowOnce})
	if err != nil || p.Answer.Outcome != store.OutcomeDeny || p.Answer.At.Before(before) {
		t.Fatalf("deny: %+v, %v", p.Answer, err)
	}
	if list, err := s.ListPending(ctx, 0); err != nil || len(list) != 0 {
		t.Fatalf("list after answers: %s, %v; want none", idsOf(list), err)
	}
}

// testExactlyOnce races two answers for each of many approvals: through
// one store from two goroutines, and, for a shared backend, through two
// stores over one database. Exactly one answer wins each approval, and
// the stored answer is the winner's.
func testExactlyOnce(t *testing.T, b Backend) {
	ctx := ctxFor(t)
	db := b.NewDB(t)
	s1 := open(t, db, store.Options{})
	s2 := s1
	if b.Shared() {
		s2 = open(t, db, store.Options{})
	}
	const n = 40
	for i := range n {
		if err := s1.CreatePending(ctx, pending(fmt.Sprint("race-", i), t0)); err != nil {
			t.Fatal(err)
		}
	}
	type result struct {
		p   store.Pending
		err error
	}
	for i := range n {
		id := fmt.Sprint("race-", i)
		var wg sync.WaitGroup
		start := make(chan struct{})
		res := make([]result, 2)
		for j, s := range []store.Store{s1, s2} {
			wg.Go(func() {
				<-start
				a := store.Answer{Status: store.StatusAllowed, By: "alice", How: store.HowOnce}
				if j == 1 {
					a = store.Answer{Status: store.StatusDenied, By: "bob", How: store.HowOnce}
				}
				res[j].p, res[j].err = s.AnswerPending(ctx, id, a)
			})
		}
		close(start)
		wg.Wait()
		winners := 0
		var winner store.Answer
		for _, r := range res {
			switch {
			case r.err == nil:
				winners++
				winner = r.p.Answer
			case !errors.Is(r.err, store.ErrSettled):
				t.Fatalf("%s: %v", id, r.err)
			}
		}
		if winners != 1 {
			t.Fatalf("%s: %d answers won, want exactly 1", id, winners)
		}
		for _, r := range res {
			if !equalAnswer(r.p.Answer, winner) {
				t.Fatalf("%s: the loser saw %+v, the winner %+v", id, r.p.Answer, winner)
			}
		}
		got, err := s2.GetPending(ctx, id)
		if err != nil || !equalAnswer(got.Answer, winner) {
			t.Fatalf("%s: stored %+v (%v), winner %+v", id, got.Answer, err, winner)
		}
	}
}

func testExpire(t *testing.T, b Backend) {
	ctx := ctxFor(t)
	s := open(t, b.NewDB(t), store.Options{})
	now := t0.Add(2 * time.Hour) // past every deadline made from t0
	allow := pending("allow-on-timeout", t0)
	allow.OnTimeout = store.OutcomeAllow
	deny := pending("deny-on-timeout", t0.Add(time.Second))
	answered := pending("answered", t0)
	future := pending("future", now)
	for _, p := range []store.Pending{allow, deny, answered, future} {
		if err := s.CreatePending(ctx, p); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.AnswerPending(ctx, "answered", store.Answer{Status: store.StatusDenied, By: "bob", How: store.HowOnce}); err != nil {
		t.Fatal(err)
	}
	got, err := s.ExpireDue(ctx, now, 1)
	if err != nil || idsOf(got) != "allow-on-timeout" {
		t.Fatalf("expire limit 1: %s, %v; want the earliest deadline", idsOf(got), err)
	}
	want := store.Answer{Status: store.StatusExpired, Outcome: store.OutcomeAllow, At: now, How: store.HowTimeout}
	if got[0].Status != store.StatusExpired || !equalAnswer(got[0].Answer, want) {
		t.Fatalf("expired: %+v, want %+v", got[0], want)
	}
	got, err = s.ExpireDue(ctx, now, 0)
	if err != nil || idsOf(got) != "deny-on-timeout" || got[0].Answer.Outcome != store.OutcomeDeny {
		t.Fatalf("expire: %s %+v, %v; want deny-on-timeout, deny", idsOf(got), got, err)
	}
	if p, err := s.GetPending(ctx, "answered"); err != nil || p.Status != store.StatusDenied {
		t.Fatalf("an answered approval expired: %+v, %v", p, err)
	}
	if p, err := s.GetPending(ctx, "future"); err != nil || p.Status != store.StatusPending {
		t.Fatalf("an approval before its deadline expired: %+v, %v", p, err)
	}
	// An expired approval takes no answer.
	if _, err := s.AnswerPending(ctx, "deny-on-timeout", store.Answer{Status: store.StatusAllowed, By: "alice", How: store.HowOnce}); !errors.Is(err, store.ErrSettled) {
		t.Fatalf("answer after expiry: %v, want ErrSettled", err)
	}
}

func testWait(t *testing.T, b Backend) {
	ctx := ctxFor(t)
	db := b.NewDB(t)
	// No poll within the test's time: only a notification releases a
	// waiter, so a lost one fails the test.
	// Waiting tells the test that a waiter has read the approval pending
	// and blocks: the answer given then is what must release it.
	noPoll := func(waiting chan<- string) store.Options {
		return store.Options{PollInterval: time.Hour, Waiting: func(id string) {
			select {
			case waiting <- id:
			default:
			}
		}}
	}
	sWaiting := make(chan string, 1)
	s := open(t, db, noPoll(sWaiting))

	t.Run("answered before", func(t *testing.T) {
		if err := s.CreatePending(ctx, pending("w-before", t0)); err != nil {
			t.Fatal(err)
		}
		if _, err := s.AnswerPending(ctx, "w-before", store.Answer{Status: store.StatusDenied, By: "bob", How: store.HowOnce}); err != nil {
			t.Fatal(err)
		}
		if a, err := s.WaitAnswered(ctx, "w-before"); err != nil || a.Outcome != store.OutcomeDeny || a.By != "bob" {
			t.Fatalf("wait: %+v, %v", a, err)
		}
	})
	waitThenAnswer := func(t *testing.T, waiter store.Store, waiting <-chan string, answerer store.Store, id string) {
		t.Helper()
		p := pending(id, time.Now())
		if err := answerer.CreatePending(ctx, p); err != nil {
			t.Fatal(err)
		}
		type res struct {
			a   store.Answer
			err error
		}
		done := make(chan res, 1)
		go func() {
			a, err := waiter.WaitAnswered(ctx, id)
			done <- res{a, err}
		}()
		for blocked := false; !blocked; {
			select {
			case got := <-waiting:
				blocked = got == id // an earlier wait's report is skipped
			case r := <-done:
				t.Fatalf("the wait ended before the answer: %+v, %v", r.a, r.err)
			}
		}
		if _, err := answerer.AnswerPending(ctx, id, store.Answer{Status: store.StatusAllowed, By: "alice", How: store.HowOnce}); err != nil {
			t.Fatal(err)
		}
		r := <-done
		if r.err != nil || r.a.Outcome != store.OutcomeAllow || r.a.By != "alice" {
			t.Fatalf("wait: %+v, %v; want alice's allow", r.a, r.err)
		}
	}
	t.Run("answered while waiting", func(t *testing.T) { waitThenAnswer(t, s, sWaiting, s, "w-during") })
	if b.Shared() {
		t.Run("answered on another store", func(t *testing.T) {
			otherWaiting := make(chan string, 1)
			other := open(t, db, noPoll(otherWaiting))
			waitThenAnswer(t, s, sWaiting, other, "w-other")
			waitThenAnswer(t, other, otherWaiting, s, "w-other-2")
		})
	}
	t.Run("deadline passed", func(t *testing.T) {
		p := pending("w-late", time.Now().Add(-2*time.Hour))
		p.OnTimeout = store.OutcomeAllow
		if err := s.CreatePending(ctx, p); err != nil {
			t.Fatal(err)
		}
		a, err := s.WaitAnswered(ctx, "w-late")
		if err != nil || a.Status != store.StatusExpired || a.Outcome != store.OutcomeAllow || a.How != store.HowTimeout {
			t.Fatalf("wait past the deadline: %+v, %v; want expired with the policy's outcome", a, err)
		}
		if got, err := s.GetPending(ctx, "w-late"); err != nil || got.Status != store.StatusExpired {
			t.Fatalf("stored: %+v, %v", got, err)
		}
	})
	t.Run("context ends", func(t *testing.T) {
		if err := s.CreatePending(ctx, pending("w-cancel", time.Now())); err != nil {
			t.Fatal(err)
		}
		cctx, cancel := context.WithCancel(ctx)
		cancel()
		if _, err := s.WaitAnswered(cctx, "w-cancel"); !errors.Is(err, context.Canceled) {
			t.Fatalf("wait with an ended context: %v, want context.Canceled", err)
		}
	})
	t.Run("unknown", func(t *testing.T) {
		if _, err := s.WaitAnswered(ctx, "w-nope"); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("wait unknown: %v, want ErrNotFound", err)
		}
	})
}

func testRules(t *testing.T, b Backend) {
	ctx := ctxFor(t)
	s := open(t, b.NewDB(t), store.Options{})
	rule := func(id string, created, expires time.Time) store.Rule {
		return store.Rule{ID: id, Text: "Bash(make deploy)", Project: "/work/app", Policy: "ci", CreatedBy: "alice",
			CreatedAt: created, ExpiresAt: expires, PendingID: "p-" + id}
	}
	r1 := rule("r1", t0, t0.Add(time.Hour))
	r2 := rule("r2", t0.Add(time.Minute), t0.Add(2*time.Hour))
	r3 := rule("r3", t0.Add(3*time.Hour), t0.Add(4*time.Hour))
	for _, r := range []store.Rule{r2, r1, r3} {
		if err := s.AddRule(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.AddRule(ctx, r1); !errors.Is(err, store.ErrExists) {
		t.Fatalf("add a taken id: %v, want ErrExists", err)
	}
	list := func(at time.Time, limit int) string {
		t.Helper()
		rs, err := s.ListRules(ctx, at, limit)
		if err != nil {
			t.Fatal(err)
		}
		var ids []string
		for _, r := range rs {
			ids = append(ids, r.ID)
			if r.ID == "r1" && (r.Text != r1.Text || r.Project != r1.Project || r.Policy != r1.Policy || r.CreatedBy != r1.CreatedBy ||
				!r.CreatedAt.Equal(r1.CreatedAt) || !r.ExpiresAt.Equal(r1.ExpiresAt) || r.PendingID != r1.PendingID) {
				t.Fatalf("r1 read back as %+v, stored %+v", r, r1)
			}
		}
		return strings.Join(ids, " ")
	}
	if got := list(t0.Add(30*time.Minute), 0); got != "r1 r2" {
		t.Fatalf("at +30m: %s, want r1 r2", got)
	}
	if got := list(t0.Add(30*time.Minute), 1); got != "r1" {
		t.Fatalf("at +30m limit 1: %s, want r1", got)
	}
	// A rule ends at its expiry; one created later is not yet in force.
	if got := list(t0.Add(time.Hour), 0); got != "r2" {
		t.Fatalf("at r1's expiry: %s, want r2", got)
	}
	if got := list(t0.Add(3*time.Hour), 0); got != "r3" {
		t.Fatalf("at +3h: %s, want r3", got)
	}
	if err := s.DeleteRule(ctx, "r2"); err != nil {
		t.Fatal(err)
	}
	if got := list(t0.Add(30*time.Minute), 0); got != "r1" {
		t.Fatalf("after deleting r2: %s, want r1", got)
	}
	if err := s.DeleteRule(ctx, "r2"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("delete twice: %v, want ErrNotFound", err)
	}
	for name, r := range map[string]store.Rule{
		"no expiry":     rule("x1", t0, time.Time{}),
		"expires first": rule("x2", t0, t0.Add(-time.Second)),
		"no text":       {ID: "x3", CreatedBy: "alice", CreatedAt: t0, ExpiresAt: t0.Add(time.Hour)},
		"no approver":   {ID: "x4", Text: "Bash(ls)", CreatedAt: t0, ExpiresAt: t0.Add(time.Hour)},
		"huge text":     {ID: "x5", Text: strings.Repeat("x", store.MaxRuleBytes+1), CreatedBy: "alice", CreatedAt: t0, ExpiresAt: t0.Add(time.Hour)},
	} {
		if err := s.AddRule(ctx, r); !errors.Is(err, store.ErrInvalid) {
			t.Errorf("%s: %v, want ErrInvalid", name, err)
		}
	}
}

func record(id string, at time.Time, host, project, session, decision, source string) store.Record {
	return store.Record{ID: id, Time: at, Host: host, Project: project, Session: session, Tool: "Bash",
		Decision: decision, Source: source, Reason: "why " + id, ApprovalID: "appr-" + id, Data: []byte(`{"id":"` + id + `"}`)}
}

func testRecords(t *testing.T, b Backend) {
	ctx := ctxFor(t)
	s := open(t, b.NewDB(t), store.Options{})
	recs := []store.Record{
		record("r1", t0, "h1", "p1", "s1", "allow", "rule"),
		record("r2", t0.Add(1*time.Second), "h1", "p2", "s2", "ask", "classifier"),
		record("r3", t0.Add(2*time.Second), "h2", "p1", "s3", "deny", "rule"),
	}
	if n, err := s.AppendRecords(ctx, recs); err != nil || n != 3 {
		t.Fatalf("append: %d, %v", n, err)
	}
	// A resend after a lost acknowledgement: the duplicates are ignored.
	if n, err := s.AppendRecords(ctx, []store.Record{recs[1], record("r4", t0.Add(3*time.Second), "h2", "p2", "s4", "ask", "approval"), recs[0]}); err != nil || n != 1 {
		t.Fatalf("append with duplicates: %d new, %v; want 1", n, err)
	}
	query := func(f store.RecordFilter) string {
		t.Helper()
		rs, err := s.QueryRecords(ctx, f)
		if err != nil {
			t.Fatal(err)
		}
		var ids []string
		for _, r := range rs {
			ids = append(ids, r.ID)
			if r.ID == "r2" {
				want := recs[1]
				if !r.Time.Equal(want.Time) || r.Host != want.Host || r.Project != want.Project || r.Session != want.Session ||
					r.Tool != want.Tool || r.Decision != want.Decision || r.Source != want.Source || r.Reason != want.Reason ||
					r.ApprovalID != want.ApprovalID || string(r.Data) != string(want.Data) {
					t.Fatalf("r2 read back as %+v, stored %+v", r, want)
				}
			}
		}
		return strings.Join(ids, " ")
	}
	for _, c := range []struct {
		f    store.RecordFilter
		want string
	}{
		{store.RecordFilter{}, "r4 r3 r2 r1"},
		{store.RecordFilter{Limit: 2}, "r4 r3"},
		{store.RecordFilter{Before: t0.Add(2 * time.Second)}, "r2 r1"},
		{store.RecordFilter{Host: "h1"}, "r2 r1"},
		{store.RecordFilter{Project: "p1"}, "r3 r1"},
		{store.RecordFilter{Session: "s2"}, "r2"},
		{store.RecordFilter{Decision: "ask"}, "r4 r2"},
		{store.RecordFilter{Source: "rule"}, "r3 r1"},
		{store.RecordFilter{Host: "h2", Decision: "ask"}, "r4"},
		{store.RecordFilter{Host: "h3"}, ""},
		{store.RecordFilter{Host: "' OR ''='"}, ""},
	} {
		if got := query(c.f); got != c.want {
			t.Errorf("query %+v: %q, want %q", c.f, got, c.want)
		}
	}
	// A batch with one bad record stores none of it.
	bad := []store.Record{record("r5", t0, "h1", "p1", "s1", "allow", "rule"), record("", t0, "h1", "p1", "s1", "allow", "rule")}
	if _, err := s.AppendRecords(ctx, bad); !errors.Is(err, store.ErrInvalid) {
		t.Fatalf("append with a bad record: %v, want ErrInvalid", err)
	}
	huge := record("r6", t0, "h1", "p1", "s1", "allow", "rule")
	huge.Data = make([]byte, store.MaxRecordBytes+1)
	if _, err := s.AppendRecords(ctx, []store.Record{huge}); !errors.Is(err, store.ErrInvalid) {
		t.Fatalf("append a huge record: %v, want ErrInvalid", err)
	}
	if _, err := s.AppendRecords(ctx, make([]store.Record, store.MaxAppend+1)); !errors.Is(err, store.ErrInvalid) {
		t.Fatalf("append too many: %v, want ErrInvalid", err)
	}
	if got := query(store.RecordFilter{}); got != "r4 r3 r2 r1" {
		t.Fatalf("after refused appends: %q", got)
	}
}

// testRestart closes a store and opens the database again: what was
// pending, answered, learned and shipped is all still there.
func testRestart(t *testing.T, b Backend) {
	ctx := ctxFor(t)
	db := b.NewDB(t)
	s, err := db.Open(ctx, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"kept", "answered"} {
		if err := s.CreatePending(ctx, pending(id, t0)); err != nil {
			t.Fatal(err)
		}
	}
	answered, err := s.AnswerPending(ctx, "answered", store.Answer{Status: store.StatusAllowed, By: "alice", At: t0.Add(time.Minute), How: store.HowOnce})
	if err != nil {
		t.Fatal(err)
	}
	rule := store.Rule{ID: "r", Text: "Bash(make deploy)", CreatedBy: "alice", CreatedAt: t0, ExpiresAt: t0.Add(time.Hour)}
	if err := s.AddRule(ctx, rule); err != nil {
		t.Fatal(err)
	}
	if _, err := s.AppendRecords(ctx, []store.Record{record("rec", t0, "h", "p", "s", "ask", "approval")}); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := s.GetPending(ctx, "kept"); err == nil {
		t.Fatal("a closed store answered a query")
	}

	s = open(t, db, store.Options{})
	if list, err := s.ListPending(ctx, 0); err != nil || idsOf(list) != "kept" {
		t.Fatalf("pending after restart: %s, %v; want kept", idsOf(list), err)
	}
	if p, err := s.GetPending(ctx, "answered"); err != nil || !equalPending(p, answered) {
		t.Fatalf("answer after restart: %+v, %v; want %+v", p, err, answered)
	}
	if a, err := s.WaitAnswered(ctx, "answered"); err != nil || a.By != "alice" {
		t.Fatalf("wait after restart: %+v, %v", a, err)
	}
	if rs, err := s.ListRules(ctx, t0.Add(time.Minute), 0); err != nil || len(rs) != 1 || rs[0].ID != "r" {
		t.Fatalf("rules after restart: %+v, %v", rs, err)
	}
	if rs, err := s.QueryRecords(ctx, store.RecordFilter{}); err != nil || len(rs) != 1 || rs[0].ID != "rec" {
		t.Fatalf("records after restart: %+v, %v", rs, err)
	}
	// The approval still pending can still be answered once.
	if _, err := s.AnswerPending(ctx, "kept", store.Answer{Status: store.StatusDenied, By: "bob", How: store.HowOnce}); err != nil {
		t.Fatal(err)
	}
}

func testMigrations(t *testing.T, b Backend) {
	ctx := ctxFor(t)
	db := b.NewDB(t)
	// From empty, then again over the schema it made.
	for range 2 {
		s, err := db.Open(ctx, store.Options{})
		if err != nil {
			t.Fatal(err)
		}
		if err := s.CreatePending(ctx, pending(fmt.Sprint("m-", time.Now().UnixNano()), t0)); err != nil {
			t.Fatal(err)
		}
		s.Close()
	}
	if err := db.SetSchemaVersion(ctx, store.SchemaVersion+1); err != nil {
		t.Fatal(err)
	}
	s, err := db.Open(ctx, store.Options{})
	if err == nil {
		s.Close()
		t.Fatal("opened a database of a newer schema")
	}
	if !errors.Is(err, store.ErrSchemaTooNew) || !strings.Contains(err.Error(), fmt.Sprint("schema version ", store.SchemaVersion+1)) {
		t.Fatalf("open a newer schema: %v; want ErrSchemaTooNew naming the version", err)
	}
}

func testBounds(t *testing.T, b Backend) {
	ctx := ctxFor(t)
	db := b.NewDB(t)
	s := open(t, db, store.Options{})
	if err := s.CreatePending(ctx, pending("b", t0)); err != nil {
		t.Fatal(err)
	}
	// Every query runs under the store's own deadline, whatever the
	// caller's context allows.
	quick := open(t, db, store.Options{QueryTimeout: time.Nanosecond})
	if _, err := quick.GetPending(ctx, "b"); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("a query past QueryTimeout: %v, want DeadlineExceeded", err)
	}
	if _, err := quick.ListPending(ctx, 0); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("a list past QueryTimeout: %v, want DeadlineExceeded", err)
	}
	if _, err := s.QueryRecords(ctx, store.RecordFilter{Host: strings.Repeat("x", store.MaxFieldBytes+1)}); !errors.Is(err, store.ErrInvalid) {
		t.Fatalf("a huge filter: %v, want ErrInvalid", err)
	}
}

func testPrune(t *testing.T, b Backend) {
	ctx := ctxFor(t)
	s := open(t, b.NewDB(t), store.Options{})
	cut := t0.Add(time.Hour)
	if _, err := s.AppendRecords(ctx, []store.Record{
		record("old1", t0, "h", "p", "s", "allow", "rule"),
		record("old2", t0.Add(time.Second), "h", "p", "s", "allow", "rule"),
		record("new", cut, "h", "p", "s", "allow", "rule"),
	}); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"settled-old", "settled-new", "still-pending"} {
		p := pending(id, t0)
		p.Deadline = cut.Add(time.Hour) // answered at the cut, before it
		if err := s.CreatePending(ctx, p); err != nil {
			t.Fatal(err)
		}
	}
	for id, at := range map[string]time.Time{"settled-old": t0.Add(time.Minute), "settled-new": cut} {
		if _, err := s.AnswerPending(ctx, id, store.Answer{Status: store.StatusDenied, By: "bob", At: at, How: store.HowOnce}); err != nil {
			t.Fatal(err)
		}
	}
	for id, expires := range map[string]time.Time{"expired": cut, "live": cut.Add(time.Second)} {
		if err := s.AddRule(ctx, store.Rule{ID: id, Text: "Bash(ls)", CreatedBy: "alice", CreatedAt: t0, ExpiresAt: expires}); err != nil {
			t.Fatal(err)
		}
	}
	// A limit of 1 takes one row of each kind: the oldest record, the
	// settled approval, the expired rule.
	if n, err := s.Prune(ctx, cut, 1); err != nil || n != 3 {
		t.Fatalf("prune limit 1: %d, %v; want 3", n, err)
	}
	if n, err := s.Prune(ctx, cut, 0); err != nil || n != 1 {
		t.Fatalf("prune: %d, %v; want the other old record", n, err)
	}
	if rs, err := s.QueryRecords(ctx, store.RecordFilter{}); err != nil || len(rs) != 1 || rs[0].ID != "new" {
		t.Fatalf("records after prune: %+v, %v", rs, err)
	}
	if _, err := s.GetPending(ctx, "settled-old"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("an approval settled before the cut: %v, want pruned", err)
	}
	for _, id := range []string{"settled-new", "still-pending"} {
		if _, err := s.GetPending(ctx, id); err != nil {
			t.Fatalf("%s pruned: %v", id, err)
		}
	}
	if rs, err := s.ListRules(ctx, t0, 0); err != nil || len(rs) != 1 || rs[0].ID != "live" {
		t.Fatalf("rules after prune: %+v, %v", rs, err)
	}
}

// testCountPending: the pending approvals are counted in all and by host;
// settled ones are not.
func testCountPending(t *testing.T, b Backend) {
	ctx := ctxFor(t)
	s := open(t, b.NewDB(t), store.Options{})
	if total, from, err := s.CountPending(ctx, "ci-1"); err != nil || total != 0 || from != 0 {
		t.Fatalf("empty store: %d, %d, %v", total, from, err)
	}
	for i, host := range []string{"ci-1", "ci-1", "ci-2", "ci-1"} {
		p := pending(fmt.Sprintf("c%d", i), t0)
		p.Origin = host
		if err := s.CreatePending(ctx, p); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.AnswerPending(ctx, "c3", store.Answer{Status: store.StatusDenied, By: "bob", At: t0, How: store.HowOnce}); err != nil {
		t.Fatal(err)
	}
	if total, from, err := s.CountPending(ctx, "ci-1"); err != nil || total != 3 || from != 2 {
		t.Errorf("counted %d in all, %d from ci-1 (%v); want 3 and 2", total, from, err)
	}
	if _, from, err := s.CountPending(ctx, "ci-9"); err != nil || from != 0 {
		t.Errorf("an unknown host: %d, %v", from, err)
	}
}

// testCreateCapped: capped creation refuses past either cap, counting
// only what is pending, and the caps hold under concurrent creation, on
// one store or two over one database.
func testCreateCapped(t *testing.T, b Backend) {
	ctx := ctxFor(t)
	db := b.NewDB(t)
	s1 := open(t, db, store.Options{})
	s2 := s1
	if b.Shared() {
		s2 = open(t, db, store.Options{})
	}
	mk := func(id, origin string) store.Pending {
		p := pending(id, t0)
		p.Origin = origin
		return p
	}
	if err := s1.CreatePendingCapped(ctx, mk("a1", "a"), 3, 2); err != nil {
		t.Fatal(err)
	}
	if err := s1.CreatePendingCapped(ctx, mk("a2", "a"), 3, 2); err != nil {
		t.Fatal(err)
	}
	if err := s1.CreatePendingCapped(ctx, mk("a3", "a"), 3, 2); !errors.Is(err, store.ErrFull) {
		t.Fatalf("third from a: %v, want ErrFull", err)
	}
	if _, err := s1.AnswerPending(ctx, "a1", store.Answer{Status: store.StatusDenied, By: "bob", How: store.HowOnce}); err != nil {
		t.Fatal(err)
	}
	if err := s1.CreatePendingCapped(ctx, mk("a3", "a"), 3, 2); err != nil {
		t.Fatalf("after one was answered: %v", err)
	}
	if err := s1.CreatePendingCapped(ctx, mk("a2", "a"), 100, 100); !errors.Is(err, store.ErrExists) {
		t.Fatalf("a taken id: %v, want ErrExists", err)
	}
	// Concurrently, from many origins: never more than the total cap.
	var wg sync.WaitGroup
	for i := range 24 {
		s := s1
		if i%2 == 1 {
			s = s2
		}
		wg.Go(func() {
			err := s.CreatePendingCapped(ctx, mk(fmt.Sprint("c", i), fmt.Sprint("o", i%3)), 6, 100)
			if err != nil && !errors.Is(err, store.ErrFull) {
				t.Errorf("create c%d: %v", i, err)
			}
		})
	}
	wg.Wait()
	if total, _, err := s1.CountPending(ctx, ""); err != nil || total != 6 {
		t.Errorf("%d pending after the race (%v), want the cap, 6", total, err)
	}
	if err := s1.CreatePendingCapped(ctx, mk("z", "z"), 0, 1); !errors.Is(err, store.ErrInvalid) {
		t.Errorf("a zero cap: %v", err)
	}
}

// testLateAnswer: an answer after the deadline is refused, and the
// approval settled as expired with the policy's outcome, even when no
// one waited on it.
func testLateAnswer(t *testing.T, b Backend) {
	ctx := ctxFor(t)
	s := open(t, b.NewDB(t), store.Options{})
	p := pending("late", t0.Add(-2*time.Hour)) // its deadline an hour ago
	p.OnTimeout = store.OutcomeDeny
	if err := s.CreatePending(ctx, p); err != nil {
		t.Fatal(err)
	}
	got, err := s.AnswerPending(ctx, "late", store.Answer{Status: store.StatusAllowed, By: "alice", How: store.HowOnce})
	if !errors.Is(err, store.ErrSettled) || got.Status != store.StatusExpired || got.Answer.Outcome != store.OutcomeDeny || got.Answer.By != "" {
		t.Fatalf("late allow: %+v, %v; want refused and expired with deny", got, err)
	}
}

// testAnswerWithRule: an answer's rule is stored with the answer, and
// only if the answer stands; it keeps its origin.
func testAnswerWithRule(t *testing.T, b Backend) {
	ctx := ctxFor(t)
	s := open(t, b.NewDB(t), store.Options{})
	for _, id := range []string{"r1", "r2"} {
		p := pending(id, t0)
		p.Origin = "edge-1"
		if err := s.CreatePending(ctx, p); err != nil {
			t.Fatal(err)
		}
	}
	if got, err := s.GetPending(ctx, "r1"); err != nil || got.Origin != "edge-1" {
		t.Fatalf("origin: %+v, %v", got, err)
	}
	rule := func(id, pendingID string) *store.Rule {
		return &store.Rule{ID: id, Text: "Bash(make deploy)", Project: "/work/app", Origin: "edge-1", Policy: "ci", CreatedBy: "alice",
			CreatedAt: t0, ExpiresAt: t0.Add(time.Hour), PendingID: pendingID}
	}
	allow := store.Answer{Status: store.StatusAllowed, By: "alice", How: store.HowRule, Rule: rule("rule-1", "r1")}
	if _, err := s.AnswerPending(ctx, "r1", allow); err != nil {
		t.Fatal(err)
	}
	if _, err := s.AnswerPending(ctx, "r2", store.Answer{Status: store.StatusDenied, By: "bob", How: store.HowOnce}); err != nil {
		t.Fatal(err)
	}
	lost := store.Answer{Status: store.StatusAllowed, By: "alice", How: store.HowRule, Rule: rule("rule-2", "r2")}
	if _, err := s.AnswerPending(ctx, "r2", lost); !errors.Is(err, store.ErrSettled) {
		t.Fatalf("a second answer: %v", err)
	}
	rules, err := s.ListRules(ctx, t0, 0)
	if err != nil || len(rules) != 1 || rules[0].ID != "rule-1" || rules[0].Origin != "edge-1" {
		t.Fatalf("rules %+v, %v: want only the standing answer's, with its origin", rules, err)
	}
	if _, err := s.AnswerPending(ctx, "r1", store.Answer{Status: store.StatusAllowed, By: "alice", How: store.HowOnce, Rule: rule("rule-3", "r1")}); !errors.Is(err, store.ErrInvalid) {
		t.Errorf("a rule with an answer given once: %v", err)
	}
}

// testFindRule: a rule is found by its exact text, project, policy and
// origin while it is in force, and by nothing else.
func testFindRule(t *testing.T, b Backend) {
	ctx := ctxFor(t)
	s := open(t, b.NewDB(t), store.Options{})
	want := store.Rule{ID: "rule-1", Text: "Bash(make deploy)", Project: "/work/app", Policy: "ci", Origin: "edge-1", CreatedBy: "alice",
		CreatedAt: t0, ExpiresAt: t0.Add(time.Hour), PendingID: "p1"}
	if err := s.AddRule(ctx, want); err != nil {
		t.Fatal(err)
	}
	got, err := s.FindRule(ctx, store.Rule{Text: want.Text, Project: want.Project, Policy: want.Policy, Origin: want.Origin}, t0.Add(time.Minute))
	if err != nil || got.ID != "rule-1" || got.CreatedBy != "alice" || got.PendingID != "p1" {
		t.Fatalf("found %+v, %v", got, err)
	}
	for name, tc := range map[string]struct {
		r  store.Rule
		at time.Time
	}{
		"other text":    {store.Rule{Text: "Bash(make deploy )", Project: want.Project, Policy: want.Policy, Origin: want.Origin}, t0.Add(time.Minute)},
		"other project": {store.Rule{Text: want.Text, Project: "/work", Policy: want.Policy, Origin: want.Origin}, t0.Add(time.Minute)},
		"other policy":  {store.Rule{Text: want.Text, Project: want.Project, Policy: "default", Origin: want.Origin}, t0.Add(time.Minute)},
		"other origin":  {store.Rule{Text: want.Text, Project: want.Project, Policy: want.Policy, Origin: "edge-2"}, t0.Add(time.Minute)},
		"expired":       {store.Rule{Text: want.Text, Project: want.Project, Policy: want.Policy, Origin: want.Origin}, t0.Add(time.Hour)},
	} {
		if got, err := s.FindRule(ctx, tc.r, tc.at); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("%s: %+v, %v; want ErrNotFound", name, got, err)
		}
	}
}
