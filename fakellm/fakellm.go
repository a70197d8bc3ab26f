// Package fakellm is an OpenAI-compatible (and Anthropic Messages API) fake
// LLM server for tests and demos. It answers the endpoints toolgate's
// classifier uses: through github.com/openai/openai-go/v3,
// POST {base}/chat/completions and POST {base}/responses, and through
// github.com/anthropics/anthropic-sdk-go, POST /v1/messages. Each answer is
// a tool call to the function the request forced through tool_choice
// (classify_result by default), whose arguments carry a verdict chosen by a
// [Handler]. It can also inject faults: rate limits, server errors, hangs,
// connection resets, malformed answers and hostile bodies (JSON null, an
// oversized answer, a gzip bomb, a slow drip), in each API's shapes.
//
// In a test:
//
//	srv := fakellm.Start(t, fakellm.Always(fakellm.Reply{Block: true, Reason: "rm -rf"}))
//	client := openai.NewClient(option.WithBaseURL(srv.URL()), option.WithAPIKey("k"))
//	...
//	reqs := srv.Requests() // what the client sent
//
// An Anthropic client takes [Server.AnthropicURL] (http://host:port, like
// ANTHROPIC_BASE_URL; the SDK adds /v1/messages).
//
// A [Server] is also an [http.Handler], so it can be wrapped by
// httptest.NewServer (its base URL is then ts.URL + "/v1"; call
// [Server.Close] before ts.Close so that hanging requests are released).
// cmd/fakellm runs it as a standalone server.
//
// Behaviour of openai-go (v3) against the fake, worth knowing in tests:
//   - it retries 408, 409, 429, 5xx answers and connection errors (FaultReset,
//     FaultHang ended by Close) twice by default, so one call may show up as
//     three requests; option.WithMaxRetries(0) turns that off;
//   - between retries it waits retry-after-ms if present, else Retry-After
//     (seconds or an HTTP date), else an exponential backoff from 0.5s; it
//     does not retry when the wait asked exceeds its maximum (2 minutes by
//     default). Reply.RetryAfter < 0 makes it retry at once;
//   - a non-2xx answer becomes an *openai.Error carrying the status and the
//     error body's code, type and message.
//
// anthropic-sdk-go behaves alike (two retries by default, retry-after-ms
// then Retry-After); its error answers are *anthropic.Error.
//
// The package uses the standard library only and does not import "testing":
// [Start] takes the small [TB] interface, which *testing.T, *testing.B and
// testing.TB satisfy.
package fakellm

