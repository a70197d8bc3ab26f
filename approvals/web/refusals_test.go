package web_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"testing/synctest"
	"time"
	"unicode/utf8"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/toolgate/toolgate/approvals/web"
)

// logBytes is the size of the fields of the lines in logs.
func logBytes(logs *observer.ObservedLogs) int {
	n := 0
	for _, l := range logs.All() {
		n += len(l.Message)
		for _, f := range l.Context {
			n += len(f.Key) + len(f.String)
		}
	}
	return n
}

// TestRefusalsLogBounded: what a client without credentials sends is
// refused in a log line of bounded size, at most one per second for each
// kind of refusal, and the next line counts those held back.
func TestRefusalsLogBounded(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		core, logs := observer.New(zap.InfoLevel)
		tk := newTokens()
		h := web.New(web.Options{Queue: emptyQueue{}, Authenticate: tk.authenticate, Log: zap.New(core)})
		long := "/approvals/" + strings.Repeat("A", 30<<10) + "%ff/answer"
		crossSite := func() {
			r := httptest.NewRequest(http.MethodPost, "http://"+host+long, strings.NewReader("decision=allow"))
			r.Header.Set("Sec-Fetch-Site", "cross-site")
			if resp, _ := do(t, h, r); resp.StatusCode != http.StatusForbidden {
				t.Fatalf("cross-site: %s", resp.Status)
			}
		}
		const n = 200
		for i := range n {
			crossSite()
			r := post("/login", nil, url.Values{"token": {"wrong"}})
			r.RemoteAddr = fmt.Sprintf("[2001:db8::%x]:1234", i)
			do(t, h, r)
			r = get("/approvals", nil)
			r.RemoteAddr = fmt.Sprintf("[2001:db8::%x]:1234", i)
			r.Header.Set("Authorization", "Bearer wrong")
			do(t, h, r)
		}
		if got := logs.Len(); got != 3 {
			t.Fatalf("%d refused requests of 3 kinds wrote %d lines, want 3:\n%v", 3*n, got, logs.All())
		}
		if b := logBytes(logs); b > 3*1024 {
			t.Fatalf("the lines hold %d bytes", b)
		}
		for _, l := range logs.All() {
			for _, f := range l.Context {
				if len(f.String) > 300 || !utf8.ValidString(f.String) {
					t.Fatalf("%s: field %s: %d bytes, valid UTF-8 %v", l.Message, f.Key, len(f.String), utf8.ValidString(f.String))
				}
			}
		}
		time.Sleep(time.Second)
		crossSite()
		last := logs.All()[logs.Len()-1]
		if logs.Len() != 4 || last.ContextMap()["suppressed"] != int64(n-1) {
			t.Fatalf("a second later: %d lines, the last %s %v; want 4, with %d suppressed", logs.Len(), last.Message, last.ContextMap(), n-1)
		}
	})
}
