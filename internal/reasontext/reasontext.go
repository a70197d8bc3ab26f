// Package reasontext makes text from elsewhere (a model, a central
// toolgate) safe to show an agent as a decision's reason. The classifier
// and the upstream link share it.
package reasontext

import (
	"regexp"
	"strings"
	"unicode"
	"unicode/utf8"
)

// cutMark ends a reason that was cut.
const cutMark = "…"

var (
	// reasonANSIRE matches terminal escape sequences: CSI (also the one-byte C1
	// form), OSC and string sequences up to their terminator, and two-byte
	// escapes.
	reasonANSIRE = regexp.MustCompile(`\x1b\[[0-?]*[ -/]*[@-~]` +
		`|\x{9b}[0-?]*[ -/]*[@-~]` +
		`|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)?` +
		`|\x1b[PX^_][^\x1b]*(?:\x1b\\)?` +
		`|\x1b[ -/]*[0-~]`)
	reasonTagRE = regexp.MustCompile(`<[^<>]*>`)
)

// Sanitize makes a model-written reason safe to show the agent: strips anything tag-like (<...>), control characters
// (incl. ANSI escapes, \r, \n → space, collapsed whitespace), trims, and caps at max runes (with "…").
//
// Tags are removed repeatedly (so nested "<a<b>>" goes too) and any angle
// bracket left over is dropped, so the result never contains '<' or '>'.
// Unicode format characters (bidi overrides, zero-width) are dropped too.
// The result is valid UTF-8; the cut mark counts toward max; max < 1 gives "".
func Sanitize(s string, max int) string {
	s = strings.ToValidUTF8(s, "")
	s = reasonANSIRE.ReplaceAllString(s, "")
	s = strings.Map(func(r rune) rune {
		switch {
		case unicode.IsSpace(r) || unicode.IsControl(r):
			return ' '
		case unicode.Is(unicode.Cf, r):
			return -1
		}
		return r
	}, s)
	for {
		t := reasonTagRE.ReplaceAllString(s, " ")
		if t == s {
			break
		}
		s = t
	}
	s = strings.NewReplacer("<", "", ">", "").Replace(s)
	s = strings.Join(strings.Fields(s), " ")
	if max < 1 {
		return ""
	}
	if utf8.RuneCountInString(s) <= max {
		return s
	}
	// No space before the mark: "word …" reads worse than "word…".
	return strings.TrimRight(runePrefix(s, max-1), " ") + cutMark
}

// runePrefix is s's first k runes.
func runePrefix(s string, k int) string {
	i := 0
	for n := 0; i < len(s) && n < k; n++ {
		_, w := utf8.DecodeRuneInString(s[i:])
		i += w
	}
	return s[:i]
}
