// Package web is the approvers' page of a central toolgate: it lists the
// calls waiting for a human's yes or no and answers them (allow once,
// deny, allow as a rule), lists the rules learned from answers, and the
// fleet's recent decisions.
//
// Everything an agent sent is hostile text: html/template escapes it, and
// the Content-Security-Policy allows no script or style but the page's
// own files. Approvers log in with their token (a client's token is
// refused); a login is a server-side session in an HttpOnly, SameSite
// Strict cookie. Every change is a POST that carries the session's CSRF
// token and comes from the page's own origin (see crossOrigin).
package web

import (
	"context"
	"crypto/subtle"
	"embed"
	"errors"
	"fmt"
	"html/template"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"
	"unicode/utf8"

	"go.uber.org/zap"

	"github.com/toolgate/toolgate/approvals"
	"github.com/toolgate/toolgate/approvals/store"
	"github.com/toolgate/toolgate/redact"
)

var _ Queue = (*approvals.Queue)(nil)

// Answer is an approver's answer, as the queue takes it.
type Answer = approvals.Answer

// Queue is what the page needs of the approvals queue.
type Queue interface {
	// List returns the approvals still pending, oldest first.
	List(ctx context.Context, limit int) ([]store.Pending, error)
	// Get returns one approval, settled or not (store.ErrNotFound).
	Get(ctx context.Context, id string) (store.Pending, error)
	// Answer settles a pending approval: store.ErrSettled (with the
	// approval as settled), store.ErrNotFound, store.ErrInvalid,
	// approvals.ErrRuleNotPossible; another error with the approval
	// settled is an answer given whose rule was not stored.
	Answer(ctx context.Context, id string, a Answer) (store.Pending, error)
	// Rules returns the learned rules in force.
	Rules(ctx context.Context) ([]store.Rule, error)
	DeleteRule(ctx context.Context, id, by string) error
	// Records returns the fleet's decision records, newest first.
	Records(ctx context.Context, f store.RecordFilter) ([]store.Record, error)
}

// Options are what New needs.
type Options struct {
	Queue Queue
	// Authenticate maps a token to its approver; ok is false for any
	// token that is not an approver's (a client's token included). It
	// must take the same time whichever token it is given (compare
	// digests in constant time): the page asks it before the login
	// limiter, so that a valid token is never refused.
	Authenticate func(token string) (approver string, ok bool)
	// Secure is true when the page is served over TLS: cookies are then
	// Secure and __Host- prefixed.
	Secure bool
	// SessionTTL is how long a login lasts; DefaultConfig's when zero.
	SessionTTL time.Duration
	// Now is the clock; time.Now when nil.
	Now func() time.Time
	Log *zap.Logger
}

// RuleTTLs are the lifetimes an approver may give a rule learned from an
// answer; the page accepts no other.
var RuleTTLs = []time.Duration{time.Hour, 8 * time.Hour, 24 * time.Hour}

// Bounds on what a page shows and reads.
const (
	maxFormBytes = 64 << 10
	// maxListed is the most pending approvals or rules one page lists.
	maxListed = 200
	// maxRecords is the most decision records one page lists.
	maxRecords   = 1000
	listCut      = 2000 // bytes of a Display shown in a list
	wordsCut     = 500  // bytes of the user's last words shown in a list
	reasonCut    = 300  // bytes of a record's reason shown in a list
	queryTimeout = 10 * time.Second
)

const (
	csrfField = "csrf"
	// The headers every answer carries: nothing but the page's own files
	// runs or styles it, no other page frames it, no URL leaks in a
	// Referer, and nothing is cached.
	csp = "default-src 'none'; style-src 'self'; script-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"
)

//go:embed templates/*.html
var templateFS embed.FS

//go:embed static
var staticFS embed.FS

type handler struct {
	opts     Options
	log      *zap.Logger
	now      func() time.Time
	sessions *sessions
	limiter  *limiter
	refusals *throttle
	pages    map[string]*template.Template
	mux      *http.ServeMux
}

