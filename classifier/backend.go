package classifier

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/responses"
	"github.com/openai/openai-go/v3/shared"
)

// The forced functions. Property order in the schema puts thinking first so
// that the model reasons before it decides.
const (
	fullTool = "classify_result"
	fastTool = "classify_fast"
	// fastMaxTokens is stage 1's budget: enough for {"should_block":false}.
	fastMaxTokens = 32
)

var fullSchema = map[string]any{
	"type": "object",
	"properties": map[string]any{
		"thinking":     map[string]any{"type": "string", "description": "Brief reasoning about the action against the rules, before deciding."},
		"should_block": map[string]any{"type": "boolean", "description": "true to block the action."},
		"reason":       map[string]any{"type": "string", "description": "One sentence for the agent: why it is blocked or allowed."},
	},
	"required":             []string{"thinking", "should_block", "reason"},
	"additionalProperties": false,
}

var fastSchema = map[string]any{
	"type": "object",
	"properties": map[string]any{
		"should_block": map[string]any{"type": "boolean", "description": "true to block the action."},
	},
	"required":             []string{"should_block"},
	"additionalProperties": false,
}

// verdict is a parsed classify_result.
type verdict struct {
	Thinking string `json:"thinking"`
	Block    bool   `json:"should_block"`
	Reason   string `json:"reason"`
}

// outcome is one backend's answer with what it cost.
type outcome struct {
	verdict
	stage           string
	inTok, outTok   int64
	backend, model  string
	requestAttempts int
}

// backend calls one OpenAI-compatible endpoint.
type backend struct {
	cfg       BackendConfig
	chat      openai.ChatCompletionService
	responses responses.ResponseService
	twoStage  bool
	maxTokens int
}

func newBackend(cfg BackendConfig, twoStage bool, maxTokens int, hc option.HTTPClient) *backend {
	if hc == nil {
		hc = &http.Client{}
	}
	opts := []option.RequestOption{
		option.WithHTTPClient(hc),
		option.WithBaseURL(cfg.BaseURL),
		option.WithAPIKey(os.Getenv(cfg.APIKeyEnv)),
		// openai-go has no timeout and retries twice by default; we retry
		// ourselves (once, within the deadline) and bound each attempt.
		option.WithMaxRetries(0),
		option.WithRequestTimeout(cfg.Timeout),
	}
	// The services are built without openai.NewClient, which would add
	// what the environment holds (OPENAI_ORG_ID, OPENAI_CUSTOM_HEADERS and
	// others) to every request, whichever backend it goes to.
	return &backend{
		cfg: cfg, twoStage: twoStage, maxTokens: maxTokens,
		chat:      openai.NewChatCompletionService(opts...),
		responses: responses.NewResponseService(opts...),
	}
}

// classify runs the side-query: one stage, or stage 1 then, only on a
// block, stage 2.
func (b *backend) classify(ctx context.Context, p Prompt) (outcome, error) {
	out := outcome{backend: b.cfg.Name, model: b.cfg.Model, stage: "single"}
	if b.twoStage {
		raw, in, o, err := b.callWithRetry(ctx, p, fastTool, fastSchema, fastMaxTokens)
		out.inTok, out.outTok = out.inTok+in, out.outTok+o
		if err != nil {
			return out, err
		}
		v, err := parseFast(raw)
		if err != nil {
			return out, err
		}
		if !v.Block {
			out.stage = "fast"
			out.Reason = "the classifier found nothing to block"
			return out, nil
		}
		out.stage = "full"
	}
	raw, in, o, err := b.callWithRetry(ctx, p, fullTool, fullSchema, int64(b.maxTokens))
	out.inTok, out.outTok = out.inTok+in, out.outTok+o
	if err != nil {
		return out, err
	}
	v, err := parseFull(raw)
	if err != nil {
		return out, err
	}
	out.verdict = v
	return out, nil
}