import (
	"bytes"
	"compress/flate"
	"compress/gzip"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// API names the endpoint a request was sent to.
const (
	// APIChat is POST {base}/chat/completions.
	APIChat = "chat"
	// APIResponses is POST {base}/responses.
	APIResponses = "responses"
	// APIAnthropic is POST /v1/messages, Anthropic's Messages API.
	APIAnthropic = "anthropic"
)

// Endpoint paths the server answers; anything else is 404.
const (
	// ChatPath is the Chat Completions endpoint.
	ChatPath = "/v1/chat/completions"
	// ResponsesPath is the Responses endpoint.
	ResponsesPath = "/v1/responses"
	// MessagesPath is the Messages API endpoint.
	MessagesPath = "/v1/messages"
)

// AnthropicVersion is the anthropic-version header value the Messages API
// endpoint expects (as anthropic-sdk-go sends it); a request without it, or
// with another value, is answered 400.
const AnthropicVersion = "2023-06-01"

// DefaultTool is the function answered when the request does not force one
// through tool_choice and offers a function of this name (or no function).
const DefaultTool = "classify_result"

// maxBody bounds request bodies; larger ones are answered 400.
const maxBody = 16 << 20

// Fault is a failure the fake injects instead of (or into) a normal answer.
type Fault string

// The faults. Every one except FaultHang and FaultReset happens after
// Reply.Latency has passed. Error answers have the API's error shape:
// {"error":{"message","type","param","code"}} for OpenAI, and
// {"type":"error","error":{"type","message"}} for the Messages API, whose
// error type follows the status (rate_limit_error for 429, api_error for
// 500, invalid_request_error for 400...).
const (
	// FaultNone answers normally.
	FaultNone Fault = ""
	// FaultRateLimit answers 429 with an error body of type "requests" and
	// code "rate_limit_exceeded", and the headers Retry-After (whole
	// seconds, rounded up) and retry-after-ms (milliseconds), both from
	// Reply.RetryAfter. openai-go prefers retry-after-ms.
	FaultRateLimit Fault = "rate_limit"
	// FaultServerError answers 500 with an error body of type and code
	// "server_error".
	FaultServerError Fault = "server_error"
	// FaultBadRequest answers 400 with an error body of type
	// "invalid_request_error" and code "invalid_request".
	FaultBadRequest Fault = "bad_request"
	// FaultHang never answers: the request waits until the client gives up
	// (its context ends and it closes the connection) or the server is
	// closed or shut down, then the connection is dropped without a
	// response. Reply.Latency is ignored.
	FaultHang Fault = "hang"
	// FaultReset hijacks the connection and closes it (with SO_LINGER 0,
	// so the client sees a reset) without writing a response.
	FaultReset Fault = "reset"
	// FaultNoToolCall answers 200 with a plain assistant text (Reply.Reason,
	// or a refusal-like sentence) and no tool call; finish_reason "stop"
	// for chat, a "message" output item for responses, a text block and
	// stop_reason "end_turn" for messages.
	FaultNoToolCall Fault = "no_tool_call"
	// FaultMalformed answers 200 with a tool call whose arguments string is
	// not valid JSON (a truncated object). The Messages API has no
	// arguments string: its tool_use input is what was complete when the
	// answer was cut (the last field missing), with stop_reason
	// "max_tokens".
	FaultMalformed Fault = "malformed"
	// FaultWrongSchema answers 200 with a tool call whose arguments are
	// valid JSON of the wrong shape: should_block is the string "yes" or
	// "no" and reason is missing.
	FaultWrongSchema Fault = "wrong_schema"
	// FaultSeveralToolCalls answers 200 with two calls of the tool in one
	// answer: the first with the Reply's verdict, the second with the
	// opposite one.
	FaultSeveralToolCalls Fault = "several_tool_calls"
	// FaultNullBody answers 200 with the JSON body null, as a misbehaving
	// proxy or gateway may.
	FaultNullBody Fault = "null_body"
	// FaultOversized answers 200 with OversizedBytes of JSON whitespace
	// followed by a normal answer, streamed without a Content-Length: valid
	// JSON that only a cap on the size of an answer refuses.
	FaultOversized Fault = "oversized"
	// FaultGzipBomb answers 200 with Content-Encoding: gzip, whether or not
	// the client asked for it, and about 256 KiB of gzip (two members) that
	// expand to GzipBombBytes of whitespace followed by a normal answer.
	FaultGzipBomb Fault = "gzip_bomb"
	// FaultSlowDrip answers 200 at once and then sends a normal answer one
	// byte every DripInterval, until it is complete (which takes about a
	// minute), the client gives up, or the server is closed or shut down
	// (then the connection is dropped mid-body).
	FaultSlowDrip Fault = "slow_drip"
)

// Sizes and pace of the hostile-body faults.
const (
	// OversizedBytes is the whitespace before FaultOversized's answer.
	OversizedBytes = 128 << 20
	// GzipBombBytes is the whitespace FaultGzipBomb's body expands to
	// before its answer.
	GzipBombBytes = 256 << 20
	// DripInterval is FaultSlowDrip's pause before each byte.
	DripInterval = 100 * time.Millisecond
)

// Faults lists every fault except FaultNone, in a stable order.
var Faults = []Fault{
	FaultRateLimit, FaultServerError, FaultBadRequest, FaultHang, FaultReset,
	FaultNoToolCall, FaultMalformed, FaultWrongSchema, FaultSeveralToolCalls,
	FaultNullBody, FaultOversized, FaultGzipBomb, FaultSlowDrip,
}

// Tool is one function tool definition offered by a request.
type Tool struct {
	// Type is the tool type: "function" for OpenAI function tools; for the
	// Messages API, "custom" or "" (as sent) for client tools.
	Type string
	// Name is the function name.
	Name string
	// Description is the function description.
	Description string
	// Parameters is the JSON schema of the arguments, as sent (the
	// Messages API's input_schema).
	Parameters json.RawMessage
	// Strict reports "strict": true.
	Strict bool
	// Raw is the whole tool definition, as sent.
	Raw json.RawMessage
}

// Request is one API call the fake received (a POST to a known endpoint,
// whether or not it was authorized and valid).
type Request struct {
	// Index is the 0-based arrival order among recorded requests.
	Index int
	// API is APIChat, APIResponses or APIAnthropic.
	API string
	// Path is the URL path.
	Path string
	// Model is the requested model.
	Model string
	// Tool is the function name forced by tool_choice, "" if none was.
	Tool string
	// ToolChoice is the raw tool_choice value, nil if absent.
	ToolChoice json.RawMessage
	// Tools are the tool definitions offered.
	Tools []Tool
	// System is the system text: the responses "instructions", then the
	// text of every "system" and "developer" message, joined by "\n"; for
	// the Messages API, the "system" string or its text blocks' text.
	System string
	// User is the text of every "user" message, joined by "\n" (a plain
	// string responses input counts as a user message).
	User string
	// MaxTokens is max_completion_tokens (else max_tokens) for chat,
	// max_output_tokens for responses, max_tokens for messages; 0 if
	// absent.
	MaxTokens int64
	// Temperature is the requested temperature, nil if absent.
	Temperature *float64
	// Header holds the request headers (Authorization or X-Api-Key,
	// X-Stainless-*...).
	Header http.Header
	// Body is the raw request body.
	Body []byte
	// Received is when the request arrived.
	Received time.Time
}

// ToolDef returns the definition of the named tool, or nil.
func (r *Request) ToolDef(name string) *Tool {
	for i := range r.Tools {
		if r.Tools[i].Name == name {
			return &r.Tools[i]
		}
	}
	return nil
}

func (r *Request) clone() *Request {
	c := *r
	c.ToolChoice = cloneBytes(r.ToolChoice)
	c.Tools = make([]Tool, len(r.Tools))
	for i, t := range r.Tools {
		t.Parameters = cloneBytes(t.Parameters)
		t.Raw = cloneBytes(t.Raw)
		c.Tools[i] = t
	}
	if r.Temperature != nil {
		v := *r.Temperature
		c.Temperature = &v
	}
	c.Header = r.Header.Clone()
	c.Body = cloneBytes(r.Body)
	return &c
}

func cloneBytes[T ~[]byte](b T) T {
	if b == nil {
		return nil
	}
	return append(T{}, b...)
}

// Reply says how to answer one request. The zero Reply allows.
type Reply struct {
	// Block is the verdict: should_block in the arguments.
	Block bool
	// Thinking is the "thinking" argument; a canned sentence if empty.
	Thinking string
	// Reason is the "reason" argument ("fakellm: blocked" or "fakellm:
	// allowed" if empty); with FaultNoToolCall, the assistant text.
	Reason string
	// Category is the "category" argument, sent when the tool's schema
	// declares one; when empty, see DefaultAllowCategory.
	Category string
	// Fault is the failure to inject, FaultNone for a normal answer.
	Fault Fault
	// Latency is a delay before answering. It ends early, dropping the
	// connection, if the client gives up or the server is closed.
	Latency time.Duration
	// RetryAfter is sent as Retry-After (seconds, rounded up) and
	// retry-after-ms with FaultRateLimit, where 0 means 1s, and with
	// FaultServerError when not 0. A negative value sends "0" (retry at
	// once), which keeps tests that exercise client retries fast.
	RetryAfter time.Duration
	// InputTokens and OutputTokens override the usage reported; when 0
	// they are estimated as one token per 4 bytes of the system and user
	// text, and of the arguments (or text) answered.
	InputTokens, OutputTokens int
	// CacheCreationTokens and CacheReadTokens are the Messages API's
	// cache_creation_input_tokens and cache_read_input_tokens. When they
	// and InputTokens are 0, the fake simulates prompt caching: a request
	// whose system text ends in a block marked cache_control reports that
	// system text (estimated) as written to the cache the first time the
	// server sees it with the same model and tools, and as read from it
	// afterwards, and input_tokens counts only the rest. The real API's
	// minimum cacheable length and cache lifetime are not simulated.
	// For the OpenAI APIs CacheReadTokens is the usage's cached_tokens;
	// when it and InputTokens are 0, a system text of 1,024 tokens or more
	// (estimated) that the server saw before with the same model and
	// tools is reported as cached, as OpenAI caches prompts by itself.
	CacheCreationTokens, CacheReadTokens int
}

// Handler decides the reply for each request. It may be called
// concurrently and gets its own copy of the request.
type Handler func(*Request) Reply

// Option configures a Server.
type Option func(*Server)

// WithAPIKey makes the server require "Authorization: Bearer <key>" (for
// the Messages API, "x-api-key: <key>"); a request without it, or with
// another key, is answered 401 (code "invalid_api_key"; the Messages API's
// "authentication_error").
func WithAPIKey(key string) Option {
	return func(s *Server) { s.apiKey = key }
}

// WithLogf logs one line per request (and serving errors) through logf,
// e.g. log.Printf or t.Logf.
func WithLogf(logf func(format string, args ...any)) Option {
	return func(s *Server) { s.logf = logf }
}

// Server is the fake. Create it with New (then serve it with Listen or
// wrap it, it is an http.Handler) or with Start in tests.
type Server struct {
	apiKey string
	logf   func(format string, args ...any)

	seq atomic.Int64 // id generator

	mu       sync.Mutex
	handler  Handler
	requests []*Request
	closed   bool
	hs       *http.Server
	url      string
	cached   map[[32]byte]bool // prompt-cache prefixes seen (Messages API)

	inflight    sync.WaitGroup
	release     chan struct{} // closed by Close and Shutdown: ends hangs
	abort       chan struct{} // closed by Close: ends latencies
	releaseOnce sync.Once
	abortOnce   sync.Once
}

// New returns a server answering with h (DefaultHandler if nil). It is not
// listening: call Listen, or use it as an http.Handler.
func New(h Handler, opts ...Option) *Server {
	if h == nil {
		h = DefaultHandler
	}
	s := &Server{
		handler: h,
		release: make(chan struct{}),
		abort:   make(chan struct{}),
	}
	for _, o := range opts {
		o(s)
	}
	return s
}

// TB is the part of testing.TB that Start uses; *testing.T, *testing.B,
// *testing.F and testing.TB satisfy it.
type TB interface {
	Helper()
	Cleanup(func())
	Fatalf(format string, args ...any)
}

// Start returns a server listening on a free port of 127.0.0.1, answering
// with h (DefaultHandler if nil). It is closed when the test ends, which
// also releases requests hanging on FaultHang.
func Start(t TB, h Handler, opts ...Option) *Server {
	t.Helper()
	s := New(h, opts...)
	if err := s.Listen("127.0.0.1:0"); err != nil {
		t.Fatalf("fakellm: %v", err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// Listen binds addr (host:port, port 0 for a free one) and serves in the
// background until Close or Shutdown.
func (s *Server) Listen(addr string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return errors.New("listen: server closed")
	}
	if s.hs != nil {
		return errors.New("listen: already listening on " + s.url)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("listen: %w", err)
	}
	hs := &http.Server{Handler: s, ReadHeaderTimeout: 10 * time.Second}
	s.hs = hs
	s.url = "http://" + ln.Addr().String() + "/v1"
	go func() {
		if err := hs.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			s.log("serve: %v", err)
		}
	}()
	return nil
}

// URL returns the base URL to give an OpenAI client,
// "http://host:port/v1", once Listen has succeeded ("" before).
func (s *Server) URL() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.url
}

// AnthropicURL returns the base URL to give an Anthropic client,
// "http://host:port" (the SDK adds /v1/messages), once Listen has
// succeeded ("" before).
func (s *Server) AnthropicURL() string {
	return strings.TrimSuffix(s.URL(), "/v1")
}

// SetHandler replaces the handler (nil means DefaultHandler); requests
// arriving afterwards use it.
func (s *Server) SetHandler(h Handler) {
	if h == nil {
		h = DefaultHandler
	}
	s.mu.Lock()
	s.handler = h
	s.mu.Unlock()
}

// Requests returns copies of the requests received so far, in arrival
// order.
func (s *Server) Requests() []*Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]*Request, len(s.requests))
	for i, r := range s.requests {
		out[i] = r.clone()
	}
	return out
}