// New returns the page's handler.
func New(opts Options) http.Handler {
	h := &handler{opts: opts, log: opts.Log, now: opts.Now}
	if h.log == nil {
		h.log = zap.NewNop()
	}
	if h.now == nil {
		h.now = time.Now
	}
	ttl := opts.SessionTTL
	if ttl <= 0 {
		ttl = DefaultConfig().SessionTTL
	}
	h.sessions = newSessions(ttl, MaxSessions, h.now)
	h.limiter = newLimiter(maxLimited, h.now)
	h.refusals = newThrottle(h.now)
	h.pages = parsePages(h.now)

	mux := http.NewServeMux()
	mux.Handle("GET /static/style.css", http.FileServerFS(staticFS))
	mux.HandleFunc("GET /login", h.loginPage)
	mux.HandleFunc("POST /login", h.login)
	mux.HandleFunc("POST /logout", h.post(h.logout))
	mux.HandleFunc("GET /{$}", h.get(h.pendingList))
	mux.HandleFunc("GET /approvals", h.get(h.pendingList))
	mux.HandleFunc("GET /approvals/{id}", h.get(h.approval))
	mux.HandleFunc("POST /approvals/{id}/answer", h.post(h.answer))
	mux.HandleFunc("GET /rules", h.get(h.rules))
	mux.HandleFunc("POST /rules/{id}/delete", h.post(h.deleteRule))
	mux.HandleFunc("GET /decisions", h.get(h.decisions))
	h.mux = mux
	return h
}

func (h *handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	hd := w.Header()
	hd.Set("Content-Security-Policy", csp)
	hd.Set("X-Frame-Options", "DENY")
	hd.Set("Referrer-Policy", "no-referrer")
	hd.Set("Cache-Control", "no-store")
	hd.Set("X-Content-Type-Options", "nosniff")
	if r.Body != nil {
		r.Body = http.MaxBytesReader(w, r.Body, maxFormBytes)
	}
	h.mux.ServeHTTP(w, r)
}

// visitor is who makes a request.
type visitor struct {
	approver string
	csrf     string // the session's CSRF token; empty for a bearer token
	bearer   bool
	sid      string
}

// errNoAuth: the request carries no credentials at all.
var errNoAuth = errors.New("not logged in")

// authenticate finds the request's approver: a bearer token when the
// request has an Authorization header (scripts), else the session cookie.
func (h *handler) authenticate(r *http.Request) (visitor, error) {
	if a := r.Header.Get("Authorization"); a != "" {
		scheme, token, _ := strings.Cut(a, " ")
		token = strings.TrimSpace(token)
		if !strings.EqualFold(scheme, "Bearer") || token == "" {
			return visitor{}, errors.New("the Authorization header is not a bearer token")
		}
		// The token first: the limiter slows down wrong guesses and never
		// stands between an approver and the page (behind a proxy every
		// approver shares one address).
		if who, ok := h.opts.Authenticate(token); ok {
			return visitor{approver: who, bearer: true}, nil
		}
		addr := remoteHost(r)
		if h.limiter.limited(addr) {
			return visitor{}, errors.New("too many failed tokens from this address; try again later")
		}
		h.limiter.failed(addr)
		h.refused("approvals page refused a bearer token", zap.String("remote", clip(addr)))
		return visitor{}, errors.New("the bearer token is not an approver's")
	}
	c, err := r.Cookie(h.cookieName())
	if err != nil {
		return visitor{}, errNoAuth
	}
	se, ok := h.sessions.get(c.Value)
	if !ok {
		return visitor{}, errNoAuth
	}
	who, ok := h.opts.Authenticate(se.token)
	if !ok {
		// The token is no longer an approver's: its sessions end now.
		h.sessions.delete(c.Value)
		return visitor{}, errNoAuth
	}
	return visitor{approver: who, csrf: se.csrf, sid: c.Value}, nil
}

