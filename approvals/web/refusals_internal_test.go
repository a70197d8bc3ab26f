package web

import (
	"fmt"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"
)

// clock is a clock a test moves.
type clock struct{ t time.Time }

func (c *clock) now() time.Time { return c.t }

func TestLimiterEvictsOldest(t *testing.T) {
	c := &clock{t: time.Date(2026, 11, 28, 0, 0, 0, 0, time.UTC)}
	l := newLimiter(2, c.now)
	for range maxLoginFailures {
		l.failed("a")
	}
	if !l.limited("a") {
		t.Fatal("a is not limited after its failures")
	}
	c.t = c.t.Add(time.Second)
	for range maxLoginFailures {
		l.failed("b")
	}
	c.t = c.t.Add(time.Second)
	l.failed("c") // the table is full: a, the oldest, makes room
	if l.limited("a") || !l.limited("b") || l.limited("c") {
		t.Fatalf("after c: a %v, b %v, c %v; want a forgotten, b limited, c counted", l.limited("a"), l.limited("b"), l.limited("c"))
	}
	if len(l.m) != 2 || l.order.Len() != 2 {
		t.Fatalf("%d addresses, %d in order; want 2", len(l.m), l.order.Len())
	}
	// A window that ended starts again at the back.
	c.t = c.t.Add(loginWindow)
	l.failed("b")
	l.failed("d")
	if _, ok := l.m["c"]; ok {
		t.Fatal("c, now the oldest, was kept")
	}
	if _, ok := l.m["b"]; !ok {
		t.Fatal("b's new window was evicted")
	}
}

func TestServerErrorLogThrottled(t *testing.T) {
	c := &clock{t: time.Date(2026, 11, 28, 0, 0, 0, 0, time.UTC)}
	core, logs := observer.New(zap.InfoLevel)
	w := throttledWriter{t: newThrottle(c.now), log: zap.New(core)}
	long := "http: TLS handshake error from 192.0.2.1:1234: " + strings.Repeat("x", 64<<10) + "\xff\n"
	for i := range 100 {
		if n, err := w.Write([]byte(fmt.Sprintf("line %d %s", i, long))); err != nil || n == 0 {
			t.Fatalf("write: %d %v", n, err)
		}
	}
	c.t = c.t.Add(refusalEvery)
	_, _ = w.Write([]byte("the next\n"))
	all := logs.All()
	if len(all) != 2 {
		t.Fatalf("%d lines, want 2", len(all))
	}
	if m := all[0].Message; len(m) > stdLineCut+100 || !utf8.ValidString(m) || !strings.HasPrefix(m, "line 0 http: TLS handshake error") {
		t.Fatalf("first line: %d bytes, valid %v: %.80q", len(m), utf8.ValidString(m), m)
	}
	if all[1].Message != "the next" || all[1].ContextMap()["suppressed"] != int64(99) {
		t.Fatalf("second line: %q %v, want the next with 99 suppressed", all[1].Message, all[1].ContextMap())
	}
}

func TestShown(t *testing.T) {
	for _, c := range []struct {
		in    string
		lines bool
		want  string
	}{
		{"plain <b>&\"'", false, "plain &lt;b&gt;&amp;&#34;&#39;"},
		{"a\u202eb", false, `a<span class="esc">\u202e</span>b`},
		{`typed \u202e`, false, `typed \u202e`}, // literal text, no span: the style tells them apart
		{"x\xffy", false, `x<span class="esc">\xff</span>y`},
		{"1\n2\t3\r", false, `1<span class="esc">\x0a</span>2<span class="esc">\x09</span>3<span class="esc">\x0d</span>`},
		{"1\n2\r\n", true, "1\n2<span class=\"esc\">\\x0d</span>\n"},
		{"\u0085\u2029\U000e0001<", true, `<span class="esc">\x85</span><span class="esc">\u2029</span><span class="esc">\U000e0001</span>&lt;`},
		{"", false, ""},
	} {
		if got := string(shown(c.in, c.lines)); got != c.want {
			t.Errorf("shown(%q, %v) = %q, want %q", c.in, c.lines, got, c.want)
		}
	}
}