// Count returns the number of requests received so far.
func (s *Server) Count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.requests)
}

// Close stops the server at once: hanging and dripping requests and
// latencies end by dropping their connections, the listener and
// connections are closed, and Close returns once every request being
// handled has returned (so a Handler that blocks delays it). Requests
// reaching a closed server (when it is wrapped) are answered 503.
func (s *Server) Close() error {
	s.mu.Lock()
	s.closed = true
	hs := s.hs
	s.mu.Unlock()
	s.releaseOnce.Do(func() { close(s.release) })
	s.abortOnce.Do(func() { close(s.abort) })
	var err error
	if hs != nil {
		err = hs.Close()
	}
	s.inflight.Wait()
	return err
}

// Shutdown stops the server gracefully: hanging and dripping requests are
// dropped at once, other requests in progress (latencies included) are
// answered, then it returns. If ctx ends first it falls back to Close and
// returns the context's error.
func (s *Server) Shutdown(ctx context.Context) error {
	s.releaseOnce.Do(func() { close(s.release) })
	s.mu.Lock()
	hs := s.hs
	s.mu.Unlock()
	if hs != nil {
		if err := hs.Shutdown(ctx); err != nil {
			_ = s.Close()
			return err
		}
	}
	s.mu.Lock()
	s.closed = true
	s.mu.Unlock()
	done := make(chan struct{})
	go func() {
		s.inflight.Wait()
		close(done)
	}()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		_ = s.Close()
		return ctx.Err()
	}
}