// get wraps a page that needs an approver: without one, a browser is sent
// to the login page and a script (a bad bearer token) gets 401.
func (h *handler) get(fn func(http.ResponseWriter, *http.Request, visitor)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		v, err := h.authenticate(r)
		switch {
		case errors.Is(err, errNoAuth):
			h.clearCookie(w)
			http.Redirect(w, r, "/login", http.StatusSeeOther)
			return
		case err != nil:
			h.unauthorized(w, err)
			return
		}
		fn(w, r, v)
	}
}

// post wraps every request that changes something. It refuses, before
// reading anything else, a request a browser made for another site's page
// (crossOrigin); then it needs an approver, and from a session (not a
// bearer token, which no other site can make a browser send) the
// session's CSRF token in the form.
func (h *handler) post(fn func(http.ResponseWriter, *http.Request, visitor)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if why := h.crossOrigin(r); why != "" {
			h.refused("approvals page refused a cross-origin request", zap.String("path", clip(r.URL.Path)), zap.String("why", why))
			h.fail(w, http.StatusForbidden, "Refused", why)
			return
		}
		v, err := h.authenticate(r)
		if err != nil {
			h.unauthorized(w, err)
			return
		}
		if err := r.ParseForm(); err != nil {
			h.fail(w, http.StatusBadRequest, "Bad request", "The form could not be read.")
			return
		}
		if !v.bearer {
			got := r.PostForm.Get(csrfField)
			if got == "" || subtle.ConstantTimeCompare([]byte(got), []byte(v.csrf)) != 1 {
				h.refused("approvals page refused a request without the session's CSRF token", zap.String("path", clip(r.URL.Path)), zap.String("approver", clip(v.approver)))
				h.fail(w, http.StatusForbidden, "Refused", "The request did not carry this session's form token. Reload the page and try again.")
				return
			}
		}
		fn(w, r, v)
	}
}

// crossOrigin says why a request looks like one another site's page made,
// or "". Browsers mark what they send. Sec-Fetch-Site, on every request in
// current ones, is the authority: same-site too is refused (a sibling
// subdomain, or another port of this host, is another application). Its
// same-origin comes with Origin "null" from the page's own forms, because
// the page's Referrer-Policy is no-referrer. Without it (older browsers)
// Origin must be the page's own, "null" included in what is refused, and
// Referer is the last resort. A script sends none of them; the CSRF token
// or its bearer token guards it.
func (h *handler) crossOrigin(r *http.Request) string {
	own := h.origin(r)
	o := r.Header.Get("Origin")
	switch site := r.Header.Get("Sec-Fetch-Site"); site {
	case "same-origin":
		if o != "" && o != "null" && !strings.EqualFold(o, own) {
			return "the request's Origin is not this page's"
		}
		return ""
	case "", "none":
	default:
		return fmt.Sprintf("the request came from another site's page (Sec-Fetch-Site: %s)", cut(site, 40))
	}
	if o != "" {
		if !strings.EqualFold(o, own) {
			return "the request came from another origin's page (Origin is not this page's)"
		}
		return ""
	}
	if ref := r.Header.Get("Referer"); ref != "" {
		u, err := url.Parse(ref)
		if err != nil || !strings.EqualFold(u.Scheme+"://"+u.Host, own) {
			return "the request came from another origin's page (Referer is not this page's)"
		}
	}
	return ""
}

// origin is the page's own origin as the browser sees it.
func (h *handler) origin(r *http.Request) string {
	scheme := "http"
	if r.TLS != nil || h.opts.Secure {
		scheme = "https"
	}
	return scheme + "://" + r.Host
}

func (h *handler) cookieName() string {
	if h.opts.Secure {
		// A __Host- cookie is Secure, host-only and for the whole path:
		// no sibling domain or plaintext page can set or shadow it.
		return "__Host-toolgate_approver"
	}
	return "toolgate_approver"
}

