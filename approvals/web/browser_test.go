package web_test

import (
	"context"
	"fmt"
	"html"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/toolgate/toolgate/approvals/store"
	"github.com/toolgate/toolgate/approvals/web"
	"github.com/toolgate/toolgate/internal/browsertest"
)

// browser starts a headless Chromium (see internal/browsertest).
func browser(t *testing.T) context.Context { return browsertest.Start(t) }

// answerSeen is an answer POST as the page's server received it.
type answerSeen struct {
	path, origin, fetchSite string
	cookie                  bool
	status                  int
}

type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(code int) {
	w.status = code
	w.ResponseWriter.WriteHeader(code)
}

// TestBrowser drives the page with a real headless Chromium: an approver
// logs in through the form and allows a pending call; then a page on
// another origin (another port of 127.0.0.1, which the browser counts as
// the same site, so the SameSite cookie goes along) auto-submits answer
// forms to the page and answers nothing.
func TestBrowser(t *testing.T) {
	ctx := browser(t)
	q, st := newQueue(t)
	tk := newTokens()
	h := web.New(web.Options{Queue: q, Authenticate: tk.authenticate})
	seen := make(chan answerSeen, 16)
	page := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || !strings.HasSuffix(r.URL.Path, "/answer") {
			h.ServeHTTP(w, r)
			return
		}
		sw := &statusWriter{ResponseWriter: w, status: http.StatusOK}
		h.ServeHTTP(sw, r)
		_, err := r.Cookie("toolgate_approver")
		seen <- answerSeen{path: r.URL.Path, origin: r.Header.Get("Origin"), fetchSite: r.Header.Get("Sec-Fetch-Site"), cookie: err == nil, status: sw.status}
	}))
	defer page.Close()

	now := time.Now()
	for _, id := range []string{"ap-1", "ap-2", "ap-3"} {
		err := st.CreatePending(t.Context(), store.Pending{
			ID: id, Created: now, Deadline: now.Add(time.Hour), Tool: "Bash",
			Display: fmt.Sprintf(`{"command":"deploy %s <script>alert(1)</script>"}`, id),
			Host:    "ci-7", Project: "/src/app", Reason: "not a read-only command",
		})
		if err != nil {
			t.Fatal(err)
		}
	}

	// Log in through the form, see the call, allow it.
	run := func(what string, a chromedp.Action[chromedp.Void]) {
		t.Helper()
		ctx, cancel := context.WithTimeout(ctx, 20*time.Second)
		defer cancel()
		if _, err := chromedp.Run(ctx, a); err != nil {
			dump, _ := chromedp.Run(t.Context(), chromedp.Evaluate[string](`location.href + "\n" + document.documentElement.outerHTML`))
			t.Fatalf("%s: %v\n%s", what, err, dump)
		}
	}
	str := func(what string, a chromedp.Action[string]) string {
		t.Helper()
		ctx, cancel := context.WithTimeout(ctx, 20*time.Second)
		defer cancel()
		v, err := chromedp.Run(ctx, a)
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		return v
	}
	run("open the page", chromedp.Steps(
		chromedp.Navigate(page.URL+"/approvals"),
		chromedp.WaitVisible(chromedp.CSS(`#token`)),
	))
	loginURL := str("location", chromedp.Location())
	run("log in", chromedp.Steps(
		chromedp.SendKeys(chromedp.CSS(`#token`), approverToken),
		chromedp.Click(chromedp.CSS(`#login`)),
		chromedp.WaitVisible(chromedp.CSS(`#p-ap-1`)),
	))
	listed := str("the pending call", chromedp.Text(chromedp.CSS(`#p-ap-1 pre.display`)))
	attr, err := chromedp.Run(ctx, chromedp.AttributeValue(chromedp.CSS(`#p-ap-2 input[name=csrf]`), "value"))
	if err != nil || !attr.Exists || attr.Value == "" {
		t.Fatalf("no CSRF token in the page: %v", err)
	}
	csrf := attr.Value
	// The stylesheet applies under the page's CSP.
	headerBG := str("style", chromedp.Evaluate[string](`getComputedStyle(document.querySelector("header")).backgroundColor`))
	run("allow", chromedp.Steps(
		chromedp.Click(chromedp.CSS(`#p-ap-1 button[value=allow]`)),
		chromedp.WaitVisible(chromedp.CSS(`p.message`)),
	))
	result := str("the answer's page", chromedp.Text(chromedp.CSS(`p.message`)))
	if !strings.HasSuffix(loginURL, "/login") {
		t.Errorf("without a session the page went to %s, not the login", loginURL)
	}
	if !strings.Contains(listed, "deploy ap-1 <script>alert(1)</script>") {
		t.Errorf("the pending call shows %q", listed)
	}
	if headerBG != "rgb(34, 34, 34)" {
		t.Errorf("the stylesheet did not apply: header background %q", headerBG)
	}
	if !strings.Contains(result, "allowed once") {
		t.Errorf("after allow the page says %q", result)
	}
	if a := <-seen; a.status != http.StatusOK || a.fetchSite != "same-origin" {
		t.Errorf("the approver's answer: %+v", a)
	}
	p, err := st.GetPending(t.Context(), "ap-1")
	if err != nil {
		t.Fatal(err)
	}
	if p.Status != store.StatusAllowed || p.Answer.By != "alice" {
		t.Fatalf("ap-1 is %s by %q, want allowed by alice", p.Status, p.Answer.By)
	}

	// Another origin's page posts answers with the approver's cookie:
	// first without the CSRF token, then with it (as if it had leaked):
	// the origin check alone refuses that one.
	attacker := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id, token := "ap-2", ""
		if r.URL.Path == "/leaked" {
			id, token = "ap-3", csrf
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprintf(w, `<!doctype html><body onload="document.forms[0].submit()">
<form method="post" action="%s/approvals/%s/answer">
<input name="decision" value="allow"><input name="csrf" value="%s">
</form></body>`, page.URL, id, html.EscapeString(token))
	}))
	defer attacker.Close()
	for _, path := range []string{"/", "/leaked"} {
		// The navigation may end in the form's own; what matters is the
		// POST the page's server saw.
		if _, err := chromedp.Run(ctx, chromedp.Navigate(attacker.URL+path)); err != nil {
			t.Logf("navigating to the attacker's page: %v", err)
		}
		var a answerSeen
		select {
		case a = <-seen:
		case <-time.After(30 * time.Second):
			t.Fatalf("the attacker's page %s posted nothing", path)
		}
		if !a.cookie {
			t.Errorf("%s: the browser did not send the session cookie; the test shows nothing", path)
		}
		if a.status != http.StatusForbidden || a.origin != attacker.URL || a.fetchSite != "same-site" {
			t.Errorf("%s: the cross-origin answer %+v, want 403 from origin %s, same-site", path, a, attacker.URL)
		}
	}
	for _, id := range []string{"ap-2", "ap-3"} {
		p, err := st.GetPending(t.Context(), id)
		if err != nil {
			t.Fatal(err)
		}
		if p.Status != store.StatusPending {
			t.Errorf("the attacker's page settled %s: %s by %q", id, p.Status, p.Answer.By)
		}
	}
}