// enter registers a request in progress; false if the server is closed.
func (s *Server) enter() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return false
	}
	s.inflight.Add(1)
	return true
}

func (s *Server) record(r *Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r.Index = len(s.requests)
	s.requests = append(s.requests, r)
}

func (s *Server) currentHandler() Handler {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.handler
}

func (s *Server) log(format string, args ...any) {
	if s.logf != nil {
		s.logf("fakellm: "+format, args...)
	}
}

// ServeHTTP answers one request; see the package documentation.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	var api string
	switch r.URL.Path {
	case ChatPath:
		api = APIChat
	case ResponsesPath:
		api = APIResponses
	case MessagesPath:
		api = APIAnthropic
	default:
		writeError(w, "", http.StatusNotFound, "invalid_request_error", "unknown_url",
			fmt.Sprintf("Invalid URL (%s %s)", r.Method, r.URL.Path))
		s.log("%s %s -> 404", r.Method, r.URL.Path)
		return
	}
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		writeError(w, api, http.StatusMethodNotAllowed, "invalid_request_error", "method_not_allowed",
			fmt.Sprintf("Method %s not allowed for %s, use POST", r.Method, r.URL.Path))
		s.log("%s %s -> 405", r.Method, r.URL.Path)
		return
	}
	if !s.enter() {
		writeError(w, api, http.StatusServiceUnavailable, "server_error", "server_closed", "fakellm: server closed")
		return
	}
	defer s.inflight.Done()

	req := &Request{API: api, Path: r.URL.Path, Header: r.Header.Clone(), Received: start}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBody))
	req.Body = body
	var perr *apiError
	if err != nil {
		perr = invalid("could not read the request body: " + err.Error())
	} else {
		perr = parseRequest(req)
	}
	s.record(req)
	prefix := fmt.Sprintf("#%d %s %s model=%q tool=%q", req.Index, r.Method, r.URL.Path, req.Model, req.Tool)

	if e := s.checkAuth(r, api); e != nil {
		e.write(w, api)
		s.log("%s -> %d (%s)", prefix, e.status, e.message)
		return
	}
	if api == APIAnthropic {
		switch v := r.Header.Get("Anthropic-Version"); {
		case v == "":
			perr = invalid("anthropic-version: header is required")
		case v != AnthropicVersion:
			perr = invalid(fmt.Sprintf("anthropic-version: %q is not a valid version", v))
		}
	}
	if perr != nil {
		perr.write(w, api)
		s.log("%s -> %d %s", prefix, perr.status, perr.message)
		return
	}

	reply := s.currentHandler()(req.clone())
	outcome := s.respond(w, r, req, reply)
	s.log("%s -> %s block=%t fault=%q in %s", prefix, outcome, reply.Block, reply.Fault,
		time.Since(start).Round(time.Millisecond))
}

