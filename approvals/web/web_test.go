package web_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/toolgate/toolgate/approvals/store"
	"github.com/toolgate/toolgate/approvals/web"
)

const (
	approverToken = "tg-approver-7f3a9c1e5b2d4068"
	clientToken   = "tg-client-0c8e2f6a4b1d3957"
)

// tokens is a token file's approver-role lookup that a test can change.
type tokens struct {
	mu sync.Mutex
	m  map[string]string
}

func newTokens() *tokens {
	return &tokens{m: map[string]string{approverToken: "alice", "tg-approver-bob": "bob"}}
}

func (t *tokens) authenticate(token string) (string, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	who, ok := t.m[token]
	return who, ok
}

func (t *tokens) revoke(token string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	delete(t.m, token)
}

type env struct {
	t      *testing.T
	h      http.Handler
	q      *spy
	st     store.Store
	tokens *tokens
}

func newEnv(t *testing.T, mod ...func(*web.Options)) *env {
	t.Helper()
	q, st := newQueue(t)
	e := &env{t: t, q: q, st: st, tokens: newTokens()}
	opts := web.Options{Queue: q, Authenticate: e.tokens.authenticate}
	for _, m := range mod {
		m(&opts)
	}
	e.h = web.New(opts)
	return e
}

const host = "approvals.test:8080"

// do serves req and returns the response with its body read.
func do(t *testing.T, h http.Handler, req *http.Request) (*http.Response, string) {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	resp := rec.Result()
	body, _ := io.ReadAll(resp.Body)
	return resp, string(body)
}

func get(path string, c *http.Cookie) *http.Request {
	req := httptest.NewRequest(http.MethodGet, "http://"+host+path, nil)
	if c != nil {
		req.AddCookie(c)
	}
	return req
}

