package web

import (
	"bytes"
	"fmt"
	"html/template"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"go.uber.org/zap"

	"github.com/toolgate/toolgate/approvals"
	"github.com/toolgate/toolgate/approvals/store"
	"github.com/toolgate/toolgate/redact"
)

// pageNames are the templates in templates/, each a "content" block
// inside layout.html.
var pageNames = []string{"login", "pending", "approval", "result", "rules", "decisions"}

// parsePages parses every page once; a template that does not parse is a
// bug caught by any test, so it panics.
func parsePages(now func() time.Time) map[string]*template.Template {
	funcs := template.FuncMap{
		"when":       when,
		"pathEscape": url.PathEscape,
		"answerForm": func(p store.Pending, csrf string, ttls []ttlChoice) answerForm {
			// Redacted like Display: the exact call can carry a credential.
			return answerForm{ID: p.ID, CSRF: csrf, TTLs: ttls, Rule: cut(redact.String(approvals.RuleOf(p)), listCut)}
		},
		"shown":      func(s string) template.HTML { return shown(s, false) },
		"shownLines": func(s string) template.HTML { return shown(s, true) },
		// until says how long remains before t, from the page's clock.
		"until": func(t time.Time) string {
			d := t.Sub(now()).Round(time.Second)
			if d <= 0 {
				return "passed"
			}
			return "in " + d.String()
		},
	}
	base := template.Must(template.New("layout.html").Funcs(funcs).ParseFS(templateFS, "templates/layout.html"))
	pages := make(map[string]*template.Template, len(pageNames))
	for _, n := range pageNames {
		pages[n] = template.Must(template.Must(base.Clone()).ParseFS(templateFS, "templates/"+n+".html"))
	}
	return pages
}

// answerForm is what the "answer" template needs.
type answerForm struct {
	ID, CSRF string
	TTLs     []ttlChoice
	// Rule is what an allow as a rule teaches, shown before the approver
	// answers; "" when no rule can name the call (no such button).
	Rule string
}

// layoutData is what layout.html sees: the page's title, the approver (no
// navigation without one), the session's CSRF token for the forms, and
// the page's own data.
type layoutData struct {
	Title    string
	Approver string
	CSRF     string
	Data     any
}

// render writes a page whole, or a plain 500 when it does not execute:
// nothing half-rendered reaches an approver.
func (h *handler) render(w http.ResponseWriter, code int, page, title string, v visitor, data any) {
	var buf bytes.Buffer
	err := h.pages[page].ExecuteTemplate(&buf, "layout.html", layoutData{Title: title, Approver: v.approver, CSRF: v.csrf, Data: data})
	if err != nil {
		h.log.Error("approvals page did not render", zap.String("page", page), zap.Error(err))
		http.Error(w, "internal error", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Content-Length", strconv.Itoa(buf.Len()))
	w.WriteHeader(code)
	_, _ = w.Write(buf.Bytes())
}

// shown is agent text ready for an element's content: HTML-escaped, and
// every character that could make what the approver reads differ from
// what the call holds written as a visible escape in an "esc" span (the
// style sets it apart from the same text typed literally): control
// characters, format characters (bidirectional overrides and isolates,
// zero-width characters: Trojan Source), line and paragraph separators,
// bytes that are not UTF-8. With lines (a <pre>), newlines are kept.
// Like the CLI's safeText.
func shown(s string, lines bool) template.HTML {
	var b strings.Builder
	plain := 0 // start of the run not yet written
	flush := func(i int) {
		b.WriteString(template.HTMLEscapeString(s[plain:i]))
	}
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		var esc string
		switch {
		case r == utf8.RuneError && n == 1:
			esc = fmt.Sprintf(`\x%02x`, s[i])
		case r == '\n' && lines:
		case unicode.IsControl(r):
			esc = fmt.Sprintf(`\x%02x`, r)
		case unicode.Is(unicode.Cf, r), unicode.In(r, unicode.Zl, unicode.Zp):
			if r > 0xffff {
				esc = fmt.Sprintf(`\U%08x`, r)
			} else {
				esc = fmt.Sprintf(`\u%04x`, r)
			}
		}
		if esc != "" {
			flush(i)
			b.WriteString(`<span class="esc">`)
			b.WriteString(esc)
			b.WriteString(`</span>`)
			plain = i + n
		}
		i += n
	}
	flush(len(s))
	return template.HTML(b.String())
}
