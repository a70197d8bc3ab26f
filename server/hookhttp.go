package server

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"go.uber.org/zap"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/status"

	"github.com/toolgate/toolgate/engine/pathcheck"
	pb "github.com/toolgate/toolgate/gen/toolgate/v1"
	"github.com/toolgate/toolgate/hook"
	"github.com/toolgate/toolgate/hook/hookout"
	"github.com/toolgate/toolgate/internal/hookcli"
	"github.com/toolgate/toolgate/internal/hookhttp"
)

// HookConfig is the hook listener (server.hook): agents' hooks posted over
// HTTP, answered with no process started per call. Claude Code's HTTP
// hooks post here; so does toolgate-hook.
type HookConfig struct {
	// Listen is a TCP address for the hook listener; empty: none. It must
	// be a loopback address unless server.token_file makes callers
	// authenticate and server.tls keeps their tokens and answers private.
	Listen string `yaml:"listen"`
	// UnixSocket is a Unix socket for the hook listener (mode
	// server.unix_socket_mode); empty: none.
	UnixSocket string `yaml:"unix_socket"`
	// Timeout bounds one hook request: reading it, deciding, answering.
	Timeout time.Duration `yaml:"timeout"`
	// MaxInFlight bounds the hook requests served at once; one more is
	// answered at once with the failure (a deny), not queued: each may
	// hold an input of up to 16 MiB.
	MaxInFlight int `yaml:"max_in_flight"`
}

// Enabled reports whether a hook listener is configured.
func (c HookConfig) Enabled() bool { return c.Listen != "" || c.UnixSocket != "" }

func defaultHookConfig() HookConfig { return HookConfig{Timeout: 30 * time.Second, MaxInFlight: 64} }

func (c HookConfig) validate(tokens, tlsOn bool) []error {
	var errs []error
	if c.Listen != "" {
		host, _, err := net.SplitHostPort(c.Listen)
		switch {
		case err != nil:
			errs = append(errs, fmt.Errorf("server.hook.listen: %q is not host:port: %w", c.Listen, err))
		case (!tokens || !tlsOn) && !loopbackHost(host):
			errs = append(errs, fmt.Errorf("server.hook.listen: %q is not a loopback address; a hook listener reachable from the network needs server.token_file and server.tls (a token in plaintext can be read, and an answer rewritten, on the way)", c.Listen))
		}
	}
	if c.UnixSocket != "" && (!strings.HasPrefix(c.UnixSocket, "/") || len(c.UnixSocket) >= maxUnixSocketPath) {
		errs = append(errs, fmt.Errorf("server.hook.unix_socket: %q must be an absolute path shorter than %d bytes", c.UnixSocket, maxUnixSocketPath))
	}
	if c.Timeout <= 0 {
		errs = append(errs, fmt.Errorf("server.hook.timeout: must be positive, got %s", c.Timeout))
	}
	if c.MaxInFlight <= 0 {
		errs = append(errs, fmt.Errorf("server.hook.max_in_flight: must be positive, got %d", c.MaxInFlight))
	}
	return errs
}