// post is a same-origin form POST as a current browser sends it.
func post(path string, c *http.Cookie, form url.Values) *http.Request {
	req := httptest.NewRequest(http.MethodPost, "http://"+host+path, strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Origin", "http://"+host)
	req.Header.Set("Sec-Fetch-Site", "same-origin")
	if c != nil {
		req.AddCookie(c)
	}
	return req
}

var csrfRE = regexp.MustCompile(`name="csrf" value="([^"]+)"`)

// login logs in with token through the form and returns the session
// cookie and the CSRF token the pages carry.
func (e *env) login(token string) (*http.Cookie, string) {
	e.t.Helper()
	resp, body := do(e.t, e.h, post("/login", nil, url.Values{"token": {token}}))
	if resp.StatusCode != http.StatusSeeOther {
		e.t.Fatalf("login: %s\n%s", resp.Status, body)
	}
	cs := resp.Cookies()
	if len(cs) != 1 {
		e.t.Fatalf("login set %d cookies", len(cs))
	}
	resp, body = do(e.t, e.h, get("/approvals", cs[0]))
	if resp.StatusCode != http.StatusOK {
		e.t.Fatalf("after login: %s\n%s", resp.Status, body)
	}
	m := csrfRE.FindStringSubmatch(body)
	if m == nil {
		e.t.Fatalf("no CSRF token on the page:\n%s", body)
	}
	return cs[0], m[1]
}

// pend stores a pending approval.
func (e *env) pend(p store.Pending) store.Pending {
	e.t.Helper()
	if p.ID == "" {
		p.ID = "ap-1"
	}
	if p.Created.IsZero() {
		p.Created = time.Now()
		p.Deadline = p.Created.Add(10 * time.Minute)
	}
	if p.Tool == "" {
		p.Tool = "Bash"
		p.Display = `make deploy`
	}
	if p.Request == nil {
		// What the queue keeps of the call: the rule an allow as a rule
		// teaches.
		p.Request = []byte(`{"rule":"Bash(make deploy)"}`)
	}
	if err := e.st.CreatePending(e.t.Context(), p); err != nil {
		e.t.Fatal(err)
	}
	return p
}

func (e *env) status(id string) store.Pending {
	e.t.Helper()
	p, err := e.st.GetPending(context.Background(), id)
	if err != nil {
		e.t.Fatal(err)
	}
	return p
}

func TestLoginAndAnswer(t *testing.T) {
	e := newEnv(t)
	e.pend(store.Pending{ID: "ap-1"})
	c, csrf := e.login(approverToken)
	resp, body := do(t, e.h, post("/approvals/ap-1/answer", c, url.Values{"csrf": {csrf}, "decision": {"allow"}}))
	if resp.StatusCode != http.StatusOK || !strings.Contains(body, "allowed once") {
		t.Fatalf("answer: %s\n%s", resp.Status, body)
	}
	p := e.status("ap-1")
	if p.Status != store.StatusAllowed || p.Answer.By != "alice" || p.Answer.How != store.HowOnce {
		t.Fatalf("stored %+v, want allowed once by alice", p.Answer)
	}
}

func TestAuthRequired(t *testing.T) {
	e := newEnv(t)
	e.pend(store.Pending{ID: "ap-1"})
	for _, path := range []string{"/", "/approvals", "/approvals/ap-1", "/rules", "/decisions"} {
		resp, _ := do(t, e.h, get(path, nil))
		if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/login" {
			t.Errorf("GET %s without a login: %s to %q, want 303 to /login", path, resp.Status, resp.Header.Get("Location"))
		}
		resp, _ = do(t, e.h, get(path, &http.Cookie{Name: "toolgate_approver", Value: "made-up"}))
		if resp.StatusCode != http.StatusSeeOther {
			t.Errorf("GET %s with a made-up session: %s, want 303", path, resp.Status)
		}
	}
	for _, path := range []string{"/approvals/ap-1/answer", "/rules/r-1/delete", "/logout"} {
		resp, _ := do(t, e.h, post(path, nil, url.Values{"decision": {"allow"}}))
		if resp.StatusCode != http.StatusUnauthorized {
			t.Errorf("POST %s without a login: %s, want 401", path, resp.Status)
		}
	}
	// A script's bearer token: a wrong one is 401, an approver's works,
	// and needs no CSRF token (no other site can make a browser send it).
	req := get("/approvals", nil)
	req.Header.Set("Authorization", "Bearer wrong")
	if resp, _ := do(t, e.h, req); resp.StatusCode != http.StatusUnauthorized || resp.Header.Get("WWW-Authenticate") == "" {
		t.Errorf("a wrong bearer token: %s, want 401 with WWW-Authenticate", resp.Status)
	}
	req = get("/approvals", nil)
	req.Header.Set("Authorization", "Bearer "+approverToken)
	if resp, body := do(t, e.h, req); resp.StatusCode != http.StatusOK || !strings.Contains(body, "make deploy") {
		t.Errorf("an approver's bearer token: %s", resp.Status)
	}
	req = httptest.NewRequest(http.MethodPost, "http://"+host+"/approvals/ap-1/answer", strings.NewReader("decision=deny"))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Authorization", "Bearer "+approverToken)
	if resp, body := do(t, e.h, req); resp.StatusCode != http.StatusOK {
		t.Fatalf("a script's answer: %s\n%s", resp.Status, body)
	}
	if p := e.status("ap-1"); p.Status != store.StatusDenied || p.Answer.By != "alice" {
		t.Fatalf("stored %+v, want denied by alice", p.Answer)
	}
}

