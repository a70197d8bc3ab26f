package web

import (
	"bytes"
	"strings"
	"sync"
	"time"

	"go.uber.org/zap"
)

// Bounds on what a client without credentials can make the page log.
const (
	// logCut is the most bytes of a client's text (a path, an address) in
	// a log line.
	logCut = 200
	// refusalEvery is the least time between two lines of one kind of
	// refusal; those in between are counted, and the next line says how
	// many there were.
	refusalEvery = time.Second
	// stdLineCut is the most bytes of one line of the HTTP server's own
	// error log (a panic's stack keeps its first frames).
	stdLineCut = 4 << 10
)

// throttle lets through at most one line of each kind per refusalEvery.
// The kinds are the messages written in this package, a handful, so its
// map stays small whatever clients send.
type throttle struct {
	mu    sync.Mutex
	now   func() time.Time
	kinds map[string]*throttled
}

type throttled struct {
	last       time.Time
	suppressed int
}

func newThrottle(now func() time.Time) *throttle {
	return &throttle{now: now, kinds: make(map[string]*throttled)}
}

// let reports whether a line of kind may be written now and, when it may,
// how many were held back since the last one.
func (t *throttle) let(kind string) (ok bool, suppressed int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	now := t.now()
	k := t.kinds[kind]
	if k == nil {
		t.kinds[kind] = &throttled{last: now}
		return true, 0
	}
	if now.Sub(k.last) < refusalEvery {
		k.suppressed++
		return false, 0
	}
	n := k.suppressed
	k.last, k.suppressed = now, 0
	return true, n
}

// refused logs a refusal at Warn, at most once per refusalEvery for each
// msg: a client refused before it proved anything must not be able to
// grow the log by sending more requests. Fields must hold no more than
// logCut bytes of a client's text (see clip).
func (h *handler) refused(msg string, fields ...zap.Field) {
	ok, n := h.refusals.let(msg)
	if !ok {
		return
	}
	if n > 0 {
		fields = append(fields, zap.Int("suppressed", n))
	}
	h.log.Warn(msg, fields...)
}

// clip is s made fit for a log line: at most logCut bytes of it, valid
// UTF-8, marked when cut.
func clip(s string) string {
	if len(s) > logCut+utf8Max {
		s = s[:logCut+utf8Max]
	}
	return cut(strings.ToValidUTF8(s, "\uFFFD"), logCut)
}

const utf8Max = 4

// throttledWriter is the HTTP server's error log (TLS handshakes that
// fail, connections cut short): one line per refusalEvery, cut to
// stdLineCut bytes, because any client can make the server write one.
type throttledWriter struct {
	t   *throttle
	log *zap.Logger
}

func (w throttledWriter) Write(p []byte) (int, error) {
	ok, n := w.t.let("http server error")
	if !ok {
		return len(p), nil
	}
	fields := []zap.Field{}
	if n > 0 {
		fields = append(fields, zap.Int("suppressed", n))
	}
	line := bytes.TrimRight(p, "\n")
	if len(line) > stdLineCut+utf8Max {
		line = line[:stdLineCut+utf8Max]
	}
	w.log.Info(cut(strings.ToValidUTF8(string(line), "\uFFFD"), stdLineCut), fields...)
	return len(p), nil
}
