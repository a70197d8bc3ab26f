package webhook

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"
	"unicode/utf8"

	"go.uber.org/goleak"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/toolgate/toolgate/approvals/store"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// receiver is a webhook endpoint on 127.0.0.1 that keeps what it is sent
// and answers with the statuses it is given, in order (200 after them).
type receiver struct {
	*httptest.Server
	mu       sync.Mutex
	statuses []int
	bodies   [][]byte
	headers  []http.Header
}

func newReceiver(t *testing.T, statuses ...int) *receiver {
	r := &receiver{statuses: statuses}
	r.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		b, _ := io.ReadAll(req.Body)
		r.mu.Lock()
		r.bodies = append(r.bodies, b)
		r.headers = append(r.headers, req.Header.Clone())
		status := http.StatusOK
		if len(r.statuses) > 0 {
			status, r.statuses = r.statuses[0], r.statuses[1:]
		}
		r.mu.Unlock()
		w.WriteHeader(status)
		io.WriteString(w, "invalid_payload")
	}))
	t.Cleanup(r.Close)
	return r
}

func (r *receiver) posts() [][]byte {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([][]byte(nil), r.bodies...)
}

func enabled(url string) (Config, func(string) string) {
	cfg := DefaultConfig()
	cfg.URLEnv = "HOOK_URL"
	return cfg, func(string) string { return url }
}

// start builds a notifier whose retries wait a millisecond, not seconds.
func start(t *testing.T, cfg Config, getenv func(string) string, client *http.Client, log *zap.Logger) *Notifier {
	t.Helper()
	n, err := newNotifier(cfg, getenv, client, log, time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(n.Close)
	return n
}

func pending(id string) store.Pending {
	created := time.Date(2026, 11, 28, 1, 2, 3, 0, time.UTC)
	return store.Pending{
		ID: id, Created: created, Deadline: created.Add(10 * time.Minute),
		Display: "rm -rf build/\nmake release", Host: "ci-runner-7", Project: "/work/shop", Session: "sess-42",
		Tool: "Bash", Policy: "ci", Reason: "deletes files outside the allowlist", LastWords: "ship it",
		Request: []byte(strings.Repeat("x", 1000)),
	}
}

func decode(t *testing.T, b []byte) message {
	t.Helper()
	var m message
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("the body is not JSON: %v: %s", err, b)
	}
	if len(m.Blocks) != 1 || m.Blocks[0].Type != "section" || m.Blocks[0].Text == nil || m.Blocks[0].Text.Type != "mrkdwn" {
		t.Fatalf("blocks %+v, want one section with mrkdwn text", m.Blocks)
	}
	return m
}

// TestMessagePosted: one POST of Slack's incoming-webhook JSON saying
// what waits, where, why, until when, and where to answer it.
func TestMessagePosted(t *testing.T) {
	r := newReceiver(t)
	cfg, getenv := enabled(r.URL + "/services/T0/B0/s3cret")
	cfg.PageURL = "https://toolgate.example.com/"
	n := start(t, cfg, getenv, r.Client(), nil)
	n.Notify(pending("ap-1"))
	n.Close()

	posts := r.posts()
	if len(posts) != 1 {
		t.Fatalf("%d posts, want 1", len(posts))
	}
	if ct := r.headers[0].Get("Content-Type"); ct != "application/json" {
		t.Errorf("Content-Type %q", ct)
	}
	var raw map[string]any
	json.Unmarshal(posts[0], &raw)
	if raw["unfurl_links"] != false || raw["unfurl_media"] != false {
		t.Errorf("unfurl_links %v, unfurl_media %v: want false (no preview fetched)", raw["unfurl_links"], raw["unfurl_media"])
	}
	m := decode(t, posts[0])
	if want := "A tool call waits for approval: `Bash` on `ci-runner-7` in `/work/shop`"; m.Text != want {
		t.Errorf("text\n%s\nwant\n%s", m.Text, want)
	}
	want := "*A tool call waits for approval*\n" +
		"*Tool:* `Bash`\n" +
		"*Host:* `ci-runner-7`\n" +
		"*Project:* `/work/shop`\n" +
		"*Session:* `sess-42`\n" +
		"*Policy:* `ci`\n" +
		"*Why it asks:* `deletes files outside the allowlist`\n" +
		"*Answer by:* 2026-11-28 01:12:03 UTC\n" +
		"*Input:*\n```\nrm -rf build/\nmake release\n```\n" +
		"<https://toolgate.example.com/approvals/ap-1|Open the approval>"
	if got := m.Blocks[0].Text.Text; got != want {
		t.Errorf("section\n%s\nwant\n%s", got, want)
	}
	if s := n.Stats(); s != (Stats{Sent: 1}) {
		t.Errorf("stats %+v, want 1 sent", s)
	}
}

