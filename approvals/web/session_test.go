package web_test

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"testing"
	"testing/synctest"
	"time"

	"github.com/toolgate/toolgate/approvals/store"
	"github.com/toolgate/toolgate/approvals/web"
)

// emptyQueue has nothing pending: the session tests need no store, and
// run in a bubble whose clock they move.
type emptyQueue struct{ web.Queue }

func (emptyQueue) List(context.Context, int) ([]store.Pending, error) { return nil, nil }

func TestSessionExpires(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tk := newTokens()
		e := &env{t: t, tokens: tk, h: web.New(web.Options{Queue: emptyQueue{}, Authenticate: tk.authenticate, SessionTTL: 2 * time.Hour})}
		c, _ := e.login(approverToken)
		time.Sleep(2*time.Hour - time.Second)
		if resp, _ := do(t, e.h, get("/approvals", c)); resp.StatusCode != http.StatusOK {
			t.Fatalf("a second before the session's end: %s", resp.Status)
		}
		time.Sleep(time.Second)
		resp, _ := do(t, e.h, get("/approvals", c))
		if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/login" {
			t.Fatalf("at the session's end: %s, want 303 to /login", resp.Status)
		}
		if resp, _ := do(t, e.h, post("/logout", c, url.Values{})); resp.StatusCode != http.StatusUnauthorized {
			t.Fatalf("a POST with the ended session: %s, want 401", resp.Status)
		}
	})
}

func TestSessionDefaultTTL(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tk := newTokens()
		e := &env{t: t, tokens: tk, h: web.New(web.Options{Queue: emptyQueue{}, Authenticate: tk.authenticate})}
		c, _ := e.login(approverToken)
		if c.MaxAge != int((8 * time.Hour).Seconds()) {
			t.Errorf("cookie Max-Age %d, want 8 hours", c.MaxAge)
		}
		time.Sleep(8*time.Hour - time.Second)
		if resp, _ := do(t, e.h, get("/approvals", c)); resp.StatusCode != http.StatusOK {
			t.Fatalf("before 8 hours: %s", resp.Status)
		}
		time.Sleep(time.Second)
		if resp, _ := do(t, e.h, get("/approvals", c)); resp.StatusCode != http.StatusSeeOther {
			t.Fatalf("after 8 hours: %s, want 303", resp.Status)
		}
	})
}

func TestLoginAttemptsBounded(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tk := newTokens()
		h := web.New(web.Options{Queue: emptyQueue{}, Authenticate: tk.authenticate})
		login := func(token string) int {
			resp, _ := do(t, h, post("/login", nil, url.Values{"token": {token}}))
			return resp.StatusCode
		}
		bearer := func(token string) int {
			req := get("/approvals", nil)
			req.Header.Set("Authorization", "Bearer "+token)
			resp, _ := do(t, h, req)
			return resp.StatusCode
		}
		for i := range 10 {
			if code := login("guess"); code != http.StatusUnauthorized {
				t.Fatalf("failure %d: %d, want 401", i, code)
			}
		}
		if code := login("guess"); code != http.StatusTooManyRequests {
			t.Fatalf("after 10 failures another wrong token: %d, want 429", code)
		}
		// Bearer tokens are counted against the same address.
		if code := bearer("guess"); code != http.StatusUnauthorized {
			t.Fatalf("a wrong bearer token from the limited address: %d, want 401", code)
		}
		// The right token is never refused: the limiter only answers
		// wrong guesses.
		if code := login(approverToken); code != http.StatusSeeOther {
			t.Fatalf("the right token from the limited address: %d, want 303", code)
		}
		if code := bearer(approverToken); code != http.StatusOK {
			t.Fatalf("the right bearer token from the limited address: %d, want 200", code)
		}
		time.Sleep(5 * time.Minute)
		if code := login("guess"); code != http.StatusUnauthorized {
			t.Fatalf("a wrong token after the window: %d, want 401", code)
		}
	})
}