func TestClientTokenRefused(t *testing.T) {
	e := newEnv(t)
	e.pend(store.Pending{ID: "ap-1"})
	for _, token := range []string{clientToken, "", "   "} {
		resp, body := do(t, e.h, post("/login", nil, url.Values{"token": {token}}))
		if resp.StatusCode != http.StatusUnauthorized || !strings.Contains(body, "Login failed") {
			t.Errorf("login with %q: %s, want 401 saying the login failed", token, resp.Status)
		}
		if len(resp.Cookies()) != 0 {
			t.Errorf("login with %q set a cookie", token)
		}
		if token != "" && strings.TrimSpace(token) != "" && strings.Contains(body, token) {
			t.Errorf("the failed login's page echoes the token")
		}
	}
	req := httptest.NewRequest(http.MethodPost, "http://"+host+"/approvals/ap-1/answer", strings.NewReader("decision=allow"))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Authorization", "Bearer "+clientToken)
	if resp, _ := do(t, e.h, req); resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("a client's bearer token answering: %s, want 401", resp.Status)
	}
	if p := e.status("ap-1"); p.Status != store.StatusPending {
		t.Fatalf("a client's token settled the approval: %+v", p.Answer)
	}
}

func TestCSRFRefused(t *testing.T) {
	e := newEnv(t)
	c, csrf := e.login(approverToken)
	cases := []struct {
		name string
		edit func(r *http.Request, f url.Values)
	}{
		{"no token", func(_ *http.Request, f url.Values) { f.Del("csrf") }},
		{"wrong token", func(_ *http.Request, f url.Values) { f.Set("csrf", csrf[:len(csrf)-1]+"x") }},
		{"another session's token", func(_ *http.Request, f url.Values) { _, other := e.login("tg-approver-bob"); f.Set("csrf", other) }},
		{"cross-site Origin", func(r *http.Request, _ url.Values) {
			r.Header.Del("Sec-Fetch-Site")
			r.Header.Set("Origin", "http://evil.test")
		}},
		{"another port's Origin", func(r *http.Request, _ url.Values) {
			r.Header.Del("Sec-Fetch-Site")
			r.Header.Set("Origin", "http://approvals.test:9090")
		}},
		{"https Origin for an http page", func(r *http.Request, _ url.Values) {
			r.Header.Del("Sec-Fetch-Site")
			r.Header.Set("Origin", "https://"+host)
		}},
		{"null Origin without fetch metadata", func(r *http.Request, _ url.Values) {
			r.Header.Del("Sec-Fetch-Site")
			r.Header.Set("Origin", "null")
		}},
		{"another origin with Sec-Fetch-Site same-origin", func(r *http.Request, _ url.Values) { r.Header.Set("Origin", "http://evil.test") }},
		{"Sec-Fetch-Site cross-site", func(r *http.Request, _ url.Values) { r.Header.Set("Sec-Fetch-Site", "cross-site") }},
		{"Sec-Fetch-Site same-site", func(r *http.Request, _ url.Values) { r.Header.Set("Sec-Fetch-Site", "same-site") }},
		{"another origin's Referer without Origin", func(r *http.Request, _ url.Values) {
			r.Header.Del("Sec-Fetch-Site")
			r.Header.Del("Origin")
			r.Header.Set("Referer", "http://evil.test/page")
		}},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			id := "ap-" + string(rune('a'+i))
			e.pend(store.Pending{ID: id})
			f := url.Values{"csrf": {csrf}, "decision": {"allow"}}
			req := post("/approvals/"+id+"/answer", c, f)
			tc.edit(req, f)
			req.Body = io.NopCloser(strings.NewReader(f.Encode()))
			req.ContentLength = int64(len(f.Encode()))
			resp, _ := do(t, e.h, req)
			if resp.StatusCode != http.StatusForbidden {
				t.Errorf("%s: %s, want 403", tc.name, resp.Status)
			}
			if p := e.status(id); p.Status != store.StatusPending {
				t.Fatalf("%s: the approval was settled: %+v", tc.name, p.Answer)
			}
		})
	}
	// What a browser sends for the page's own form, with and without the
	// fetch metadata, is answered.
	for i, edit := range []func(*http.Request){
		func(*http.Request) {},
		func(r *http.Request) { r.Header.Del("Sec-Fetch-Site"); r.Header.Del("Origin") },
		func(r *http.Request) {
			r.Header.Del("Sec-Fetch-Site")
			r.Header.Del("Origin")
			r.Header.Set("Referer", "http://"+host+"/approvals")
		},
		// Chromium's POST from the page's own form: the page's no-referrer
		// policy makes its Origin "null".
		func(r *http.Request) { r.Header.Set("Origin", "null") },
	} {
		id := "ok-" + string(rune('a'+i))
		e.pend(store.Pending{ID: id})
		req := post("/approvals/"+id+"/answer", c, url.Values{"csrf": {csrf}, "decision": {"deny"}})
		edit(req)
		if resp, body := do(t, e.h, req); resp.StatusCode != http.StatusOK {
			t.Errorf("same-origin answer %d: %s\n%s", i, resp.Status, body)
		}
	}
	// The login form is guarded the same way (login CSRF).
	req := post("/login", nil, url.Values{"token": {approverToken}})
	req.Header.Set("Sec-Fetch-Site", "cross-site")
	req.Header.Set("Origin", "http://evil.test")
	if resp, _ := do(t, e.h, req); resp.StatusCode != http.StatusForbidden || len(resp.Cookies()) != 0 {
		t.Errorf("cross-origin login: %s, want 403 and no cookie", resp.Status)
	}
}