// TestMessageWithoutPageHasNoLink: no page configured, no link at all.
func TestMessageWithoutPageHasNoLink(t *testing.T) {
	m := format(newItem(pending("ap-1")), "")
	if strings.ContainsAny(m.Blocks[0].Text.Text, "<>|") {
		t.Errorf("a link without a page: %s", m.Blocks[0].Text.Text)
	}
}

// TestMessageEscapesTheAgent: what the agent wrote arrives as text: no
// mention, link, entity, formatting or way out of its code span.
func TestMessageEscapesTheAgent(t *testing.T) {
	r := newReceiver(t)
	cfg, getenv := enabled(r.URL)
	cfg.PageURL = "https://toolgate.example.com"
	n := start(t, cfg, getenv, r.Client(), nil)
	p := pending("ap<!channel>|x")
	p.Display = "echo <!channel> <http://evil.example|click here> <@U123> &amp; *bold*\n```\n<!here>\n``` `tick`\u202egnp.exe\x1b[2J"
	p.Tool = "`<!everyone>`"
	p.Host = "h\n*Host:* `trusted`\u2028*Host:* `x`\u200b"
	p.Project = "<https://evil.example|/work/shop>"
	p.Session = "a&b"
	p.Reason = "> quoted <#C123>"
	n.Notify(p)
	n.Close()
	posts := r.posts()
	if len(posts) != 1 {
		t.Fatalf("%d posts, want 1", len(posts))
	}
	m := decode(t, posts[0])
	section := m.Blocks[0].Text.Text
	link := "<https://toolgate.example.com/approvals/ap%3C%21channel%3E%7Cx|Open the approval>"
	if !strings.HasSuffix(section, "\n"+link) {
		t.Errorf("the section does not end with the page link %s:\n%s", link, section)
	}
	for name, s := range map[string]string{"text": m.Text, "section": strings.TrimSuffix(section, link)} {
		// Every < or > in mrkdwn opens or closes a link or mention.
		if strings.ContainsAny(s, "<>") {
			t.Errorf("%s holds < or > of the agent's:\n%s", name, s)
		}
		// An & is only ever one that starts our entities.
		if strings.Count(s, "&") != strings.Count(s, "&amp;")+strings.Count(s, "&lt;")+strings.Count(s, "&gt;") {
			t.Errorf("%s holds a bare &:\n%s", name, s)
		}
		if strings.ContainsAny(s, "\u202e\x1b") {
			t.Errorf("%s holds a control character:\n%s", name, s)
		}
	}
	for _, want := range []string{"&lt;!channel&gt;", "&lt;http://evil.example|click here&gt;", "&amp;amp;", "`ˋ&lt;!everyone&gt;ˋ`", "`h *Host:* ˋtrustedˋ *Host:* ˋxˋ\uFFFD`", "`a&amp;b`", "`&gt; quoted &lt;#C123&gt;`"} {
		if !strings.Contains(section, want) {
			t.Errorf("the section lacks %q:\n%s", want, section)
		}
	}
	// Code spans: the block's two fences, and each line's spans closed on it.
	if c := strings.Count(section, "```"); c != 2 {
		t.Errorf("%d ``` in the section, want the block's 2:\n%s", c, section)
	}
	inBlock := false
	for line := range strings.SplitSeq(section, "\n") {
		if line == "```" {
			inBlock = !inBlock
			continue
		}
		if inBlock && strings.Contains(line, "`") || strings.Count(line, "`")%2 != 0 {
			t.Errorf("a backtick of the agent's: %q", line)
		}
	}
	// The host's newline did not start a line of its own.
	if strings.Count(section, "*Host:*") != 3 || strings.Contains(section, "\n*Host:* `trusted`") {
		t.Errorf("the host's text made a line of its own:\n%s", section)
	}
}

