package webhook

import (
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"
)

// FuzzEscape: whatever the agent sends, the escaped text stays within its
// bound, is valid UTF-8, and holds nothing Slack's mrkdwn would act on:
// no < or >, no & but ours, no backtick, no control character (a newline
// only when multiline), no format character (bidirectional
// controls, zero-width ones) or line separator.
func FuzzEscape(f *testing.F) {
	for _, s := range []string{"", "<!channel>", "<http://x|y>", "&amp;", "```", "a\nb", "\xff", "\u202e", "\u200b\u2028", "界&<>`"} {
		f.Add(s, 10, false)
		f.Add(s, 3, true)
	}
	f.Fuzz(func(t *testing.T, s string, max int, multiline bool) {
		if max < 0 || max > 1<<16 {
			return
		}
		out := escape(s, max, multiline)
		if len(out) > max || !utf8.ValidString(out) {
			t.Fatalf("escape(%q, %d) = %q: over the bound or invalid UTF-8", s, max, out)
		}
		if strings.ContainsAny(out, "<>`") ||
			strings.Count(out, "&") != strings.Count(out, "&amp;")+strings.Count(out, "&lt;")+strings.Count(out, "&gt;") {
			t.Fatalf("escape(%q, %d) = %q: mrkdwn left in", s, max, out)
		}
		for _, r := range out {
			if (unicode.IsControl(r) && !(multiline && r == '\n')) || unicode.Is(unicode.Cf, r) || unicode.In(r, unicode.Zl, unicode.Zp) {
				t.Fatalf("escape(%q, %d) = %q: control character %U", s, max, out, r)
			}
		}
	})
}