// checkAuth checks the API key, when one is required: Authorization for
// OpenAI, x-api-key for the Messages API.
func (s *Server) checkAuth(r *http.Request, api string) *apiError {
	if s.apiKey == "" {
		return nil
	}
	unauthorized := func(msg string) *apiError {
		return &apiError{status: http.StatusUnauthorized, typ: "invalid_request_error", code: "invalid_api_key", message: msg}
	}
	if api == APIAnthropic {
		switch key := r.Header.Get("X-Api-Key"); {
		case key == "":
			return unauthorized("x-api-key header is required")
		case key != s.apiKey:
			return unauthorized("invalid x-api-key")
		}
		return nil
	}
	switch auth := r.Header.Get("Authorization"); {
	case auth == "":
		return unauthorized("You didn't provide an API key. You need to provide your API key in an Authorization header using Bearer auth.")
	case auth != "Bearer "+s.apiKey:
		return unauthorized("Incorrect API key provided.")
	}
	return nil
}

// respond carries out reply and describes what it did.
func (s *Server) respond(w http.ResponseWriter, r *http.Request, req *Request, reply Reply) string {
	ctx := r.Context()
	if reply.Fault == FaultHang {
		select {
		case <-ctx.Done():
			dropConn(w)
			return "hang ended by the client"
		case <-s.release:
			dropConn(w)
			return "hang ended by the server closing"
		}
	}
	if reply.Latency > 0 {
		timer := time.NewTimer(reply.Latency)
		defer timer.Stop()
		select {
		case <-timer.C:
		case <-ctx.Done():
			dropConn(w)
			return "client gone during latency"
		case <-s.abort:
			dropConn(w)
			return "server closed during latency"
		}
	}

	retryAfter := reply.RetryAfter
	if reply.Fault == FaultRateLimit && retryAfter == 0 {
		retryAfter = time.Second
	}
	if retryAfter != 0 && (reply.Fault == FaultRateLimit || reply.Fault == FaultServerError) {
		setRetryAfter(w.Header(), retryAfter)
	}

	switch reply.Fault {
	case FaultRateLimit:
		writeError(w, req.API, http.StatusTooManyRequests, "requests", "rate_limit_exceeded",
			"Rate limit reached for requests (fakellm). Please try again later.")
		return "429"
	case FaultServerError:
		writeError(w, req.API, http.StatusInternalServerError, "server_error", "server_error",
			"The server had an error while processing your request (fakellm).")
		return "500"
	case FaultBadRequest:
		writeError(w, req.API, http.StatusBadRequest, "invalid_request_error", "invalid_request",
			"Invalid request (fakellm injected fault).")
		return "400"
	case FaultReset:
		dropConn(w)
		return "reset"
	case FaultNone, FaultNoToolCall, FaultMalformed, FaultWrongSchema, FaultSeveralToolCalls:
		writeJSON(w, http.StatusOK, s.answer(req, reply))
		return "200"
	case FaultNullBody:
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusOK)
		_, _ = w.Write([]byte("null\n"))
		return "200 (null)"
	case FaultOversized:
		return writeOversized(w, s.answerBytes(req, reply))
	case FaultGzipBomb:
		return writeGzipBomb(w, s.answerBytes(req, reply))
	case FaultSlowDrip:
		return s.drip(ctx, w, s.answerBytes(req, reply))
	default:
		writeError(w, req.API, http.StatusInternalServerError, "fakellm_error", "unknown_fault",
			fmt.Sprintf("fakellm: unknown fault %q", reply.Fault))
		return "500 (unknown fault)"
	}
}

