// Package sessionblocks counts a classifier's blocks per agent session,
// to bring a human in when a session keeps getting blocked: an agent that
// retries a refused action in other words is asked about, not classified
// again. Whichever server holds the session counts (a central classifier
// counts nothing for a local server's sessions).
package sessionblocks

import (
	"fmt"
	"sync"

	lru "github.com/hashicorp/golang-lru/v2"
)

// Limits are the blocks a session may take: in a row, and in all.
type Limits struct {
	Consecutive int `yaml:"consecutive"`
	Total       int `yaml:"total"`
}

// maxSessions bounds the sessions remembered; the least recently seen
// are forgotten first.
const maxSessions = 10000

// Sessions are the counters of the sessions seen.
type Sessions struct {
	limits Limits
	m      *lru.Cache[string, *Session]
}

// New counts against l, whose fields must be positive.
func New(l Limits) (*Sessions, error) {
	if l.Consecutive <= 0 || l.Total <= 0 {
		return nil, fmt.Errorf("session block limits must be positive, got %d and %d", l.Consecutive, l.Total)
	}
	m, err := lru.New[string, *Session](maxSessions)
	if err != nil {
		return nil, err
	}
	return &Sessions{limits: l, m: m}, nil
}

// Get returns the session's counter; nil (which counts nothing) for a
// request without a session id.
func (s *Sessions) Get(id string) *Session {
	if id == "" {
		return nil
	}
	if c, ok := s.m.Get(id); ok {
		return c
	}
	c := &Session{limits: s.limits}
	if prev, ok, _ := s.m.PeekOrAdd(id, c); ok {
		return prev
	}
	return c
}

// Session counts one session's blocks.
type Session struct {
	limits             Limits
	mu                 sync.Mutex
	consecutive, total int
}

// Over says why the session has had too many blocks, if it has.
func (s *Session) Over() (string, bool) {
	if s == nil {
		return "", false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.consecutive >= s.limits.Consecutive:
		return fmt.Sprintf("the classifier blocked %d calls in a row in this session; asking the user instead", s.consecutive), true
	case s.total >= s.limits.Total:
		return fmt.Sprintf("the classifier blocked %d calls in this session; asking the user instead", s.total), true
	}
	return "", false
}

// Record counts a verdict: a block, or not (which ends a run of blocks).
func (s *Session) Record(blocked bool) {
	if s == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if blocked {
		s.consecutive++
		s.total++
	} else {
		s.consecutive = 0
	}
}