// callWithRetry makes one call and, when it failed in a way worth
// retrying (429, 5xx, attempt timeout, transport), one more, honouring
// Retry-After, but only while ctx's deadline leaves room for it.
func (b *backend) callWithRetry(ctx context.Context, p Prompt, tool string, schema map[string]any, maxTokens int64) (string, int64, int64, error) {
	raw, in, out, err := b.attempt(ctx, p, tool, schema, maxTokens)
	if err == nil || ctx.Err() != nil {
		return raw, in, out, err
	}
	wait, ok := retryable(err)
	if !ok {
		return raw, in, out, err
	}
	// Retry only when a whole attempt still fits: a retry cut short by the
	// deadline would look like the caller's timeout, hiding a hanging
	// backend from its breaker and leaving no time to fail over.
	if dl, has := ctx.Deadline(); has && time.Until(dl) < wait+b.cfg.Timeout {
		return raw, in, out, fmt.Errorf("%w (no time left to retry)", err)
	}
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return raw, in, out, err
	case <-t.C:
	}
	raw, in2, out2, err := b.attempt(ctx, p, tool, schema, maxTokens)
	if err != nil {
		err = fmt.Errorf("after a retry: %w", err)
	}
	return raw, in + in2, out + out2, err
}

// attemptError marks a failed attempt; retryAfter comes from the server.
type attemptError struct {
	msg        string
	retry      bool
	retryAfter time.Duration
	err        error
}

func (e *attemptError) Error() string { return e.msg }
func (e *attemptError) Unwrap() error { return e.err }

func retryable(err error) (time.Duration, bool) {
	var ae *attemptError
	if !errors.As(err, &ae) || !ae.retry {
		return 0, false
	}
	wait := ae.retryAfter
	if wait <= 0 {
		wait = 200 * time.Millisecond
	}
	return wait, true
}

// attempt makes one HTTP call and returns the forced function's raw
// arguments.
func (b *backend) attempt(ctx context.Context, p Prompt, tool string, schema map[string]any, maxTokens int64) (string, int64, int64, error) {
	actx, cancel := context.WithTimeout(ctx, b.cfg.Timeout)
	defer cancel()
	var (
		raw     string
		in, out int64
		err     error
	)
	if b.cfg.API == APIResponses {
		raw, in, out, err = b.callResponses(actx, p, tool, schema, maxTokens)
	} else {
		raw, in, out, err = b.callChat(actx, p, tool, schema, maxTokens)
	}
	if err == nil {
		return raw, in, out, nil
	}
	if ctx.Err() != nil {
		return "", in, out, ctx.Err()
	}
	return "", in, out, describe(err, actx, b.cfg.Timeout)
}

func describe(err error, actx context.Context, timeout time.Duration) error {
	var apiErr *openai.Error
	switch {
	case errors.As(err, &apiErr):
		code := apiErr.StatusCode
		msg := fmt.Sprintf("HTTP %d", code)
		if apiErr.Message != "" {
			msg += ": " + promptCutRunes(apiErr.Message, 200)
		}
		ae := &attemptError{msg: msg, err: err, retry: code == http.StatusTooManyRequests || code >= 500}
		if apiErr.Response != nil {
			ae.retryAfter = retryAfter(apiErr.Response.Header)
		}
		if code >= 400 && code < 500 && code != http.StatusRequestTimeout && code != http.StatusConflict && code != http.StatusTooManyRequests {
			// The request was refused (too long, filtered, bad model): the
			// backend is healthy, so its breaker must not open because of
			// one client, and another backend would refuse it too.
			return fmt.Errorf("%w: %w", ErrRequestRefused, ae)
		}
		return ae
	case errors.Is(actx.Err(), context.DeadlineExceeded):
		return &attemptError{msg: fmt.Sprintf("no answer within %s", timeout), err: err, retry: true}
	case errors.Is(err, errNoToolCall), errors.Is(err, errBadArguments):
		return err
	}
	return &attemptError{msg: "transport: " + promptCutRunes(err.Error(), 200), err: err, retry: true}
}