func (h *handler) setCookie(w http.ResponseWriter, value string, maxAge int, expires time.Time) {
	http.SetCookie(w, &http.Cookie{
		Name:     h.cookieName(),
		Value:    value,
		Path:     "/",
		MaxAge:   maxAge,
		Expires:  expires,
		HttpOnly: true,
		Secure:   h.opts.Secure,
		SameSite: http.SameSiteStrictMode,
	})
}

func (h *handler) clearCookie(w http.ResponseWriter) {
	h.setCookie(w, "", -1, time.Unix(0, 0))
}

func (h *handler) unauthorized(w http.ResponseWriter, err error) {
	w.Header().Set("WWW-Authenticate", `Bearer realm="toolgate approvals"`)
	if errors.Is(err, errNoAuth) {
		h.fail(w, http.StatusUnauthorized, "Not logged in", "Log in with an approver's token first.")
		return
	}
	h.fail(w, http.StatusUnauthorized, "Not authorized", err.Error())
}

// remoteHost is the address a failed login is counted against: the
// connection's own, never X-Forwarded-For or the like, which any client
// writes as it likes.
func remoteHost(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	return host
}

// --- login ---

type loginData struct {
	Failed string
}

func (h *handler) loginPage(w http.ResponseWriter, r *http.Request) {
	h.render(w, http.StatusOK, "login", "Log in", visitor{}, loginData{})
}

func (h *handler) login(w http.ResponseWriter, r *http.Request) {
	if why := h.crossOrigin(r); why != "" {
		h.refused("approvals page refused a cross-origin login", zap.String("why", why))
		h.fail(w, http.StatusForbidden, "Refused", why)
		return
	}
	if err := r.ParseForm(); err != nil {
		h.fail(w, http.StatusBadRequest, "Bad request", "The form could not be read.")
		return
	}
	addr := remoteHost(r)
	token := strings.TrimSpace(r.PostForm.Get("token"))
	who, ok := "", false
	if token != "" {
		// The token first, whatever the limiter says of this address: a
		// valid token is never refused (behind a proxy every approver
		// has the proxy's address, and anyone's wrong guesses count
		// against it).
		who, ok = h.opts.Authenticate(token)
	}
	if !ok {
		if h.limiter.limited(addr) {
			h.render(w, http.StatusTooManyRequests, "login", "Log in", visitor{}, loginData{Failed: "Too many failed logins from this address; try again in a few minutes."})
			return
		}
		h.limiter.failed(addr)
		h.refused("approver login refused", zap.String("remote", clip(addr)))
		// Said without the token: it may be a real one of another kind.
		h.render(w, http.StatusUnauthorized, "login", "Log in", visitor{}, loginData{Failed: "Login failed: that is not an approver's token."})
		return
	}
	id, se := h.sessions.create(token)
	h.setCookie(w, id, int(se.expires.Sub(h.now())/time.Second), se.expires)
	h.log.Info("approver logged in", zap.String("approver", who), zap.String("remote", clip(addr)))
	http.Redirect(w, r, "/approvals", http.StatusSeeOther)
}

func (h *handler) logout(w http.ResponseWriter, r *http.Request, v visitor) {
	if v.sid != "" {
		h.sessions.delete(v.sid)
	}
	h.clearCookie(w)
	http.Redirect(w, r, "/login", http.StatusSeeOther)
}

// --- pages ---

type pendingListData struct {
	Pending []store.Pending
	Full    bool // the list was cut at maxListed
	TTLs    []ttlChoice
}

type ttlChoice struct {
	Value, Label string
}

func ttlChoices() []ttlChoice {
	out := make([]ttlChoice, len(RuleTTLs))
	for i, d := range RuleTTLs {
		out[i] = ttlChoice{Value: d.String(), Label: humanDuration(d)}
	}
	return out
}