// TestMessageBounded: huge fields (whose escaping grows them fivefold)
// still give a section within Slack's limit, valid UTF-8, link intact.
func TestMessageBounded(t *testing.T) {
	p := pending("ap-1")
	p.Display = strings.Repeat("&", store.MaxDisplayBytes)
	p.Reason = strings.Repeat("é<", store.MaxReasonBytes/3)
	p.Tool, p.Host, p.Project, p.Session, p.Policy = strings.Repeat("x", 1024), strings.Repeat("界", 300), strings.Repeat(">", 1024), "\xff\xfe"+strings.Repeat("s", 1000), strings.Repeat("`", 1024)
	m := format(newItem(p), "https://toolgate.example.com/"+strings.Repeat("p", 400))
	s := m.Blocks[0].Text.Text
	if n := utf8.RuneCountInString(s); n > 3000 || len(s) > maxSectionBytes {
		t.Errorf("section of %d characters, %d bytes: over Slack's 3000", n, len(s))
	}
	if !utf8.ValidString(s) || !utf8.ValidString(m.Text) {
		t.Error("not valid UTF-8")
	}
	if !strings.HasSuffix(s, "/approvals/ap-1|Open the approval>") {
		t.Errorf("the link was cut: %s", s[len(s)-100:])
	}
	if !strings.Contains(s, "&amp;…\n```") || !strings.Contains(s, "界…`") {
		t.Errorf("cut fields are not marked with …")
	}
	if len(m.Text) > 3*maxFieldBytes+100 {
		t.Errorf("text of %d bytes", len(m.Text))
	}
}

// TestEscapeBounds: the escaped text is valid UTF-8, at most max bytes,
// never ends inside an entity, and is marked when cut.
func TestEscapeBounds(t *testing.T) {
	for _, in := range []string{"", "abc", "&&&&&&&&", "<<<<<", "ééééé", "\xff\xff\xff", "a\nb\tc\x00d\u0085e", "界界界界界界"} {
		for max := 0; max < 40; max++ {
			for _, multi := range []bool{false, true} {
				out := escape(in, max, multi)
				switch {
				case len(out) > max:
					t.Errorf("escape(%q, %d) = %q: over the bound", in, max, out)
				case !utf8.ValidString(out):
					t.Errorf("escape(%q, %d) = %q: invalid UTF-8", in, max, out)
				case strings.Count(out, "&") != strings.Count(out, "&amp;")+strings.Count(out, "&lt;")+strings.Count(out, "&gt;"):
					t.Errorf("escape(%q, %d) = %q: a cut entity", in, max, out)
				case !multi && strings.ContainsAny(out, "\n\t\x00\u0085"):
					t.Errorf("escape(%q, %d) = %q: a control character", in, max, out)
				}
				if full := escape(in, 1<<20, multi); out != full && max >= 3 && !strings.HasSuffix(out, "…") {
					t.Errorf("escape(%q, %d) = %q: cut without a mark", in, max, out)
				}
			}
		}
	}
}