func loopbackHost(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// maxHookBody is the adapters' bound on hook input, plus one byte so that
// they see, and name, an input over it.
const maxHookBody = hook.MaxInputBytes + 1

// HookHandler answers hooks posted to /hook/AGENT with the agent's JSON
// output, as its command hook prints it; the query's on_error (deny or
// ask), mode and unattended (1 or 0) are toolgate hook's --on-error,
// --mode and --unattended. Every failure
// (a refused token, bad input, no decision) is answered 200 with the
// on-error decision in the agent's format: an agent reads a non-2xx answer
// as a hook error, and Claude Code then runs the call unless the hook says
// onFailure block.
func (s *Server) HookHandler() http.Handler {
	return http.HandlerFunc(s.serveHook)
}

func (s *Server) serveHook(w http.ResponseWriter, r *http.Request) {
	name, _ := strings.CutPrefix(r.URL.Path, hookhttp.PathPrefix)
	ag, ok := hook.AgentByName(name)
	if !ok || !strings.HasPrefix(r.URL.Path, hookhttp.PathPrefix) {
		http.Error(w, "toolgate: no such hook; POST to "+hookhttp.PathPrefix+"{"+strings.Join(hook.AgentNames(), ",")+"}", http.StatusNotFound)
		return
	}
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		http.Error(w, "toolgate: POST the hook input", http.StatusMethodNotAllowed)
		return
	}
	answerOnly := r.Header.Get(hookhttp.AnswerHeader) == "1"
	q := r.URL.Query()
	onError := q.Get("on_error")
	if onError == "" || answerOnly {
		onError = hookout.Deny
	}
	var ans hookhttp.Answer
	event := "" // the input's hook_event_name, once read
	defer func() {
		if p := recover(); p != nil {
			s.log.Error("hook handler panicked", zap.Any("panic", p), zap.Stack("stack"))
			ans = hookhttp.Answer{Tool: ans.Tool, Failure: "the server failed (internal error)"}
		}
		s.writeHook(w, ag.Name(), event, onError, answerOnly, ans)
	}()
	if onError != hookout.Deny && onError != hookout.Ask {
		ans.Failure = fmt.Sprintf("on_error %q: want deny or ask", onError)
		onError = hookout.Deny
		return
	}
	mode := q.Get("mode")
	if mode != "" && !slices.Contains(hookcli.Modes, mode) {
		ans.Failure = fmt.Sprintf("mode %q: want auto, default, accept_edits, plan or bypass", mode)
		return
	}
	unattended := false
	if v := q.Get("unattended"); v != "" {
		var err error
		if unattended, err = strconv.ParseBool(v); err != nil {
			ans.Failure = fmt.Sprintf("unattended %q: want 1 or 0 (true or false)", quoteCut(v))
			return
		}
	}
	addr := cmpOr(unescape(r.Header.Get(hookhttp.AddrHeader)), r.Host)
	if why := s.fromBrowser(r); why != "" {
		ans.Failure = why
		return
	}
	select {
	case s.hookSlots <- struct{}{}:
		defer func() { <-s.hookSlots }()
	default:
		ans.Failure = hookcli.ServerFailure(addr, "ResourceExhausted", "")
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), s.cfg.Hook.Timeout)
	defer cancel()
	ctx, failure := s.hookAuth(ctx, r, addr)
	if failure != "" {
		ans.Failure = failure
		return
	}
	// The caller's transcript is read only when its paths are this
	// machine's: a peer here, counted as one by the configuration (behind
	// a proxy on loopback every peer looks local).
	local := s.cfg.UnattestedFiles == UnattestedLocalPeers && localPeer(ctx)
	project := unescape(r.Header.Get(hookhttp.ProjectDirHeader))
	body, err := io.ReadAll(io.LimitReader(r.Body, maxHookBody))
	if err != nil {
		ans.Failure = "hook input: " + err.Error()
		return
	}
	event = hookout.Peek(body).Event
	req, err := ag.Request(bytes.NewReader(body), hook.Options{
		Getenv: func(k string) string {
			if k == "CLAUDE_PROJECT_DIR" {
				return project
			}
			return ""
		},
		// A caller on another machine names its own files.
		NoFiles: !local,
		// A path on a file system that may not answer (network, FUSE) is
		// refused before it is entered: a handler waiting in the kernel
		// would hold its slot past any deadline.
		Open: openLocal,
	})
	if err != nil {
		ans.Failure = err.Error()
		return
	}
	ans.Tool = req.GetTool().GetName()
	if mode != "" && req.GetMode() != pb.PermissionMode_PERMISSION_MODE_PLAN {
		req.Mode = hookModes[mode]
	}
	req.Attestation = headerAttestation(r.Header.Values(hookhttp.AttestationHeader), req.GetWorkingDirectory())
	req.Unattended = unattended
	resp, err := s.svc.Check(ctx, req)
	if err != nil {
		st := status.Convert(err)
		ans.Failure = hookcli.ServerFailure(addr, st.Code().String(), st.Message())
		return
	}
	ans.Decision, ans.Reason = hook.DecisionOf(resp), resp.GetReason()
}

// fromBrowser says why a request looks like one a web page made, or "".
// No hook client is a browser, and a page the user visits may post to a
// loopback listener (a form, fetch with no-cors) or reach it under its own
// name through DNS rebinding, then read the answer: it could make the
// server read a transcript file of the user's and pass it to the
// classifier, or learn what toolgate allows. Browsers mark what they send
// (Origin on every cross-site or non-GET request, Sec-Fetch-Site on every
// request in current ones; Node's fetch, which an agent may post with,
// sends Sec-Fetch-Mode but neither of these); without tokens, whose header a page cannot send
// unasked, the Host must also name this machine as an address or
// localhost, not a name an attacker's DNS server points here.
func (s *Server) fromBrowser(r *http.Request) string {
	if r.Header.Get("Origin") != "" || r.Header.Get("Sec-Fetch-Site") != "" {
		return "refused: the request came from a web browser (Origin or Sec-Fetch-Site); hooks are posted by agents"
	}
	if s.tokens != nil {
		return ""
	}
	host := r.Host
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	if host != "localhost" && net.ParseIP(strings.Trim(host, "[]")) == nil {
		return fmt.Sprintf("refused: Host %q is a name, not this machine's address or localhost (without server.token_file, a name could be a web page's through DNS rebinding)", quoteCut(host))
	}
	return ""
}

// openLocal opens a file a hook input names, non-blocking, refusing one
// on a file system other than a local disk's (pathcheck's rule).
func openLocal(path string) (*os.File, error) {
	return pathcheck.OpenFile(path, syscall.O_NONBLOCK)
}