func (h *handler) pendingList(w http.ResponseWriter, r *http.Request, v visitor) {
	ctx, cancel := context.WithTimeout(r.Context(), queryTimeout)
	defer cancel()
	ps, err := h.opts.Queue.List(ctx, maxListed)
	if err != nil {
		h.storeFailed(w, "list the pending approvals", err)
		return
	}
	for i := range ps {
		ps[i].Display = cut(ps[i].Display, listCut)
		ps[i].LastWords = cut(ps[i].LastWords, wordsCut)
		ps[i].Reason = cut(ps[i].Reason, wordsCut)
	}
	h.render(w, http.StatusOK, "pending", "Pending approvals", v, pendingListData{Pending: ps, Full: len(ps) >= maxListed, TTLs: ttlChoices()})
}

type approvalData struct {
	P    store.Pending
	TTLs []ttlChoice
}

func (h *handler) approval(w http.ResponseWriter, r *http.Request, v visitor) {
	id := r.PathValue("id")
	if !validID(id) {
		h.fail(w, http.StatusNotFound, "Not found", "There is no approval with that id.")
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), queryTimeout)
	defer cancel()
	p, err := h.opts.Queue.Get(ctx, id)
	switch {
	case errors.Is(err, store.ErrNotFound):
		h.fail(w, http.StatusNotFound, "Not found", "There is no approval with that id.")
		return
	case err != nil:
		h.storeFailed(w, "read the approval", err)
		return
	}
	h.render(w, http.StatusOK, "approval", "Approval", v, approvalData{P: p, TTLs: ttlChoices()})
}

type resultData struct {
	Heading string
	Message string
	Link    string // where to go next
	LinkTo  string
}

// answer settles an approval from the form's decision: allow (once),
// deny, or rule (allow, and learn a rule for one of RuleTTLs).
func (h *handler) answer(w http.ResponseWriter, r *http.Request, v visitor) {
	id := r.PathValue("id")
	if !validID(id) {
		h.fail(w, http.StatusNotFound, "Not found", "There is no approval with that id.")
		return
	}
	a := Answer{By: v.approver}
	var said string
	switch r.PostForm.Get("decision") {
	case "allow":
		a.Allow, said = true, "allowed once"
	case "deny":
		said = "denied"
	case "rule":
		ttl, ok := parseRuleTTL(r.PostForm.Get("ttl"))
		if !ok {
			h.fail(w, http.StatusBadRequest, "Invalid answer", "A rule's lifetime is one of the listed choices.")
			return
		}
		a.Allow, a.AsRule, a.RuleTTL = true, true, ttl
		said = "allowed, with a rule for " + humanDuration(ttl)
	default:
		h.fail(w, http.StatusBadRequest, "Invalid answer", "The answer is allow, deny or rule.")
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), queryTimeout)
	defer cancel()
	p, err := h.opts.Queue.Answer(ctx, id, a)
	link := "/approvals/" + url.PathEscape(id)
	switch {
	case err == nil:
		h.log.Info("approval answered", zap.String("approval_id", id), zap.String("approver", v.approver), zap.String("answer", r.PostForm.Get("decision")), zap.Duration("rule_ttl", a.RuleTTL))
		h.render(w, http.StatusOK, "result", "Answered", v, resultData{Heading: "Answered", Message: "The call is " + said + ".", Link: link, LinkTo: "the approval"})
	case errors.Is(err, store.ErrSettled):
		h.render(w, http.StatusConflict, "result", "Already settled", v, resultData{Heading: "Already settled", Message: settledBy(p), Link: link, LinkTo: "the approval"})
	case errors.Is(err, store.ErrNotFound):
		h.fail(w, http.StatusNotFound, "Not found", "There is no approval with that id.")
	case errors.Is(err, approvals.ErrRuleNotPossible):
		h.fail(w, http.StatusBadRequest, "No rule for this call", "No rule can name this call exactly; allow it once or deny it.")
	case errors.Is(err, store.ErrInvalid):
		h.fail(w, http.StatusBadRequest, "Invalid answer", cut(err.Error(), reasonCut))
	case p.ID != "" && p.Status != store.StatusPending:
		// The answer stands; only the rule it teaches was not stored.
		h.log.Error("approval answered but its rule was not stored", zap.String("approval_id", id), zap.String("approver", v.approver), zap.Error(err))
		h.render(w, http.StatusServiceUnavailable, "result", "Answered without the rule", v, resultData{Heading: "Answered without the rule",
			Message: fmt.Sprintf("The call is %s, but the rule could not be stored: the next identical call will be asked again.", p.Status), Link: link, LinkTo: "the approval"})
	default:
		h.log.Error("approvals page could not answer", zap.String("approval_id", id), zap.Error(err))
		h.fail(w, http.StatusServiceUnavailable, "Unavailable", "Could not answer: the approvals store did not answer. Open the approval again to see whether it is settled.")
	}
}