// TestRetryOn5xxThenSuccess: failures that may pass are tried again.
func TestRetryOn5xxThenSuccess(t *testing.T) {
	r := newReceiver(t, 500, 503)
	cfg, getenv := enabled(r.URL)
	n := start(t, cfg, getenv, r.Client(), nil)
	n.Notify(pending("ap-1"))
	n.Close()
	if c := len(r.posts()); c != 3 {
		t.Errorf("%d posts, want 3 (two failures, then the success)", c)
	}
	if s := n.Stats(); s != (Stats{Sent: 1}) {
		t.Errorf("stats %+v, want 1 sent", s)
	}
}

// TestRetriesBounded: a receiver that keeps failing gets maxAttempts
// posts of the message, which is then counted failed.
func TestRetriesBounded(t *testing.T) {
	r := newReceiver(t, 500, 500, 500, 500, 500, 500, 500, 500)
	cfg, getenv := enabled(r.URL)
	n := start(t, cfg, getenv, r.Client(), nil)
	n.Notify(pending("ap-1"))
	n.Close()
	if c := len(r.posts()); c != maxAttempts {
		t.Errorf("%d posts, want %d", c, maxAttempts)
	}
	if s := n.Stats(); s != (Stats{Failed: 1}) {
		t.Errorf("stats %+v, want 1 failed", s)
	}
}

// TestNoRetryOn4xx: a 4xx says the message or URL is wrong; the next
// message is still sent.
func TestNoRetryOn4xx(t *testing.T) {
	for _, status := range []int{400, 403, 404} {
		r := newReceiver(t, status)
		cfg, getenv := enabled(r.URL)
		n := start(t, cfg, getenv, r.Client(), nil)
		n.Notify(pending("ap-1"))
		n.Notify(pending("ap-2"))
		n.Close()
		if c := len(r.posts()); c != 2 {
			t.Errorf("%d: %d posts, want 2 (no retry of the first)", status, c)
		}
		if s := n.Stats(); s != (Stats{Sent: 1, Failed: 1}) {
			t.Errorf("%d: stats %+v, want 1 failed, 1 sent", status, s)
		}
	}
}

// TestNoRedirectFollowed: the default client does not carry an approval
// to wherever a redirect points.
func TestNoRedirectFollowed(t *testing.T) {
	elsewhere := newReceiver(t)
	r := httptest.NewServer(http.RedirectHandler(elsewhere.URL, http.StatusTemporaryRedirect))
	defer r.Close()
	cfg, getenv := enabled(r.URL)
	n := start(t, cfg, getenv, nil, nil)
	n.Notify(pending("ap-1"))
	n.Close()
	if c := len(elsewhere.posts()); c != 0 {
		t.Errorf("the redirect was followed: %d posts elsewhere", c)
	}
	if s := n.Stats(); s != (Stats{Failed: 1}) {
		t.Errorf("stats %+v, want 1 failed", s)
	}
}

// TestQueueFullDrops: while the receiver holds the first message, Notify
// returns at once; past the queue's size messages are dropped and
// counted, and those queued are all sent once the receiver answers.
func TestQueueFullDrops(t *testing.T) {
	arrived := make(chan struct{}, 1)
	release := make(chan struct{})
	var mu sync.Mutex
	got := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		io.Copy(io.Discard, req.Body)
		select {
		case arrived <- struct{}{}:
		default:
		}
		<-release
		mu.Lock()
		got++
		mu.Unlock()
	}))
	defer srv.Close()
	cfg, getenv := enabled(srv.URL)
	cfg.QueueSize = 4
	n := start(t, cfg, getenv, srv.Client(), nil)
	n.Notify(pending("first"))
	<-arrived // the sender is held in the receiver: the queue is empty
	for range cfg.QueueSize + 3 {
		n.Notify(pending("more"))
	}
	if s := n.Stats(); s != (Stats{Dropped: 3}) {
		t.Errorf("stats %+v, want 3 dropped and none sent yet", s)
	}
	close(release)
	n.Close()
	if s := n.Stats(); s != (Stats{Sent: uint64(cfg.QueueSize) + 1, Dropped: 3}) {
		t.Errorf("stats %+v, want %d sent, 3 dropped", s, cfg.QueueSize+1)
	}
	mu.Lock()
	defer mu.Unlock()
	if got != cfg.QueueSize+1 {
		t.Errorf("the receiver got %d, want %d", got, cfg.QueueSize+1)
	}
}