// writeHook writes ans: as JSON for toolgate-hook, else in the agent's
// format, a failure as the on-error decision.
func (s *Server) writeHook(w http.ResponseWriter, agent, event, onError string, answerOnly bool, ans hookhttp.Answer) {
	var out bytes.Buffer
	var err error
	call := hookout.Call{Tool: ans.Tool, Event: event}
	switch {
	case answerOnly:
		err = json.NewEncoder(&out).Encode(ans)
	case ans.Failure != "":
		err = hookout.Write(&out, agent, call, onError, "toolgate could not decide: "+ans.Failure)
	default:
		err = hookout.Write(&out, agent, call, ans.Decision, ans.Reason)
	}
	if err != nil {
		// Nothing the agent could take for a decision: an error status,
		// which Claude Code blocks on with onFailure block.
		http.Error(w, "toolgate: "+err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	// Always a length, never chunks: toolgate-hook reads no other answer.
	w.Header().Set("Content-Length", strconv.Itoa(out.Len()))
	_, _ = w.Write(out.Bytes())
}

var hookModes = map[string]pb.PermissionMode{
	"auto":         pb.PermissionMode_PERMISSION_MODE_AUTO,
	"default":      pb.PermissionMode_PERMISSION_MODE_DEFAULT,
	"accept_edits": pb.PermissionMode_PERMISSION_MODE_ACCEPT_EDITS,
	"plan":         pb.PermissionMode_PERMISSION_MODE_PLAN,
	"bypass":       pb.PermissionMode_PERMISSION_MODE_BYPASS,
}

// hookAuth puts the caller into ctx as the gRPC path sees one (its peer,
// its TLS state, the client its token names) and checks the bearer token
// when the server has tokens; a refusal is the failure reason.
func (s *Server) hookAuth(ctx context.Context, r *http.Request, addr string) (context.Context, string) {
	p := &peer.Peer{}
	if c, ok := ctx.Value(hookConnKey{}).(net.Conn); ok {
		p.Addr, p.LocalAddr = c.RemoteAddr(), c.LocalAddr()
	}
	if r.TLS != nil {
		p.AuthInfo = credentials.TLSInfo{State: *r.TLS}
	}
	ctx = peer.NewContext(ctx, p)
	if s.tokens == nil {
		return ctx, ""
	}
	token, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if !ok || token == "" {
		return ctx, hookcli.ServerFailure(addr, "Unauthenticated", "a bearer token is required (authorization: Bearer TOKEN)")
	}
	name, ok := s.tokens.Lookup(token)
	if !ok {
		return ctx, hookcli.ServerFailure(addr, "Unauthenticated", "unknown bearer token")
	}
	return context.WithValue(ctx, clientKey{}, name), ""
}

type hookConnKey struct{}

// headerAttestation is the client's attestation for dir, from its
// attestation headers; nil when none names dir.
func headerAttestation(values []string, dir string) *pb.Attestation {
	a, ok := hookhttp.ParseAttestation(values, dir)
	if !ok {
		return nil
	}
	return &pb.Attestation{BootId: a.BootID, WorkingDirectoryDevice: a.Device, WorkingDirectoryInode: a.Inode,
		MountNamespace: a.MountNS, RootDevice: a.RootDevice, RootInode: a.RootInode}
}

// unescape decodes a header toolgate-hook sent query-escaped; a value that
// does not decode is none.
func unescape(v string) string {
	s, err := url.QueryUnescape(v)
	if err != nil {
		return ""
	}
	return s
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// ServeHook serves the hook listener lis until Shutdown; with server.tls,
// over TLS.
func (s *Server) ServeHook(lis net.Listener) error {
	if s.hookTLS != nil {
		lis = tls.NewListener(lis, s.hookTLS)
	}
	err := s.hookHTTP.Serve(lis)
	if errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	return err
}

// newHookHTTP is the HTTP server of the hook listeners, its handler still
// to set, and their TLS configuration (nil without server.tls): every
// phase of a request is bounded, so a caller that sends slowly holds
// nothing long. The TLS configuration is apart because http.Server.Serve
// sets a TLSConfig of its own.
func newHookHTTP(cfg Config, log *zap.Logger) (*http.Server, *tls.Config, error) {
	t := cfg.Hook.Timeout
	srv := &http.Server{
		ReadHeaderTimeout: min(t, 10*time.Second),
		ReadTimeout:       t,
		WriteTimeout:      t + 5*time.Second,
		IdleTimeout:       time.Minute,
		MaxHeaderBytes:    64 << 10,
		ErrorLog:          zap.NewStdLog(log.Named("hook_http")),
		ConnContext: func(ctx context.Context, c net.Conn) context.Context {
			return context.WithValue(ctx, hookConnKey{}, c)
		},
	}
	if !cfg.TLS.Enabled() {
		return srv, nil, nil
	}
	conf, err := tlsConfig(cfg.TLS)
	if err != nil {
		return nil, nil, err
	}
	conf.NextProtos = []string{"http/1.1"}
	return srv, conf, nil
}

// shutdownHook stops the hook listeners within ctx: requests in flight
// finish, then what remains is closed.
func (s *Server) shutdownHook(ctx context.Context) {
	if err := s.hookHTTP.Shutdown(ctx); err != nil {
		_ = s.hookHTTP.Close()
	}
}