// retryAfter reads retry-after-ms or Retry-After (seconds or a date).
// Long waits are clamped, never dropped: the deadline check then declines
// the retry rather than retrying early against the server's wish.
func retryAfter(h http.Header) time.Duration {
	const ceiling = time.Hour
	clamp := func(d float64) time.Duration {
		if d >= float64(ceiling) || math.IsInf(d, 0) {
			return ceiling
		}
		return time.Duration(d)
	}
	if ms, err := strconv.ParseFloat(h.Get("Retry-After-Ms"), 64); err == nil && ms > 0 {
		return clamp(ms * float64(time.Millisecond))
	}
	v := h.Get("Retry-After")
	if s, err := strconv.ParseFloat(v, 64); err == nil && s > 0 {
		return clamp(s * float64(time.Second))
	}
	if t, err := http.ParseTime(v); err == nil {
		return clamp(float64(time.Until(t)))
	}
	return 0
}

var (
	errNoToolCall   = errors.New("the answer has no " + fullTool + " call")
	errBadArguments = errors.New("the function arguments do not match the schema")
	errBadAnswer    = errors.New("the answer is not one complete tool call")
)

func (b *backend) callChat(ctx context.Context, p Prompt, tool string, schema map[string]any, maxTokens int64) (string, int64, int64, error) {
	resp, err := b.chat.New(ctx, openai.ChatCompletionNewParams{
		Model: b.cfg.Model,
		Messages: []openai.ChatCompletionMessageParamUnion{
			openai.SystemMessage(p.System),
			openai.UserMessage(p.User),
		},
		Tools: []openai.ChatCompletionToolUnionParam{openai.ChatCompletionFunctionTool(shared.FunctionDefinitionParam{
			Name:        tool,
			Description: openai.String("Report whether the pending action should be blocked."),
			Parameters:  schema,
			Strict:      openai.Bool(true),
		})},
		ToolChoice:          openai.ToolChoiceOptionFunctionToolChoice(openai.ChatCompletionNamedToolChoiceFunctionParam{Name: tool}),
		MaxCompletionTokens: openai.Int(maxTokens),
	})
	if err != nil {
		return "", 0, 0, err
	}
	in, out := resp.Usage.PromptTokens, resp.Usage.CompletionTokens
	// One answer holding one call: with several, which one counts would be
	// a guess, and a guess must not allow.
	if len(resp.Choices) != 1 {
		return "", in, out, fmt.Errorf("%w: %d choices, want 1", errBadAnswer, len(resp.Choices))
	}
	ch := resp.Choices[0]
	switch ch.FinishReason {
	case "tool_calls", "stop", "":
	default:
		// "length", "content_filter": the arguments may be cut short.
		return "", in, out, fmt.Errorf("%w: finish reason %q", errBadAnswer, ch.FinishReason)
	}
	calls := ch.Message.ToolCalls
	switch {
	case len(calls) == 0:
		return "", in, out, fmt.Errorf("%w (tool %s)", errNoToolCall, tool)
	case len(calls) > 1:
		return "", in, out, fmt.Errorf("%w: %d tool calls, want 1", errBadAnswer, len(calls))
	case calls[0].Function.Name != tool:
		return "", in, out, fmt.Errorf("%w (tool %s, got a call of another tool)", errNoToolCall, tool)
	}
	return calls[0].Function.Arguments, in, out, nil
}