func TestGETChangesNothing(t *testing.T) {
	e := newEnv(t)
	e.pend(store.Pending{ID: "ap-1"})
	c, csrf := e.login(approverToken)
	q := "?" + url.Values{"csrf": {csrf}, "decision": {"allow"}}.Encode()
	for _, path := range []string{"/approvals/ap-1" + q, "/approvals" + q, "/" + q} {
		do(t, e.h, get(path, c))
	}
	if resp, _ := do(t, e.h, get("/approvals/ap-1/answer"+q, c)); resp.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("GET of the answer URL: %s, want 405", resp.Status)
	}
	if p := e.status("ap-1"); p.Status != store.StatusPending {
		t.Fatalf("a GET settled the approval: %+v", p.Answer)
	}
}

func TestHostileTextEscaped(t *testing.T) {
	e := newEnv(t)
	e.pend(store.Pending{
		ID:        "ap-1",
		Tool:      `<img src=x onerror=alert(1)>`,
		Display:   `{"command":"<script>alert(document.cookie)</script>"}`,
		Reason:    `</dd><script>alert(2)</script>`,
		Host:      `"><svg onload=alert(3)>`,
		LastWords: `<a href="javascript:alert(4)">click</a>`,
	})
	_, err := e.st.AppendRecords(t.Context(), []store.Record{{
		ID: "rec-1", Time: time.Now(), Host: "<b>h</b>", Decision: "ask", Reason: "<script>x</script>",
		ApprovalID: "javascript:alert(5)",
	}})
	if err != nil {
		t.Fatal(err)
	}
	c, _ := e.login(approverToken)
	for _, path := range []string{"/approvals", "/approvals/ap-1", "/decisions"} {
		_, body := do(t, e.h, get(path, c))
		for _, bad := range []string{"<script>alert", "<img src=x", "<svg", `href="javascript:`, "<b>h</b>", "<script>x"} {
			if strings.Contains(body, bad) {
				t.Errorf("%s carries %q unescaped", path, bad)
			}
		}
		if strings.Contains(strings.ToLower(body), "<script") {
			t.Errorf("%s has a script element", path)
		}
	}
	_, body := do(t, e.h, get("/approvals/ap-1", c))
	if !strings.Contains(body, "&lt;script&gt;alert(document.cookie)&lt;/script&gt;") {
		t.Errorf("the display is not shown escaped:\n%s", body)
	}
	_, body = do(t, e.h, get("/decisions", c))
	if !strings.Contains(body, `href="/approvals/javascript:alert%285%29"`) {
		t.Errorf("the record's approval link is not a path on this page:\n%s", body)
	}
}