// TestLoginBehindProxy: behind a proxy every approver has the proxy's
// address. Anyone's wrong tokens from it do not lock an approver out,
// and X-Forwarded-For, which any client writes, neither splits nor
// moves what is counted.
func TestLoginBehindProxy(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tk := newTokens()
		h := web.New(web.Options{Queue: emptyQueue{}, Authenticate: tk.authenticate})
		from := func(r *http.Request, addr, xff string) *http.Request {
			r.RemoteAddr = addr
			if xff != "" {
				r.Header.Set("X-Forwarded-For", xff)
			}
			return r
		}
		for i := range 10 {
			resp, _ := do(t, h, from(post("/login", nil, url.Values{"token": {"wrong"}}), fmt.Sprintf("10.0.0.1:%d", 40000+i), fmt.Sprintf("198.51.100.%d", i)))
			if resp.StatusCode != http.StatusUnauthorized {
				t.Fatalf("failure %d: %s", i, resp.Status)
			}
		}
		resp, _ := do(t, h, from(post("/login", nil, url.Values{"token": {"wrong"}}), "10.0.0.1:50000", "203.0.113.9"))
		if resp.StatusCode != http.StatusTooManyRequests {
			t.Fatalf("an 11th wrong token with a new X-Forwarded-For: %s, want 429", resp.Status)
		}
		resp, _ = do(t, h, from(post("/login", nil, url.Values{"token": {approverToken}}), "10.0.0.1:50001", ""))
		if resp.StatusCode != http.StatusSeeOther {
			t.Fatalf("alice's real login through the proxy: %s, want 303", resp.Status)
		}
		req := from(get("/approvals", nil), "10.0.0.1:50002", "")
		req.Header.Set("Authorization", "Bearer "+approverToken)
		if resp, _ := do(t, h, req); resp.StatusCode != http.StatusOK {
			t.Fatalf("alice's bearer token through the proxy: %s, want 200", resp.Status)
		}
		// The limited address's X-Forwarded-For does not limit another
		// connection's address.
		resp, _ = do(t, h, from(post("/login", nil, url.Values{"token": {"wrong"}}), "192.0.2.5:1234", "10.0.0.1"))
		if resp.StatusCode != http.StatusUnauthorized {
			t.Fatalf("a wrong token from another address naming the limited one: %s, want 401", resp.Status)
		}
	})
}

// TestLimiterTableFull: one failure from each of as many addresses as the
// limiter tracks (an IPv6 /64 has plenty) locks nobody out: a newcomer is
// counted in place of the oldest.
func TestLimiterTableFull(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tk := newTokens()
		h := web.New(web.Options{Queue: emptyQueue{}, Authenticate: tk.authenticate})
		wrong := func(addr string) int {
			r := post("/login", nil, url.Values{"token": {"wrong"}})
			r.RemoteAddr = addr
			resp, _ := do(t, h, r)
			return resp.StatusCode
		}
		for i := range 10000 {
			wrong(fmt.Sprintf("[2001:db8::%x]:1234", i))
		}
		r := post("/login", nil, url.Values{"token": {approverToken}})
		r.RemoteAddr = "192.0.2.77:1234"
		if resp, _ := do(t, h, r); resp.StatusCode != http.StatusSeeOther {
			t.Fatalf("alice from a fresh address: %s, want 303", resp.Status)
		}
		// A fresh address is counted, and limited after its own ten.
		for i := range 10 {
			if code := wrong("192.0.2.78:1234"); code != http.StatusUnauthorized {
				t.Fatalf("a fresh address's wrong token %d: %d, want 401", i, code)
			}
		}
		if code := wrong("192.0.2.78:1234"); code != http.StatusTooManyRequests {
			t.Fatalf("its 11th: %d, want 429", code)
		}
	})
}

func TestSessionsBounded(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tk := newTokens()
		h := web.New(web.Options{Queue: emptyQueue{}, Authenticate: tk.authenticate})
		login := func() *http.Cookie {
			resp, _ := do(t, h, post("/login", nil, url.Values{"token": {approverToken}}))
			if resp.StatusCode != http.StatusSeeOther {
				t.Fatalf("login: %s", resp.Status)
			}
			return resp.Cookies()[0]
		}
		first := login()
		time.Sleep(time.Second)
		var last *http.Cookie
		for range web.MaxSessions {
			last = login()
		}
		// The table is full: the session closest to its end made room.
		if resp, _ := do(t, h, get("/approvals", first)); resp.StatusCode != http.StatusSeeOther {
			t.Errorf("the oldest session past the cap: %s, want 303", resp.Status)
		}
		if resp, _ := do(t, h, get("/approvals", last)); resp.StatusCode != http.StatusOK {
			t.Errorf("the newest session: %s", resp.Status)
		}
	})
}
