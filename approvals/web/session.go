package web

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"sync"
	"time"
)

// Bounds on what the page keeps in memory.
const (
	// MaxSessions is the most logins kept; a new one past it evicts the
	// one closest to expiry.
	MaxSessions = 10000
	// maxLoginFailures failed logins (or bearer tokens) from one address
	// within loginWindow make it wait for the window's end.
	maxLoginFailures = 10
	loginWindow      = 5 * time.Minute
	// maxLimited is the most addresses the login limiter tracks.
	maxLimited = 10000
)

// session is one approver's login. It keeps the token so that every
// request checks it again with Authenticate: a token Authenticate stops
// accepting ends its sessions at once, not when they expire. (toolgate
// serve reads its token file at start, so there that is a restart.)
type session struct {
	token   string
	csrf    string
	expires time.Time
}

// sessions are the logins, keyed by the SHA-256 of their id: a lookup's
// timing says nothing about the ids it compares with.
type sessions struct {
	mu  sync.Mutex
	m   map[[32]byte]session
	max int
	now func() time.Time
	ttl time.Duration
}

func newSessions(ttl time.Duration, max int, now func() time.Time) *sessions {
	return &sessions{m: make(map[[32]byte]session), max: max, now: now, ttl: ttl}
}

// randomID is 256 random bits, URL-safe.
func randomID() string {
	b := make([]byte, 32)
	_, _ = rand.Read(b) // crypto/rand.Read never fails: it crashes the program instead
	return base64.RawURLEncoding.EncodeToString(b)
}

// create starts a session for token and returns its id and session.
func (s *sessions) create(token string) (string, session) {
	id := randomID()
	se := session{token: token, csrf: randomID(), expires: s.now().Add(s.ttl)}
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.m) >= s.max {
		s.sweepLocked()
	}
	for len(s.m) >= s.max {
		var oldest [32]byte
		first := true
		for k, v := range s.m {
			if first || v.expires.Before(s.m[oldest].expires) {
				oldest, first = k, false
			}
		}
		delete(s.m, oldest)
	}
	s.m[sha256.Sum256([]byte(id))] = se
	return id, se
}

// get returns the session with id when it has not expired.
func (s *sessions) get(id string) (session, bool) {
	if id == "" {
		return session{}, false
	}
	k := sha256.Sum256([]byte(id))
	s.mu.Lock()
	defer s.mu.Unlock()
	se, ok := s.m[k]
	if !ok {
		return session{}, false
	}
	if !s.now().Before(se.expires) {
		delete(s.m, k)
		return session{}, false
	}
	return se, true
}

func (s *sessions) delete(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.m, sha256.Sum256([]byte(id)))
}

func (s *sessions) sweepLocked() {
	now := s.now()
	for k, v := range s.m {
		if !now.Before(v.expires) {
			delete(s.m, k)
		}
	}
}

// limiter counts failed logins per address in fixed windows.
type limiter struct {
	mu  sync.Mutex
	m   map[string]window
	now func() time.Time
}

type window struct {
	start    time.Time
	failures int
}

func newLimiter(now func() time.Time) *limiter {
	return &limiter{m: make(map[string]window), now: now}
}

// allowed reports whether addr may try a token now. When the table is
// full of live windows it refuses: failing closed costs a login, not an
// approval.
func (l *limiter) allowed(addr string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	w, ok := l.m[addr]
	if !ok {
		return len(l.m) < maxLimited || l.sweepLocked()
	}
	if l.now().Sub(w.start) >= loginWindow {
		delete(l.m, addr)
		return true
	}
	return w.failures < maxLoginFailures
}

// failed counts a failure from addr.
func (l *limiter) failed(addr string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.now()
	w, ok := l.m[addr]
	if !ok || now.Sub(w.start) >= loginWindow {
		if !ok && len(l.m) >= maxLimited && !l.sweepLocked() {
			return
		}
		w = window{start: now}
	}
	w.failures++
	l.m[addr] = w
}

// sweepLocked drops ended windows and reports whether there is room.
func (l *limiter) sweepLocked() bool {
	now := l.now()
	for k, w := range l.m {
		if now.Sub(w.start) >= loginWindow {
			delete(l.m, k)
		}
	}
	return len(l.m) < maxLimited
}