// answerBytes is the normal 200 body for req.
func (s *Server) answerBytes(req *Request, reply Reply) []byte {
	b, _ := json.Marshal(s.answer(req, reply)) // cannot fail with the types used
	return append(b, '\n')
}

// writeOversized streams OversizedBytes of whitespace, then answer; it
// stops when the client goes away.
func writeOversized(w http.ResponseWriter, answer []byte) string {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	pad := bytes.Repeat([]byte{' '}, 64<<10)
	for sent := 0; sent < OversizedBytes; sent += len(pad) {
		if _, err := w.Write(pad); err != nil {
			return "200 (oversized, client gone)"
		}
	}
	if _, err := w.Write(answer); err != nil {
		return "200 (oversized, client gone)"
	}
	return "200 (oversized)"
}

// gzipBombHead is a gzip member expanding to GzipBombBytes of spaces,
// made once and shared. Compressing that much would take seconds (far
// more under the race detector), so it is assembled: the first MiB
// compressed from an empty window, then, over and over, one MiB
// compressed with a window of spaces as its dictionary, which is what the
// window holds from then on. Flush ends each on a byte boundary, without
// ending the stream.
var gzipBombHead = sync.OnceValue(func() []byte {
	const chunk = 1 << 20
	spaces := bytes.Repeat([]byte{' '}, chunk)
	compress := func(dict []byte) []byte {
		var b bytes.Buffer
		zw, _ := flate.NewWriterDict(&b, flate.BestCompression, dict)
		_, _ = zw.Write(spaces)
		_ = zw.Flush()
		return b.Bytes()
	}
	first, next := compress(nil), compress(spaces[:32<<10])
	crc := crc32.Update(0, crc32.IEEETable, spaces)
	out := []byte{0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 255} // gzip: deflate, no name, no time
	out = append(out, first...)
	for range GzipBombBytes/chunk - 1 {
		out = append(out, next...)
		crc = crc32.Update(crc, crc32.IEEETable, spaces)
	}
	out = append(out, 0x03, 0x00) // a final, empty block
	out = binary.LittleEndian.AppendUint32(out, crc)
	return binary.LittleEndian.AppendUint32(out, uint32(GzipBombBytes))
})

