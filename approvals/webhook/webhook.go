// Package webhook announces each new pending approval to a chat channel
// through a Slack-compatible incoming webhook, so that someone can answer
// an unattended agent's call while it waits.
//
// A check never waits for the webhook: Notify queues the message (a full
// queue drops it, counted) and one goroutine posts, retrying a failure
// that may pass (a 5xx, 429, or a network error) a bounded number of
// times. The webhook URL is a credential: whoever holds it posts to the
// channel. So the config names the environment variable holding it, and
// neither the URL nor its path reaches a log or an error (the host at
// most). Everything in a message that came from the agent is escaped for
// Slack's mrkdwn, shown as code, and cut to a bound.
package webhook

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"go.uber.org/zap"

	"github.com/toolgate/toolgate/approvals/store"
)

// Retry schedule: up to maxAttempts POSTs per message, waiting
// backoffBase, then twice as long each time, at most maxBackoff (a
// Retry-After the receiver sends is obeyed up to maxBackoff).
const (
	maxAttempts = 4
	backoffBase = 500 * time.Millisecond
	maxBackoff  = 30 * time.Second
)

// Stats counts messages; the app exports them as metrics.
type Stats struct {
	Sent    uint64 // accepted by the receiver (2xx)
	Failed  uint64 // given up on: a 4xx, retries spent, or cut off by Close
	Dropped uint64 // never tried: the queue was full, or Close had begun or ran out of time
}

// Notifier posts a message for each pending approval it is given.
type Notifier struct {
	url     string // the secret: only ever passed to the HTTP client
	host    string // what logs say instead
	pageURL string
	timeout time.Duration
	backoff time.Duration
	client  *http.Client
	log     *zap.Logger

	mu     sync.RWMutex // closed and sends on queue: nothing queued after Close
	closed bool
	queue  chan item

	ctx       context.Context // ends when Close's drain runs out of time
	cancel    context.CancelFunc
	stop      chan struct{}
	done      chan struct{}
	closeOnce sync.Once

	sent, failed, dropped atomic.Uint64
}

// New starts a notifier for cfg, which must be enabled (cfg.Enabled). It
// reads the webhook URL from the environment variable cfg.URLEnv through
// getenv (os.Getenv when nil). client sends the POSTs; when nil, a client
// that follows no redirect (a redirect would carry the approval to
// another address). log may be nil.
func New(cfg Config, getenv func(string) string, client *http.Client, log *zap.Logger) (*Notifier, error) {
	return newNotifier(cfg, getenv, client, log, backoffBase)
}

func newNotifier(cfg Config, getenv func(string) string, client *http.Client, log *zap.Logger, backoff time.Duration) (*Notifier, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if !cfg.Enabled() {
		return nil, errors.New("approvals.webhook.url_env: no webhook configured")
	}
	if getenv == nil {
		getenv = os.Getenv
	}
	raw := getenv(cfg.URLEnv)
	if raw == "" {
		return nil, fmt.Errorf("approvals.webhook.url_env: the environment variable %s is empty or unset", cfg.URLEnv)
	}
	// The parse error is not wrapped: it quotes the URL.
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("approvals.webhook.url_env: the environment variable %s does not hold an absolute http(s) URL", cfg.URLEnv)
	}
	if client == nil {
		client = &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	}
	if log == nil {
		log = zap.NewNop()
	}
	ctx, cancel := context.WithCancel(context.Background())
	n := &Notifier{
		url:     raw,
		host:    u.Host,
		pageURL: cfg.PageURL,
		timeout: cfg.Timeout,
		backoff: backoff,
		client:  client,
		log:     log.With(zap.String("webhook_host", u.Host)),
		queue:   make(chan item, cfg.QueueSize),
		ctx:     ctx,
		cancel:  cancel,
		stop:    make(chan struct{}),
		done:    make(chan struct{}),
	}
	go n.run()
	return n, nil
}

// Notify queues a message announcing p. It never blocks: when the queue
// is full, or the notifier is closed, the message is dropped and counted.
func (n *Notifier) Notify(p store.Pending) {
	it := newItem(p)
	n.mu.RLock()
	defer n.mu.RUnlock()
	if n.closed {
		n.drop(p.ID, "closed")
		return
	}
	select {
	case n.queue <- it:
	default:
		n.drop(p.ID, "queue full")
	}
}

func (n *Notifier) drop(id, why string) {
	d := n.dropped.Add(1)
	// A flood of drops logs a line at 1, 2, 4, 8... drops, not one each.
	if d&(d-1) == 0 {
		n.log.Warn("approval webhook message dropped", zap.String("approval_id", cutRaw(id, maxIDBytes)),
			zap.String("why", why), zap.Uint64("dropped_total", d))
	}
}