func (b *backend) callResponses(ctx context.Context, p Prompt, tool string, schema map[string]any, maxTokens int64) (string, int64, int64, error) {
	resp, err := b.responses.New(ctx, responses.ResponseNewParams{
		Model:           b.cfg.Model,
		Instructions:    openai.String(p.System),
		Input:           responses.ResponseNewParamsInputUnion{OfString: openai.String(p.User)},
		Tools:           []responses.ToolUnionParam{responses.ToolParamOfFunction(tool, schema, true)},
		ToolChoice:      responses.ResponseNewParamsToolChoiceUnion{OfFunctionTool: &responses.ToolChoiceFunctionParam{Name: tool}},
		MaxOutputTokens: openai.Int(maxTokens),
		// Tool calls and transcripts are not kept by the provider.
		Store: openai.Bool(false),
	})
	if err != nil {
		return "", 0, 0, err
	}
	in, out := resp.Usage.InputTokens, resp.Usage.OutputTokens
	if resp.Status != responses.ResponseStatusCompleted && resp.Status != "" {
		// An empty status is a compatible server that does not set it (as
		// with an empty finish reason in chat); "incomplete" (max tokens,
		// content filter) and the rest may have cut the arguments short.
		return "", in, out, fmt.Errorf("%w: status %q", errBadAnswer, resp.Status)
	}
	var args []string
	for _, item := range resp.Output {
		if item.Type != "function_call" {
			continue // reasoning, messages
		}
		if item.Name != tool {
			return "", in, out, fmt.Errorf("%w (tool %s, got a call of another tool)", errNoToolCall, tool)
		}
		args = append(args, item.Arguments.OfString)
	}
	switch len(args) {
	case 0:
		return "", in, out, fmt.Errorf("%w (tool %s)", errNoToolCall, tool)
	case 1:
		return args[0], in, out, nil
	}
	return "", in, out, fmt.Errorf("%w: %d tool calls, want 1", errBadAnswer, len(args))
}

// parseFull validates classify_result arguments strictly: compatible
// servers do not all honour strict schemas, and a verdict we cannot read
// must fail closed, never default to allow.
func parseFull(raw string) (verdict, error) {
	var m map[string]json.RawMessage
	if err := decodeStrict(raw, &m); err != nil {
		return verdict{}, err
	}
	if len(m) != 3 {
		return verdict{}, fmt.Errorf("%w: want exactly thinking, should_block and reason, got %d fields", errBadArguments, len(m))
	}
	var v verdict
	if err := field(m, "thinking", &v.Thinking); err != nil {
		return verdict{}, err
	}
	if err := field(m, "should_block", &v.Block); err != nil {
		return verdict{}, err
	}
	if err := field(m, "reason", &v.Reason); err != nil {
		return verdict{}, err
	}
	return v, nil
}

func parseFast(raw string) (verdict, error) {
	var m map[string]json.RawMessage
	if err := decodeStrict(raw, &m); err != nil {
		return verdict{}, err
	}
	if len(m) != 1 {
		return verdict{}, fmt.Errorf("%w: want only should_block, got %d fields", errBadArguments, len(m))
	}
	var v verdict
	if err := field(m, "should_block", &v.Block); err != nil {
		return verdict{}, err
	}
	return v, nil
}

// decodeStrict reads one JSON object and nothing after it. A key given
// twice is an error: which of the two counts differs between parsers, and
// {"should_block":true,"should_block":false} must not allow.
func decodeStrict(raw string, m *map[string]json.RawMessage) error {
	dec := json.NewDecoder(strings.NewReader(raw))
	notObject := fmt.Errorf("%w: not a JSON object", errBadArguments)
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return notObject
	}
	out := map[string]json.RawMessage{}
	for dec.More() {
		t, err := dec.Token()
		key, ok := t.(string)
		if err != nil || !ok {
			return notObject
		}
		if _, dup := out[key]; dup {
			return fmt.Errorf("%w: %s is given twice", errBadArguments, key)
		}
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return notObject
		}
		out[key] = v
	}
	if t, err := dec.Token(); err != nil || t != json.Delim('}') {
		return notObject
	}
	if _, err := dec.Token(); err != io.EOF {
		return fmt.Errorf("%w: trailing data after the object", errBadArguments)
	}
	*m = out
	return nil
}

// field decodes one required field; JSON null and wrong types are errors.
func field[T any](m map[string]json.RawMessage, name string, dst *T) error {
	raw, ok := m[name]
	if !ok {
		return fmt.Errorf("%w: %s is missing", errBadArguments, name)
	}
	if string(raw) == "null" || json.Unmarshal(raw, dst) != nil {
		return fmt.Errorf("%w: %s has the wrong type", errBadArguments, name)
	}
	return nil
}
