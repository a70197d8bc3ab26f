package webhook

import (
	"net/url"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/toolgate/toolgate/approvals/store"
)

// Slack's limit on a section block's text is 3000 characters; the text is
// kept under it in bytes (never fewer than characters).
const maxSectionBytes = 2900

// What each field keeps of an agent's text, measured after escaping.
const (
	maxFieldBytes   = 120 // tool, host, project, session, policy
	maxReasonBytes  = 400
	maxDisplayBytes = 1500
	maxIDBytes      = store.MaxIDBytes
)

// item is what waits in the queue: a pending approval's fields, already
// cut to what a message shows, so a full queue holds kilobytes per entry
// and not the check's whole request.
type item struct {
	id, tool, host, project, session, policy, reason, display string
	deadline                                                  time.Time
}

func newItem(p store.Pending) item {
	// Raw cuts at a multiple of the shown size: escaping may grow text
	// up to five times, and the shown cut happens when the message is
	// written.
	return item{
		id:       cutRaw(p.ID, maxIDBytes),
		tool:     cutRaw(p.Tool, maxFieldBytes),
		host:     cutRaw(p.Host, maxFieldBytes),
		project:  cutRaw(p.Project, maxFieldBytes),
		session:  cutRaw(p.Session, maxFieldBytes),
		policy:   cutRaw(p.Policy, maxFieldBytes),
		reason:   cutRaw(p.Reason, maxReasonBytes),
		display:  cutRaw(p.Display, maxDisplayBytes),
		deadline: p.Deadline,
	}
}

// cutRaw keeps at most max bytes of s plus one byte, so that the shown
// cut still knows there was more; it may split a rune (escape repairs it).
func cutRaw(s string, max int) string {
	if len(s) > max+1 {
		return s[:max+1]
	}
	return s
}

// message is the Slack-compatible incoming-webhook body.
type message struct {
	Text        string  `json:"text"`
	Blocks      []block `json:"blocks"`
	UnfurlLinks bool    `json:"unfurl_links"`
	UnfurlMedia bool    `json:"unfurl_media"`
}

type block struct {
	Type string   `json:"type"`
	Text *textObj `json:"text,omitempty"`
}

type textObj struct {
	Type string `json:"type"`
	Text string `json:"text"`
}

// format writes the message for one pending approval. Every value from
// the agent is escaped for Slack's mrkdwn (no link, mention or entity of
// its own), shown as code (no formatting, and no bare URL made a link),
// and cut to a bound; only the page link is toolgate's.
func format(it item, pageURL string) message {
	var b strings.Builder
	b.WriteString("*A tool call waits for approval*\n")
	line := func(label, v string, max int) {
		b.WriteString("*" + label + ":* " + inlineCode(v, max) + "\n")
	}
	line("Tool", it.tool, maxFieldBytes)
	line("Host", it.host, maxFieldBytes)
	line("Project", it.project, maxFieldBytes)
	line("Session", it.session, maxFieldBytes)
	line("Policy", it.policy, maxFieldBytes)
	line("Why it asks", it.reason, maxReasonBytes)
	deadline := "-"
	if !it.deadline.IsZero() {
		deadline = it.deadline.UTC().Format("2006-01-02 15:04:05 UTC")
	}
	b.WriteString("*Answer by:* " + deadline + "\n")
	link := ""
	if pageURL != "" && it.id != "" {
		// PathEscape leaves none of <>| in the id; escape covers &.
		link = "<" + escape(strings.TrimRight(pageURL, "/")+"/approvals/"+url.PathEscape(it.id), 1<<20, false) + "|Open the approval>"
	}
	// The input gets what room is left under Slack's limit.
	room := maxSectionBytes - b.Len() - len(link) - len("*Input:*\n```\n```\n")
	b.WriteString("*Input:*\n" + codeBlock(it.display, min(room, maxDisplayBytes)) + "\n")
	b.WriteString(link)
	text := strings.TrimRight(b.String(), "\n")

	fallback := "A tool call waits for approval: " + inlineCode(it.tool, maxFieldBytes) +
		" on " + inlineCode(it.host, maxFieldBytes) + " in " + inlineCode(it.project, maxFieldBytes)
	return message{
		Text:   fallback,
		Blocks: []block{{Type: "section", Text: &textObj{Type: "mrkdwn", Text: text}}},
	}
}

// inlineCode shows a one-line value as `code`; an empty one as a dash.
func inlineCode(v string, max int) string {
	if v == "" {
		return "-"
	}
	return "`" + escape(v, max, false) + "`"
}

// codeBlock shows a multi-line value as a ``` block.
func codeBlock(v string, max int) string {
	if v == "" {
		return "-"
	}
	return "```\n" + escape(v, max, true) + "\n```"
}

// escape makes s safe inside Slack mrkdwn code: &, < and > become
// entities (so no <!channel>, <@user> or <url|label> of the agent's is
// parsed), a backtick becomes ˋ (U+02CB, so nothing leaves the code
// span), control and format characters (bidirectional overrides,
// zero-width ones) become spaces or U+FFFD (so nothing hides or reorders
// what the approver reads), line separators become spaces, invalid
// UTF-8 becomes U+FFFD; newlines survive only when multiline. The result
// is at most max bytes, cut between characters and marked with "…".
func escape(s string, max int, multiline bool) string {
	const more = "…"
	var b strings.Builder
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		i += size
		var piece string
		switch {
		case r == '&':
			piece = "&amp;"
		case r == '<':
			piece = "&lt;"
		case r == '>':
			piece = "&gt;"
		case r == '`':
			piece = "ˋ"
		case r == '\n' && multiline:
			piece = "\n"
		case r == '\n' || r == '\r' || r == '\t':
			piece = " "
		case unicode.In(r, unicode.Zl, unicode.Zp):
			// Line and paragraph separators break a line as \n does.
			piece = " "
			if multiline {
				piece = "\n"
			}
		case r == utf8.RuneError, unicode.IsControl(r), unicode.Is(unicode.Cf, r):
			piece = "\uFFFD"
		default:
			piece = string(r)
		}
		// Room for the marker unless this is the last character.
		limit := max
		if i < len(s) {
			limit -= len(more)
		}
		if b.Len()+len(piece) > limit {
			if b.Len()+len(more) <= max {
				b.WriteString(more)
			}
			return b.String()
		}
		b.WriteString(piece)
	}
	return b.String()
}