func TestAnswerOutcomes(t *testing.T) {
	e := newEnv(t)
	e.pend(store.Pending{ID: "ap-1"})
	alice, aliceCSRF := e.login(approverToken)
	bob, bobCSRF := e.login("tg-approver-bob")
	if resp, _ := do(t, e.h, post("/approvals/ap-1/answer", alice, url.Values{"csrf": {aliceCSRF}, "decision": {"deny"}})); resp.StatusCode != http.StatusOK {
		t.Fatalf("first answer: %s", resp.Status)
	}
	resp, body := do(t, e.h, post("/approvals/ap-1/answer", bob, url.Values{"csrf": {bobCSRF}, "decision": {"allow"}}))
	if resp.StatusCode != http.StatusConflict || !strings.Contains(body, "already denied by alice") {
		t.Errorf("second answer: %s, want 409 naming alice\n%s", resp.Status, body)
	}
	if p := e.status("ap-1"); p.Status != store.StatusDenied || p.Answer.By != "alice" {
		t.Fatalf("the second answer changed it: %+v", p.Answer)
	}
	_, body = do(t, e.h, get("/approvals/ap-1", bob))
	for _, want := range []string{"denied", "alice", "once"} {
		if !strings.Contains(body, want) {
			t.Errorf("the settled approval's page does not say %q", want)
		}
	}
	if strings.Contains(body, `value="allow"`) {
		t.Error("a settled approval still offers an answer")
	}

	if resp, _ := do(t, e.h, post("/approvals/nope/answer", bob, url.Values{"csrf": {bobCSRF}, "decision": {"allow"}})); resp.StatusCode != http.StatusNotFound {
		t.Errorf("unknown id: %s, want 404", resp.Status)
	}
	if resp, _ := do(t, e.h, get("/approvals/nope", bob)); resp.StatusCode != http.StatusNotFound {
		t.Errorf("GET unknown id: %s, want 404", resp.Status)
	}
	e.pend(store.Pending{ID: "ap-2"})
	for _, f := range []url.Values{
		{"decision": {"maybe"}},
		{"decision": {"rule"}, "ttl": {"100h"}},
		{"decision": {"rule"}},
	} {
		f.Set("csrf", bobCSRF)
		if resp, _ := do(t, e.h, post("/approvals/ap-2/answer", bob, f)); resp.StatusCode != http.StatusBadRequest {
			t.Errorf("answer %v: %s, want 400", f, resp.Status)
		}
	}
	if p := e.status("ap-2"); p.Status != store.StatusPending {
		t.Fatalf("an invalid answer settled it: %+v", p.Answer)
	}
	resp, body = do(t, e.h, post("/approvals/ap-2/answer", bob, url.Values{"csrf": {bobCSRF}, "decision": {"rule"}, "ttl": {"8h0m0s"}}))
	if resp.StatusCode != http.StatusOK || !strings.Contains(body, "8 hours") {
		t.Fatalf("allow as a rule: %s\n%s", resp.Status, body)
	}
	if a := e.q.lastAnswer(t); !a.Allow || !a.AsRule || a.RuleTTL != 8*time.Hour || a.By != "bob" {
		t.Fatalf("the queue got %+v", a)
	}

	// An approval that expired unanswered says so.
	now := time.Now()
	e.pend(store.Pending{ID: "ap-3", Created: now.Add(-time.Hour), Deadline: now.Add(-time.Minute)})
	if _, err := e.st.ExpireDue(t.Context(), now, 10); err != nil {
		t.Fatal(err)
	}
	resp, body = do(t, e.h, post("/approvals/ap-3/answer", bob, url.Values{"csrf": {bobCSRF}, "decision": {"allow"}}))
	if resp.StatusCode != http.StatusConflict || !strings.Contains(body, "expired") {
		t.Errorf("answer to an expired approval: %s\n%s", resp.Status, body)
	}
}