// writeGzipBomb sends gzipBombHead and a second gzip member holding
// answer; a gzip reader reads the two as one stream.
func writeGzipBomb(w http.ResponseWriter, answer []byte) string {
	var tail bytes.Buffer
	zw := gzip.NewWriter(&tail)
	_, _ = zw.Write(answer)
	_ = zw.Close()
	head := gzipBombHead()
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Encoding", "gzip")
	w.Header().Set("Content-Length", fmt.Sprint(len(head)+tail.Len()))
	w.WriteHeader(http.StatusOK)
	if _, err := w.Write(head); err != nil {
		return "200 (gzip bomb, client gone)"
	}
	_, _ = w.Write(tail.Bytes())
	return "200 (gzip bomb)"
}

// drip sends the headers, then answer a byte at a time, DripInterval
// apart. If the client goes away or the server closes or shuts down
// first, it aborts the response, so the client never sees a complete body.
func (s *Server) drip(ctx context.Context, w http.ResponseWriter, answer []byte) string {
	rc := http.NewResponseController(w)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	_ = rc.Flush()
	timer := time.NewTimer(DripInterval)
	defer timer.Stop()
	for i := range answer {
		select {
		case <-timer.C:
		case <-ctx.Done():
			s.log("slow drip: client gone after %d of %d bytes", i, len(answer))
			panic(http.ErrAbortHandler)
		case <-s.release:
			s.log("slow drip: server closing after %d of %d bytes", i, len(answer))
			panic(http.ErrAbortHandler)
		}
		timer.Reset(DripInterval)
		if _, err := w.Write(answer[i : i+1]); err != nil {
			return "200 (slow drip, client gone)"
		}
		_ = rc.Flush()
	}
	return "200 (slow drip)"
}