// settledBy says who settled p, how and when.
func settledBy(p store.Pending) string {
	a := p.Answer
	switch {
	case p.Status == store.StatusExpired || a.How == store.HowTimeout:
		return fmt.Sprintf("Nobody answered before the deadline; it expired at %s with the policy's outcome: %s.", when(a.At), a.Outcome)
	case a.By != "":
		return fmt.Sprintf("It was already %s by %s (%s) at %s.", p.Status, a.By, a.How, when(a.At))
	default:
		return fmt.Sprintf("It was already settled: %s.", p.Status)
	}
}

type rulesData struct {
	Rules []store.Rule
	Full  bool
}

func (h *handler) rules(w http.ResponseWriter, r *http.Request, v visitor) {
	ctx, cancel := context.WithTimeout(r.Context(), queryTimeout)
	defer cancel()
	rs, err := h.opts.Queue.Rules(ctx)
	if err != nil {
		h.storeFailed(w, "list the learned rules", err)
		return
	}
	full := len(rs) > maxListed
	if full {
		rs = rs[:maxListed]
	}
	for i := range rs {
		// A rule names the exact call, which can carry a credential:
		// shown redacted, as the call's Display is.
		rs[i].Text = redact.String(rs[i].Text)
	}
	h.render(w, http.StatusOK, "rules", "Learned rules", v, rulesData{Rules: rs, Full: full})
}

func (h *handler) deleteRule(w http.ResponseWriter, r *http.Request, v visitor) {
	id := r.PathValue("id")
	if !validID(id) {
		h.fail(w, http.StatusNotFound, "Not found", "There is no rule with that id.")
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), queryTimeout)
	defer cancel()
	err := h.opts.Queue.DeleteRule(ctx, id, v.approver)
	switch {
	case err == nil:
		h.log.Info("learned rule deleted", zap.String("rule_id", id), zap.String("approver", v.approver))
		h.render(w, http.StatusOK, "result", "Rule deleted", v, resultData{Heading: "Rule deleted", Message: "The rule no longer applies.", Link: "/rules", LinkTo: "the rules"})
	case errors.Is(err, store.ErrNotFound):
		h.fail(w, http.StatusNotFound, "Not found", "There is no rule with that id (it may have expired or been deleted).")
	default:
		h.storeFailed(w, "delete the rule", err)
	}
}

type decisionsData struct {
	F       store.RecordFilter
	Before  string
	Records []store.Record
	Older   string // the next page's URL, or ""
}

