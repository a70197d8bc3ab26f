package web_test

import (
	"context"
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
		for i := range 10 {
			if code := login("guess"); code != http.StatusUnauthorized {
				t.Fatalf("failure %d: %d, want 401", i, code)
			}
		}
		if code := login(approverToken); code != http.StatusTooManyRequests {
			t.Fatalf("after 10 failures the right token: %d, want 429", code)
		}
		// Bearer tokens are counted against the same address.
		req := get("/approvals", nil)
		req.Header.Set("Authorization", "Bearer "+approverToken)
		if resp, _ := do(t, h, req); resp.StatusCode != http.StatusUnauthorized {
			t.Fatalf("a bearer token from the limited address: %s, want 401", resp.Status)
		}
		time.Sleep(5 * time.Minute)
		if code := login(approverToken); code != http.StatusSeeOther {
			t.Fatalf("after the window: %d, want 303", code)
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
