package web

import (
	"bytes"
	"html/template"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"go.uber.org/zap"

	"github.com/toolgate/toolgate/approvals"
	"github.com/toolgate/toolgate/approvals/store"
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
			return answerForm{ID: p.ID, CSRF: csrf, TTLs: ttls, Rule: cut(approvals.RuleOf(p), listCut)}
		},
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