// TestNotifyAfterCloseDropped: a closed notifier takes nothing.
func TestNotifyAfterCloseDropped(t *testing.T) {
	r := newReceiver(t)
	cfg, getenv := enabled(r.URL)
	n := start(t, cfg, getenv, r.Client(), nil)
	n.Close()
	n.Notify(pending("late"))
	n.Close()
	if s := n.Stats(); s != (Stats{Dropped: 1}) {
		t.Errorf("stats %+v, want 1 dropped", s)
	}
	if c := len(r.posts()); c != 0 {
		t.Errorf("%d posts after Close", c)
	}
}

// TestCloseBoundedWhenReceiverHangs: a receiver that never answers holds
// Close for its timeout, no longer; the message in flight fails, those
// queued are dropped, and the sender is gone (goleak, in TestMain).
func TestCloseBoundedWhenReceiverHangs(t *testing.T) {
	hang := make(chan struct{})
	arrived := make(chan struct{}, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		select {
		case arrived <- struct{}{}:
		default:
		}
		select {
		case <-hang:
		case <-req.Context().Done():
		}
	}))
	defer srv.Close()
	defer close(hang)
	cfg, getenv := enabled(srv.URL)
	cfg.Timeout = 200 * time.Millisecond
	n := start(t, cfg, getenv, srv.Client(), nil)
	n.Notify(pending("a"))
	<-arrived
	n.Notify(pending("b"))
	n.Notify(pending("c"))
	closed := make(chan struct{})
	go func() { n.Close(); close(closed) }()
	select {
	case <-closed:
	case <-time.After(10 * time.Second):
		t.Fatal("Close still waiting after 10 s with a 200 ms timeout")
	}
	if s := n.Stats(); s != (Stats{Failed: 1, Dropped: 2}) {
		t.Errorf("stats %+v, want 1 failed (in flight), 2 dropped (queued)", s)
	}
}

// roundTrip is a transport in the test's bubble: the tests that measure
// time (synctest) cannot wait on a real socket.
type roundTrip func(*http.Request) (*http.Response, error)

func (f roundTrip) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

func answer(status int, header http.Header) *http.Response {
	if header == nil {
		header = http.Header{}
	}
	return &http.Response{StatusCode: status, Header: header, Body: io.NopCloser(strings.NewReader(""))}
}

// TestCloseTimeBound: Close returns exactly at the configured timeout
// when the POST in flight hangs.
func TestCloseTimeBound(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		client := &http.Client{Transport: roundTrip(func(r *http.Request) (*http.Response, error) {
			<-r.Context().Done()
			return nil, r.Context().Err()
		})}
		cfg, getenv := enabled("https://hooks.example/x")
		cfg.Timeout = 3 * time.Second
		n, err := New(cfg, getenv, client, nil)
		if err != nil {
			t.Fatal(err)
		}
		n.Notify(pending("a"))
		n.Notify(pending("b"))
		synctest.Wait() // the sender is in the POST
		t0 := time.Now()
		n.Close()
		if d := time.Since(t0); d != cfg.Timeout {
			t.Errorf("Close took %s, want the timeout %s", d, cfg.Timeout)
		}
		if s := n.Stats(); s != (Stats{Failed: 1, Dropped: 1}) {
			t.Errorf("stats %+v, want 1 failed, 1 dropped", s)
		}
	})
}