// Stats returns the counters so far.
func (n *Notifier) Stats() Stats {
	return Stats{Sent: n.sent.Load(), Failed: n.failed.Load(), Dropped: n.dropped.Load()}
}

// Close stops taking messages, posts those queued for at most the
// configured timeout, then stops the sender: what is still queued then is
// dropped, and a POST in flight is cut off (failed). It returns once the
// sender has stopped. Calling it again does nothing.
func (n *Notifier) Close() {
	n.closeOnce.Do(func() {
		n.mu.Lock()
		n.closed = true
		n.mu.Unlock()
		close(n.stop)
		bound := time.AfterFunc(n.timeout, n.cancel)
		<-n.done
		bound.Stop()
		n.cancel()
	})
}

func (n *Notifier) run() {
	defer close(n.done)
	for {
		select {
		case it := <-n.queue:
			n.deliver(it)
		case <-n.stop:
			// Nothing is queued after stop (Notify checks closed under
			// the lock Close took), so this drains what there is.
			for {
				select {
				case it := <-n.queue:
					n.deliver(it)
				default:
					return
				}
			}
		}
	}
}

// deliver posts one message, retrying what may pass.
func (n *Notifier) deliver(it item) {
	if n.ctx.Err() != nil {
		// Close ran out of time: what is still queued is not tried.
		n.drop(it.id, "closing")
		return
	}
	body, err := json.Marshal(format(it, n.pageURL))
	if err != nil {
		n.failed.Add(1)
		n.log.Error("approval webhook message not encoded", zap.String("approval_id", it.id), zap.Error(err))
		return
	}
	for attempt := 1; ; attempt++ {
		wait, retry, err := n.post(body)
		if err == nil {
			n.sent.Add(1)
			return
		}
		if !retry || attempt == maxAttempts || n.ctx.Err() != nil {
			n.fail(it, attempt, err)
			return
		}
		if wait <= 0 {
			wait = n.backoff << (attempt - 1)
		}
		t := time.NewTimer(min(wait, maxBackoff))
		select {
		case <-t.C:
		case <-n.ctx.Done():
			t.Stop()
			n.fail(it, attempt, err)
			return
		}
	}
}

func (n *Notifier) fail(it item, attempts int, err error) {
	n.failed.Add(1)
	n.log.Warn("approval webhook failed", zap.String("approval_id", it.id), zap.Int("attempts", attempts), zap.String("error", err.Error()))
}

// post sends body once. It says whether a failure may pass when tried
// again, and how long the receiver asked to wait first (Retry-After). Its
// error never holds the URL.
func (n *Notifier) post(body []byte) (wait time.Duration, retry bool, err error) {
	ctx, cancel := context.WithTimeout(n.ctx, n.timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, n.url, bytes.NewReader(body))
	if err != nil {
		return 0, false, errors.New("request not built")
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "toolgate")
	resp, err := n.client.Do(req)
	if err != nil {
		return 0, true, n.scrub(err)
	}
	defer resp.Body.Close()
	// Read a little, for the log line and so the connection is reused.
	snippet, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	if resp.StatusCode >= 200 && resp.StatusCode < 300 {
		return 0, false, nil
	}
	err = fmt.Errorf("status %d: %s", resp.StatusCode, n.scrub(errors.New(cutRaw(string(snippet), 200))))
	switch {
	case resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode >= 500:
		return retryAfter(resp.Header.Get("Retry-After")), true, err
	default:
		// A 4xx says the message or the URL is wrong: sending it again
		// will not help. A 3xx is a redirect not followed.
		return 0, false, err
	}
}

// scrub removes the URL from an error's text: net/http's errors quote it
// (Post "https://hooks.example/services/SECRET": ...).
func (n *Notifier) scrub(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err
	}
	msg := err.Error()
	if u, perr := url.Parse(n.url); perr == nil {
		for _, s := range []string{n.url, u.Path, u.RawPath, u.RawQuery, u.EscapedPath()} {
			if len(s) > 1 {
				msg = strings.ReplaceAll(msg, s, "[webhook url]")
			}
		}
	}
	if !utf8.ValidString(msg) {
		msg = strings.ToValidUTF8(msg, "?")
	}
	return errors.New(msg)
}

// retryAfter reads a Retry-After header given in seconds (Slack's form);
// 0 when absent or in another form.
func retryAfter(v string) time.Duration {
	s, err := strconv.Atoi(strings.TrimSpace(v))
	switch {
	case err != nil || s <= 0:
		return 0
	case s >= int(maxBackoff/time.Second):
		return maxBackoff
	}
	return time.Duration(s) * time.Second
}