// decisions lists recent decision records; the query's host, project,
// session, decision and source filter them, before (RFC 3339) pages.
func (h *handler) decisions(w http.ResponseWriter, r *http.Request, v visitor) {
	q := r.URL.Query()
	f := store.RecordFilter{
		Host:     q.Get("host"),
		Project:  q.Get("project"),
		Session:  q.Get("session"),
		Decision: q.Get("decision"),
		Source:   q.Get("source"),
		Limit:    store.DefaultLimit,
	}
	for _, s := range []string{f.Host, f.Project, f.Session, f.Decision, f.Source} {
		if len(s) > store.MaxFieldBytes || !utf8.ValidString(s) {
			h.fail(w, http.StatusBadRequest, "Bad filter", fmt.Sprintf("A filter is valid UTF-8 of at most %d bytes.", store.MaxFieldBytes))
			return
		}
	}
	if s := q.Get("before"); s != "" {
		t, err := time.Parse(time.RFC3339Nano, s)
		if err != nil {
			h.fail(w, http.StatusBadRequest, "Bad filter", "before is a time in RFC 3339 form.")
			return
		}
		f.Before = t
	}
	if s := q.Get("limit"); s != "" {
		var n int
		if _, err := fmt.Sscan(s, &n); err != nil || n <= 0 || n > maxRecords {
			h.fail(w, http.StatusBadRequest, "Bad filter", fmt.Sprintf("limit is a number from 1 to %d.", maxRecords))
			return
		}
		f.Limit = n
	}
	ctx, cancel := context.WithTimeout(r.Context(), queryTimeout)
	defer cancel()
	recs, err := h.opts.Queue.Records(ctx, f)
	if err != nil {
		h.storeFailed(w, "list the decisions", err)
		return
	}
	d := decisionsData{F: f, Records: recs}
	if !f.Before.IsZero() {
		d.Before = f.Before.Format(time.RFC3339Nano)
	}
	for i := range d.Records {
		d.Records[i].Reason = cut(redact.String(d.Records[i].Reason), reasonCut)
	}
	if len(recs) > 0 && len(recs) >= f.Limit {
		older := url.Values{}
		for k, s := range map[string]string{"host": f.Host, "project": f.Project, "session": f.Session, "decision": f.Decision, "source": f.Source} {
			if s != "" {
				older.Set(k, s)
			}
		}
		if f.Limit != store.DefaultLimit {
			older.Set("limit", fmt.Sprint(f.Limit))
		}
		older.Set("before", recs[len(recs)-1].Time.UTC().Format(time.RFC3339Nano))
		d.Older = "/decisions?" + older.Encode()
	}
	h.render(w, http.StatusOK, "decisions", "Decisions", v, d)
}

// --- helpers ---

func (h *handler) storeFailed(w http.ResponseWriter, what string, err error) {
	h.log.Error("approvals page could not "+what, zap.Error(err))
	h.fail(w, http.StatusServiceUnavailable, "Unavailable", "Could not "+what+": the approvals store did not answer. Try again.")
}

func (h *handler) fail(w http.ResponseWriter, code int, heading, message string) {
	h.render(w, code, "result", heading, visitor{}, resultData{Heading: heading, Message: message})
}

// validID: an id the store could hold (anything else is not found).
func validID(id string) bool {
	return id != "" && len(id) <= store.MaxIDBytes && utf8.ValidString(id)
}

func parseRuleTTL(s string) (time.Duration, bool) {
	for _, d := range RuleTTLs {
		if s == d.String() {
			return d, true
		}
	}
	return 0, false
}

// cut shortens s to at most n bytes, at a rune boundary, saying so.
func cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	i := n
	for i > 0 && !utf8.RuneStart(s[i]) {
		i--
	}
	return s[:i] + fmt.Sprintf("… (%d more bytes)", len(s)-i)
}

func when(t time.Time) string {
	if t.IsZero() {
		return "—"
	}
	return t.UTC().Format("2006-01-02 15:04:05 UTC")
}

func humanDuration(d time.Duration) string {
	if d%time.Hour == 0 {
		if d == time.Hour {
			return "1 hour"
		}
		return fmt.Sprintf("%d hours", d/time.Hour)
	}
	return d.String()
}
