package classifier

import (
	"context"
	"errors"
	"net"
	"net/http"
	"sync"
	"testing"

	"go.uber.org/zap"

	"github.com/toolgate/toolgate/fakellm"
)

// pipeListener is a net.Listener whose connections are net.Pipe pairs
// made by dial. A pipe blocks on channels, so inside a synctest bubble a
// request waiting on the fake is durably blocked and the fake clock can
// run; a goroutine blocked on a loopback socket is not, and would keep the
// clock still (the reason fakellm.Start cannot serve these tests).
type pipeListener struct {
	conns chan net.Conn
	done  chan struct{}
	once  sync.Once
}

func newPipeListener() *pipeListener {
	return &pipeListener{conns: make(chan net.Conn), done: make(chan struct{})}
}

func (l *pipeListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.done:
		return nil, net.ErrClosed
	}
}

func (l *pipeListener) Close() error {
	l.once.Do(func() { close(l.done) })
	return nil
}

func (l *pipeListener) Addr() net.Addr { return pipeAddr{} }

func (l *pipeListener) dial(ctx context.Context, _, _ string) (net.Conn, error) {
	client, server := net.Pipe()
	select {
	case l.conns <- server:
		return client, nil
	case <-l.done:
		_ = client.Close()
		_ = server.Close()
		return nil, net.ErrClosed
	case <-ctx.Done():
		_ = client.Close()
		_ = server.Close()
		return nil, ctx.Err()
	}
}

type pipeAddr struct{}

func (pipeAddr) Network() string { return "pipe" }
func (pipeAddr) String() string  { return "fakellm.test:80" }

// memNet is an in-memory network of fakellm servers, one per host name,
// and the HTTP client that reaches them. Made inside a synctest bubble, it
// belongs to it: everything it starts ends in t's cleanup, as the bubble
// requires.
type memNet struct {
	mu    sync.Mutex
	hosts map[string]*pipeListener
	tr    *http.Transport
}

func newMemNet(t *testing.T) *memNet {
	n := &memNet{hosts: map[string]*pipeListener{}}
	n.tr = &http.Transport{DialContext: n.dial}
	t.Cleanup(n.tr.CloseIdleConnections) // after every server's cleanup
	return n
}

func (n *memNet) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, err
	}
	n.mu.Lock()
	l := n.hosts[host]
	n.mu.Unlock()
	if l == nil {
		return nil, &net.OpError{Op: "dial", Net: network, Err: errors.New("no such host on the in-memory network: " + host)}
	}
	return l.dial(ctx, network, addr)
}

// client is the HTTP client to give the classifier.
func (n *memNet) client() *http.Client { return &http.Client{Transport: n.tr} }

// memFake is a fakellm served on a memNet.
type memFake struct {
	*fakellm.Server
	url string
}

// URL is the base URL to configure a backend with.
func (f *memFake) URL() string { return f.url }

// serve starts a fakellm answering with h at http://host/v1.
func (n *memNet) serve(t *testing.T, host string, h fakellm.Handler, opts ...fakellm.Option) *memFake {
	t.Helper()
	fake := fakellm.New(h, opts...)
	lis := newPipeListener()
	n.mu.Lock()
	n.hosts[host] = lis
	n.mu.Unlock()
	hs := &http.Server{Handler: fake}
	served := make(chan struct{})
	go func() {
		defer close(served)
		_ = hs.Serve(lis)
	}()
	t.Cleanup(func() {
		_ = fake.Close() // ends hangs, drips and latencies; waits for handlers
		_ = hs.Close()   // closes the listener and every server-side pipe
		<-served
	})
	return &memFake{Server: fake, url: "http://" + host + "/v1"}
}

// startMemFake is fakellm.Start on an in-memory network of its own, and
// the classifier option that reaches it.
func startMemFake(t *testing.T, h fakellm.Handler, opts ...fakellm.Option) (*memFake, Option) {
	t.Helper()
	n := newMemNet(t)
	return n.serve(t, "fakellm.test", h, opts...), WithHTTPClient(n.client())
}

// newMemClassifier is newTestClassifier with options (the in-memory
// network's client, metrics).
func newMemClassifier(t *testing.T, cfg Config, opts ...Option) *Classifier {
	t.Helper()
	c, err := New(cfg, map[string]Rules{"default": testRules}, zap.NewNop(), opts...)
	if err != nil {
		t.Fatal(err)
	}
	return c
}
