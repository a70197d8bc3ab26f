package web

import (
	"container/list"
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

// limiter counts failed tokens per address in fixed windows. It never
// stands between a valid token and the page (the token is checked first,
// in constant time): it only answers an address's further wrong guesses
// with "try later", and what it counts is the connection's own address,
// never a header a client can write (X-Forwarded-For). Guessing itself is
// made hopeless by the tokens' length, not by this.
type limiter struct {
	mu sync.Mutex
	m  map[string]*list.Element // of *window
	// order holds the windows oldest first: a full table evicts the front.
	order *list.List
	max   int
	now   func() time.Time
}

type window struct {
	addr     string
	start    time.Time
	failures int
}

func newLimiter(max int, now func() time.Time) *limiter {
	return &limiter{m: make(map[string]*list.Element), order: list.New(), max: max, now: now}
}

// limited reports whether addr has used up its wrong guesses for now.
func (l *limiter) limited(addr string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	e, ok := l.m[addr]
	if !ok {
		return false
	}
	w := e.Value.(*window)
	if l.now().Sub(w.start) >= loginWindow {
		l.order.Remove(e)
		delete(l.m, addr)
		return false
	}
	return w.failures >= maxLoginFailures
}

// failed counts a wrong token from addr. A full table forgets its oldest
// window to make room: refusing the newcomer instead would let one
// failure from each of many addresses lock every other address out.
func (l *limiter) failed(addr string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.now()
	if e, ok := l.m[addr]; ok {
		w := e.Value.(*window)
		if now.Sub(w.start) < loginWindow {
			w.failures++
			return
		}
		l.order.Remove(e)
		delete(l.m, addr)
	}
	for len(l.m) >= l.max {
		oldest := l.order.Front()
		l.order.Remove(oldest)
		delete(l.m, oldest.Value.(*window).addr)
	}
	l.m[addr] = l.order.PushBack(&window{addr: addr, start: now, failures: 1})
}