func TestRuleShownBeforeAnswer(t *testing.T) {
	e := newEnv(t)
	e.pend(store.Pending{ID: "ap-1", Request: []byte(`{"rule":"Bash(make <deploy>)"}`)})
	e.pend(store.Pending{ID: "ap-2", Request: []byte(`{}`)})
	c, csrf := e.login(approverToken)
	_, body := do(t, e.h, get("/approvals/ap-1", c))
	if !strings.Contains(body, "teaches <code>Bash(make &lt;deploy&gt;)</code>") {
		t.Errorf("the page does not show the rule an allow as a rule teaches:\n%s", body)
	}
	_, body = do(t, e.h, get("/approvals/ap-2", c))
	if strings.Contains(body, `value="rule"`) || !strings.Contains(body, `value="allow"`) {
		t.Errorf("a call no rule can name offers a rule:\n%s", body)
	}
	resp, body := do(t, e.h, post("/approvals/ap-2/answer", c, url.Values{"csrf": {csrf}, "decision": {"rule"}, "ttl": {"1h0m0s"}}))
	if resp.StatusCode != http.StatusBadRequest || !strings.Contains(body, "No rule can name this call") {
		t.Errorf("a rule for a call no rule can name: %s\n%s", resp.Status, body)
	}
	if p := e.status("ap-2"); p.Status != store.StatusPending {
		t.Fatalf("it was settled: %+v", p.Answer)
	}
}

func TestRules(t *testing.T) {
	e := newEnv(t)
	e.pend(store.Pending{ID: "ap-1"})
	c, csrf := e.login(approverToken)
	if resp, _ := do(t, e.h, post("/approvals/ap-1/answer", c, url.Values{"csrf": {csrf}, "decision": {"rule"}, "ttl": {"1h0m0s"}})); resp.StatusCode != http.StatusOK {
		t.Fatalf("answer: %s", resp.Status)
	}
	_, body := do(t, e.h, get("/rules", c))
	m := regexp.MustCompile(`action="(/rules/[^"/]+/delete)"`).FindStringSubmatch(body)
	if !strings.Contains(body, "Bash(make deploy)") || m == nil {
		t.Fatalf("the rules page does not list the rule:\n%s", body)
	}
	del := m[1]
	if resp, _ := do(t, e.h, post(del, c, url.Values{})); resp.StatusCode != http.StatusForbidden {
		t.Errorf("delete without the CSRF token: %s, want 403", resp.Status)
	}
	if rs, _ := e.q.Rules(t.Context()); len(rs) != 1 || rs[0].CreatedBy != "alice" || rs[0].PendingID != "ap-1" {
		t.Fatalf("rules: %+v", rs)
	}
	if resp, _ := do(t, e.h, post(del, c, url.Values{"csrf": {csrf}})); resp.StatusCode != http.StatusOK {
		t.Fatalf("delete: %s", resp.Status)
	}
	if rs, _ := e.q.Rules(t.Context()); len(rs) != 0 {
		t.Fatalf("rules left: %+v", rs)
	}
	if resp, _ := do(t, e.h, post(del, c, url.Values{"csrf": {csrf}})); resp.StatusCode != http.StatusNotFound {
		t.Errorf("delete again: %s, want 404", resp.Status)
	}
}