// setRetryAfter sets Retry-After in whole seconds (rounded up) and
// retry-after-ms in milliseconds (rounded up); a negative d sends 0.
func setRetryAfter(h http.Header, d time.Duration) {
	if d < 0 {
		d = 0
	}
	secs := (d + time.Second - 1) / time.Second
	ms := (d + time.Millisecond - 1) / time.Millisecond
	h.Set("Retry-After", fmt.Sprint(int64(secs)))
	h.Set("Retry-After-Ms", fmt.Sprint(int64(ms)))
}

// dropConn closes the connection without a response: hijacked and closed
// with SO_LINGER 0 (a TCP reset) when possible, else by aborting the
// handler, which makes net/http close the connection (or reset the HTTP/2
// stream).
func dropConn(w http.ResponseWriter) {
	conn, _, err := http.NewResponseController(w).Hijack()
	if err != nil {
		panic(http.ErrAbortHandler)
	}
	if l, ok := conn.(interface{ SetLinger(int) error }); ok {
		_ = l.SetLinger(0)
	}
	_ = conn.Close()
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil { // cannot happen with the types used
		status = http.StatusInternalServerError
		b = []byte(`{"error":{"message":"fakellm: encoding failed","type":"fakellm_error","param":null,"code":"encoding"}}`)
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(append(b, '\n'))
}

// apiError is an error answer, written in the shape of the API asked.
type apiError struct {
	status             int
	typ, code, message string
}

func invalid(msg string) *apiError {
	return &apiError{status: http.StatusBadRequest, typ: "invalid_request_error", code: "invalid_request", message: msg}
}

func (e *apiError) write(w http.ResponseWriter, api string) {
	writeError(w, api, e.status, e.typ, e.code, e.message)
}

type errorBody struct {
	Error errorDetail `json:"error"`
}

type errorDetail struct {
	Message string  `json:"message"`
	Type    string  `json:"type"`
	Param   *string `json:"param"`
	Code    string  `json:"code"`
}

// anthropicErrorBody is {"type":"error","error":{"type","message"}}.
type anthropicErrorBody struct {
	Type  string               `json:"type"`
	Error anthropicErrorDetail `json:"error"`
}

type anthropicErrorDetail struct {
	Type    string `json:"type"`
	Message string `json:"message"`
}

// writeError writes {"error":{"message","type","param":null,"code"}}, or
// for the Messages API {"type":"error","error":{"type","message"}} with
// the error type of status (typ and code are OpenAI's).
func writeError(w http.ResponseWriter, api string, status int, typ, code, message string) {
	if api == APIAnthropic {
		writeJSON(w, status, anthropicErrorBody{Type: "error", Error: anthropicErrorDetail{Type: anthropicErrorType(status), Message: message}})
		return
	}
	writeJSON(w, status, errorBody{Error: errorDetail{Message: message, Type: typ, Code: code}})
}

// anthropicErrorType is the Messages API's error type for status.
func anthropicErrorType(status int) string {
	switch status {
	case http.StatusUnauthorized:
		return "authentication_error"
	case http.StatusForbidden:
		return "permission_error"
	case http.StatusNotFound:
		return "not_found_error"
	case http.StatusRequestEntityTooLarge:
		return "request_too_large"
	case http.StatusTooManyRequests:
		return "rate_limit_error"
	case 529:
		return "overloaded_error"
	}
	if status >= 500 {
		return "api_error"
	}
	return "invalid_request_error"
}