// TestRetrySchedule: retries wait 0.5 s, then 1 s, 2 s; a 429's
// Retry-After is obeyed (capped).
func TestRetrySchedule(t *testing.T) {
	for _, c := range []struct {
		name   string
		status int
		header http.Header
		want   []time.Duration // when each post is made, from the first
	}{
		{"5xx", 502, nil, []time.Duration{0, 500 * time.Millisecond, 1500 * time.Millisecond, 3500 * time.Millisecond}},
		{"429 Retry-After", 429, http.Header{"Retry-After": {"7"}}, []time.Duration{0, 7 * time.Second, 14 * time.Second, 21 * time.Second}},
		{"429 huge Retry-After", 429, http.Header{"Retry-After": {"99999999999999999"}}, []time.Duration{0, maxBackoff, 2 * maxBackoff, 3 * maxBackoff}},
		{"network error", 0, nil, []time.Duration{0, 500 * time.Millisecond, 1500 * time.Millisecond, 3500 * time.Millisecond}},
	} {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var at []time.Duration
				t0 := time.Now()
				client := &http.Client{Transport: roundTrip(func(r *http.Request) (*http.Response, error) {
					at = append(at, time.Since(t0))
					if c.status == 0 {
						return nil, &net.OpError{Op: "dial", Net: "tcp", Err: io.ErrUnexpectedEOF}
					}
					return answer(c.status, c.header), nil
				})}
				cfg, getenv := enabled("https://hooks.example/x")
				cfg.Timeout = time.Minute
				n, err := New(cfg, getenv, client, nil)
				if err != nil {
					t.Fatal(err)
				}
				n.Notify(pending("a"))
				time.Sleep(time.Hour)
				n.Close()
				if len(at) != len(c.want) {
					t.Fatalf("posts at %v, want at %v", at, c.want)
				}
				for i := range at {
					if at[i] != c.want[i] {
						t.Errorf("posts at %v, want at %v", at, c.want)
						break
					}
				}
				if s := n.Stats(); s != (Stats{Failed: 1}) {
					t.Errorf("stats %+v, want 1 failed", s)
				}
			})
		})
	}
}

// TestLogsHoldNoSecret: failures are logged with the webhook's host,
// never its URL or path, even when net/http's error or the receiver's
// answer quotes it.
func TestLogsHoldNoSecret(t *testing.T) {
	const secret = "T0SECRET/B0SECRET/s3cretTOKEN"
	core, logs := observer.New(zapcore.DebugLevel)
	log := zap.New(core)

	// A receiver that answers 500 with the URL it was called on.
	echo := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(500)
		io.WriteString(w, "no service at "+r.URL.Path)
	}))
	defer echo.Close()
	// An address where nothing listens: a network error quoting the URL.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := "http://" + l.Addr().String()
	l.Close()

	for _, base := range []string{echo.URL, dead} {
		cfg, getenv := enabled(base + "/services/" + secret)
		cfg.QueueSize = 1
		n := start(t, cfg, getenv, nil, log)
		n.Notify(pending("ap-1"))
		n.Notify(pending("ap-2")) // the queue is full: a drop is logged
		n.Close()
		if s := n.Stats(); s.Failed == 0 {
			t.Errorf("%s: stats %+v, want a failure", base, s)
		}
	}
	entries := logs.All()
	if len(entries) < 2 {
		t.Fatalf("%d log lines, want the failures", len(entries))
	}
	hosts := 0
	for _, e := range entries {
		line := e.Message
		for k, v := range e.ContextMap() {
			line += " " + k + "=" + strings.TrimSpace(strings.ReplaceAll(strings.ReplaceAll(toString(v), "\n", " "), "\t", " "))
		}
		for _, s := range []string{"SECRET", "s3cret", "/services/"} {
			if strings.Contains(line, s) {
				t.Errorf("a log line holds the webhook URL: %s", line)
			}
		}
		if strings.Contains(line, "webhook_host=127.0.0.1:") {
			hosts++
		}
	}
	if hosts != len(entries) {
		t.Errorf("%d of %d lines name the webhook's host", hosts, len(entries))
	}
}

func toString(v any) string { return fmt.Sprint(v) }