func TestDecisionFilters(t *testing.T) {
	e := newEnv(t)
	base := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	var recs []store.Record
	for i := range 5 {
		recs = append(recs, store.Record{ID: "r" + string(rune('0'+i)), Time: base.Add(time.Duration(i) * time.Minute), Host: "ci-1", Project: "/src/app", Session: "s1", Decision: "ask", Source: "classifier", Tool: "Bash"})
	}
	recs[4].ApprovalID = "ap-9"
	recs = append(recs, store.Record{ID: "other", Time: base, Host: "ci-2", Decision: "allow", Source: "rule"})
	if _, err := e.st.AppendRecords(t.Context(), recs); err != nil {
		t.Fatal(err)
	}
	c, _ := e.login(approverToken)
	before := base.Add(10 * time.Minute)
	q := url.Values{"host": {"ci-1"}, "project": {"/src/app"}, "session": {"s1"}, "decision": {"ask"}, "source": {"classifier"}, "before": {before.Format(time.RFC3339Nano)}, "limit": {"2"}}
	resp, body := do(t, e.h, get("/decisions?"+q.Encode(), c))
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("decisions: %s\n%s", resp.Status, body)
	}
	want := store.RecordFilter{Host: "ci-1", Project: "/src/app", Session: "s1", Decision: "ask", Source: "classifier", Before: before, Limit: 2}
	if got := e.q.lastFilter(t); !got.Before.Equal(want.Before) || got.Host != want.Host || got.Project != want.Project || got.Session != want.Session || got.Decision != want.Decision || got.Source != want.Source || got.Limit != want.Limit {
		t.Fatalf("filter %+v, want %+v", got, want)
	}
	if !strings.Contains(body, `href="/approvals/ap-9"`) {
		t.Errorf("the record with an approval does not link to it:\n%s", body)
	}
	if strings.Contains(body, "ci-2") && !strings.Contains(body, `value="ci-1"`) {
		t.Errorf("the filter did not apply")
	}
	// The next page starts strictly before the last record shown.
	m := regexp.MustCompile(`href="(/decisions\?[^"]+)" rel="next"`).FindStringSubmatch(body)
	if m == nil {
		t.Fatalf("no link to older records:\n%s", body)
	}
	next := strings.ReplaceAll(m[1], "&amp;", "&")
	if _, body = do(t, e.h, get(next, c)); !strings.Contains(body, "12:01:00 UTC") || strings.Contains(body, "12:03:00 UTC") {
		t.Errorf("the older page:\n%s", body)
	}
	if got := e.q.lastFilter(t); !got.Before.Equal(base.Add(3*time.Minute)) || got.Host != "ci-1" || got.Limit != 2 {
		t.Errorf("the older page's filter: %+v", got)
	}
	for _, bad := range []string{"before=yesterday", "limit=0", "limit=5000", "host=" + strings.Repeat("h", store.MaxFieldBytes+1)} {
		if resp, _ := do(t, e.h, get("/decisions?"+bad, c)); resp.StatusCode != http.StatusBadRequest {
			t.Errorf("/decisions?%.40s: %s, want 400", bad, resp.Status)
		}
	}
}

func TestSecurityHeaders(t *testing.T) {
	e := newEnv(t)
	c, _ := e.login(approverToken)
	for _, req := range []*http.Request{get("/login", nil), get("/approvals", nil), get("/approvals", c), get("/static/style.css", nil), get("/nope", c), post("/approvals/x/answer", nil, nil)} {
		resp, _ := do(t, e.h, req)
		for k, want := range map[string]string{
			"Content-Security-Policy": "default-src 'none'; style-src 'self'; script-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
			"X-Frame-Options":         "DENY",
			"Referrer-Policy":         "no-referrer",
			"Cache-Control":           "no-store",
		} {
			if got := resp.Header.Get(k); got != want {
				t.Errorf("%s %s: %s is %q, want %q", req.Method, req.URL.Path, k, got, want)
			}
		}
	}
	resp, body := do(t, e.h, get("/static/style.css", nil))
	if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/css") || !strings.Contains(body, "body") {
		t.Errorf("style.css: %s %s", resp.Status, resp.Header.Get("Content-Type"))
	}
}

func TestCookies(t *testing.T) {
	for _, secure := range []bool{false, true} {
		e := newEnv(t, func(o *web.Options) { o.Secure = secure })
		req := post("/login", nil, url.Values{"token": {approverToken}})
		if secure {
			req = httptest.NewRequest(http.MethodPost, "https://"+host+"/login", strings.NewReader("token="+approverToken))
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
			req.Header.Set("Origin", "https://"+host)
		}
		resp, body := do(t, e.h, req)
		if resp.StatusCode != http.StatusSeeOther {
			t.Fatalf("secure=%v: login %s\n%s", secure, resp.Status, body)
		}
		c := resp.Cookies()[0]
		if !c.HttpOnly || c.SameSite != http.SameSiteStrictMode || c.Path != "/" || c.Domain != "" || c.Secure != secure {
			t.Errorf("secure=%v: cookie %+v", secure, c)
		}
		if secure != strings.HasPrefix(c.Name, "__Host-") {
			t.Errorf("secure=%v: cookie name %q", secure, c.Name)
		}
		if len(c.Value) < 43 {
			t.Errorf("session id %q is shorter than 256 bits", c.Value)
		}
		if strings.Contains(resp.Header.Get("Set-Cookie"), approverToken) {
			t.Error("the cookie carries the token")
		}
	}
}

func TestLogoutAndRevocation(t *testing.T) {
	e := newEnv(t)
	c, csrf := e.login(approverToken)
	if resp, _ := do(t, e.h, post("/logout", c, url.Values{"csrf": {csrf}})); resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("logout: %s", resp.Status)
	}
	if resp, _ := do(t, e.h, get("/approvals", c)); resp.StatusCode != http.StatusSeeOther {
		t.Errorf("after logout: %s, want 303 to the login", resp.Status)
	}
	// A token taken out of the token file ends its sessions at once.
	c, _ = e.login(approverToken)
	e.tokens.revoke(approverToken)
	if resp, _ := do(t, e.h, get("/approvals", c)); resp.StatusCode != http.StatusSeeOther {
		t.Errorf("after the token's revocation: %s, want 303 to the login", resp.Status)
	}
}

// storeDown is a queue whose store does not answer.
type storeDown struct{ web.Queue }

func (storeDown) List(context.Context, int) ([]store.Pending, error) {
	return nil, context.DeadlineExceeded
}

func (storeDown) Rules(context.Context) ([]store.Rule, error) { return nil, nil }

func (storeDown) Answer(_ context.Context, id string, _ web.Answer) (store.Pending, error) {
	if id == "ruleless" {
		// The answer was stored, the rule it teaches was not.
		return store.Pending{ID: id, Status: store.StatusAllowed}, errors.New("the answer is given, but its rule could not be stored")
	}
	return store.Pending{}, context.DeadlineExceeded
}

func TestStoreFailure(t *testing.T) {
	tk := newTokens()
	h := web.New(web.Options{Queue: storeDown{}, Authenticate: tk.authenticate})
	e := &env{t: t, h: h}
	c, csrf := e.loginStatus(http.StatusServiceUnavailable)
	resp, body := do(t, h, post("/approvals/ap-1/answer", c, url.Values{"csrf": {csrf}, "decision": {"allow"}}))
	if resp.StatusCode != http.StatusServiceUnavailable || !strings.Contains(body, "whether it is settled") || strings.Contains(body, "deadline exceeded") {
		t.Errorf("answer with the store down: %s\n%s", resp.Status, body)
	}
	resp, body = do(t, h, post("/approvals/ruleless/answer", c, url.Values{"csrf": {csrf}, "decision": {"rule"}, "ttl": {"1h0m0s"}}))
	if resp.StatusCode != http.StatusServiceUnavailable || !strings.Contains(body, "The call is allowed, but the rule could not be stored") {
		t.Errorf("an answer whose rule was not stored: %s\n%s", resp.Status, body)
	}
}

// loginStatus logs in and reads the CSRF token from the approval list
// when it answers code (an error page has no forms: the token is then
// taken from the session's logout form on a page that renders).
func (e *env) loginStatus(code int) (*http.Cookie, string) {
	e.t.Helper()
	resp, _ := do(e.t, e.h, post("/login", nil, url.Values{"token": {approverToken}}))
	c := resp.Cookies()[0]
	resp, _ = do(e.t, e.h, get("/approvals", c))
	if resp.StatusCode != code {
		e.t.Fatalf("list: %s, want %d", resp.Status, code)
	}
	_, body := do(e.t, e.h, get("/rules", c))
	m := csrfRE.FindStringSubmatch(body)
	if m == nil {
		e.t.Fatalf("no CSRF token:\n%s", body)
	}
	return c, m[1]
}
