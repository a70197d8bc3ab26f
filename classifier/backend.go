package classifier

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"os"
	"strconv"
	"time"

	"github.com/anthropics/anthropic-sdk-go"
	aoption "github.com/anthropics/anthropic-sdk-go/option"
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
	// fastMaxTokens is stage 1's budget: enough for
	// {"category":"<40 characters>","should_block":false}.
	fastMaxTokens = 64
)

// toolDescription describes both forced functions to the model.
const toolDescription = "Report whether the pending action should be blocked, and the category of the policy that decides."

// verdict is a parsed classify_result.
type verdict struct {
	Thinking string `json:"thinking"`
	// Category is a category in force of the prompt's policy, or
	// policy.Unknown for a block that named none (an allow must name one).
	Category string `json:"category"`
	Block    bool   `json:"should_block"`
	Reason   string `json:"reason"`
}

// usage is what the backends reported a classification cost: prompt
// tokens (those read from the provider's prompt cache included, which
// cached counts again), and answer tokens.
type usage struct {
	in, out, cached int64
}

func (u usage) plus(v usage) usage { return usage{u.in + v.in, u.out + v.out, u.cached + v.cached} }

// outcome is one backend's answer with what it cost.
type outcome struct {
	verdict
	stage          string
	tokens         usage
	backend, model string
}

// backend calls one endpoint: OpenAI-compatible (chat, responses) or
// Anthropic (messages), as cfg.API says.
type backend struct {
	cfg       BackendConfig
	chat      openai.ChatCompletionService
	responses responses.ResponseService
	messages  anthropic.MessageService
	twoStage  bool
	maxTokens int
}

func newBackend(cfg BackendConfig, twoStage bool, maxTokens int, hc option.HTTPClient) *backend {
	if hc == nil {
		// No redirects: the key and the prompt go to the configured
		// endpoint and nowhere else (openai-go checks the origin itself;
		// anthropic-sdk-go does not, and would resend x-api-key).
		hc = &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	}
	b := &backend{cfg: cfg, twoStage: twoStage, maxTokens: maxTokens}
	key := os.Getenv(cfg.APIKeyEnv)
	if cfg.API == APIAnthropic {
		b.messages = newMessageService(cfg, key, hc)
		return b
	}
	opts := []option.RequestOption{
		option.WithHTTPClient(hc),
		option.WithBaseURL(cfg.BaseURL),
		option.WithAPIKey(key),
		// openai-go has no timeout and retries twice by default; we retry
		// ourselves (once, within the deadline) and bound each attempt.
		option.WithMaxRetries(0),
		option.WithRequestTimeout(cfg.Timeout),
		// Whatever the client, an answer is read within the attempt and
		// at most MaxAnswerBytes of it, decompressed.
		option.WithMiddleware(limitAnswer),
	}
	// The services are built without openai.NewClient, which would add
	// what the environment holds (OPENAI_ORG_ID, OPENAI_CUSTOM_HEADERS and
	// others) to every request, whichever backend it goes to.
	b.chat = openai.NewChatCompletionService(opts...)
	b.responses = responses.NewResponseService(opts...)
	return b
}

// newMessageService builds the Messages API service with what we pass and
// nothing else. anthropic.NewClient would start from
// DefaultClientOptions: ANTHROPIC_BASE_URL, ANTHROPIC_API_KEY,
// ANTHROPIC_AUTH_TOKEN, ANTHROPIC_PROFILE and profile files,
// workload-identity federation, ANTHROPIC_CUSTOM_HEADERS. The service
// alone reads none of them; what it would still take from the environment,
// its OpenTelemetry settings (ANTHROPIC_OPEN_TELEMETRY*, the global tracer
// provider, trace headers on requests, prompts in spans), is set here:
// off, as the classifier records its own span of each call.
func newMessageService(cfg BackendConfig, key string, hc option.HTTPClient) anthropic.MessageService {
	return anthropic.NewMessageService(
		aoption.WithHTTPClient(hc),
		aoption.WithBaseURL(cfg.BaseURL),
		aoption.WithAPIKey(key),
		// As for openai-go: no SDK retries (two by default), one bound
		// per attempt (else the SDK derives one from max_tokens).
		aoption.WithMaxRetries(0),
		aoption.WithRequestTimeout(cfg.Timeout),
		aoption.WithMiddleware(limitAnswer),
		aoption.WithOpenTelemetryTraces(false),
		aoption.WithOpenTelemetryPropagation(false),
		aoption.WithOpenTelemetryTracesContentMode(aoption.OpenTelemetryContentModeMetadataOnly),
	)
}

// classify runs the side-query: one stage, or stage 1 then, only on a
// block, stage 2.
func (b *backend) classify(ctx context.Context, p Prompt) (outcome, error) {
	out := outcome{backend: b.cfg.Name, model: b.cfg.Model, stage: "single"}
	if b.twoStage {
		v, u, err := b.callWithRetry(ctx, p, fastTool, p.instructions().fast, fastMaxTokens)
		out.tokens = out.tokens.plus(u)
		switch {
		case errors.Is(err, ErrUnusableAnswer):
			// An allow in no allow category: let the full stage, which
			// reasons first, decide.
			v.Block = true
		case err != nil:
			return out, err
		}
		if !v.Block {
			out.stage = "fast"
			out.Category = v.Category
			out.Reason = "the classifier found nothing to block"
			return out, nil
		}
		out.stage = "full"
	}
	v, u, err := b.callWithRetry(ctx, p, fullTool, p.instructions().full, int64(b.maxTokens))
	out.tokens = out.tokens.plus(u)
	if err != nil {
		return out, err
	}
	out.verdict = v
	return out, nil
}

// callWithRetry makes one call and, when it failed in a way worth
// retrying (429, 5xx, attempt timeout, transport), one more, honouring
// Retry-After, but only while ctx's deadline leaves room for it.
func (b *backend) callWithRetry(ctx context.Context, p Prompt, tool string, schema map[string]any, maxTokens int64) (verdict, usage, error) {
	v, u, err := b.attempt(ctx, p, tool, schema, maxTokens)
	if err == nil || ctx.Err() != nil {
		return v, u, err
	}
	wait, ok := retryable(err)
	if !ok {
		return v, u, err
	}
	// Retry only when a whole attempt still fits: a retry cut short by the
	// deadline would look like the caller's timeout, hiding a hanging
	// backend from its breaker and leaving no time to fail over.
	if dl, has := ctx.Deadline(); has && time.Until(dl) < wait+b.cfg.Timeout {
		return v, u, fmt.Errorf("%w (no time left to retry)", err)
	}
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return v, u, err
	case <-t.C:
	}
	v, u2, err := b.attempt(ctx, p, tool, schema, maxTokens)
	if err != nil {
		err = fmt.Errorf("after a retry: %w", err)
	}
	return v, u.plus(u2), err
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

// attempt makes one HTTP call and returns the verdict it carries. The
// body is read and decoded under the attempt's own deadline: the read ends
// when actx does (limitAnswer sees to it whatever the HTTP client), and an
// answer complete only after actx ended is a timeout, not a verdict.
func (b *backend) attempt(ctx context.Context, p Prompt, tool string, schema map[string]any, maxTokens int64) (verdict, usage, error) {
	actx, cancel := context.WithTimeout(ctx, b.cfg.Timeout)
	defer cancel()
	var (
		v verdict
		u usage
	)
	body, err := b.post(actx, p, tool, schema, maxTokens)
	if err == nil {
		v, u, err = decodeAnswer(b.cfg.API, tool, body, p.instructions())
		if err == nil {
			err = actx.Err()
		}
	}
	if err == nil {
		return v, u, nil
	}
	if ctx.Err() != nil {
		return verdict{}, u, ctx.Err()
	}
	return verdict{}, u, describe(err, actx, b.cfg.Timeout)
}

func describe(err error, actx context.Context, timeout time.Duration) error {
	if st, ok := statusOf(err); ok {
		code := st.code
		msg := fmt.Sprintf("HTTP %d", code)
		if st.message != "" {
			msg += ": " + promptCutRunes(st.message, 200)
		}
		ae := &attemptError{msg: msg, err: err, retry: code == http.StatusTooManyRequests || code >= 500, retryAfter: retryAfter(st.header)}
		if code >= 400 && code < 500 && code != http.StatusRequestTimeout && code != http.StatusConflict && code != http.StatusTooManyRequests {
			// The request was refused (too long, filtered, bad model): the
			// backend is healthy, so its breaker must not open because of
			// one client, and another backend would refuse it too.
			return fmt.Errorf("%w: %w", ErrRequestRefused, ae)
		}
		return ae
	}
	switch {
	case isBadAnswer(err), errors.Is(err, ErrUnusableAnswer):
		// Not retried: asked again, the backend answers the same way.
		return err
	case errors.Is(actx.Err(), context.DeadlineExceeded):
		return &attemptError{msg: fmt.Sprintf("no answer within %s", timeout), err: err, retry: true}
	}
	return &attemptError{msg: "transport: " + promptCutRunes(err.Error(), 200), err: err, retry: true}
}

// httpStatus is an error answer of either SDK: its status, the message
// of its body, and its headers (for Retry-After).
type httpStatus struct {
	code    int
	message string
	header  http.Header
}

// statusOf finds the error answer in err, from openai-go or
// anthropic-sdk-go.
func statusOf(err error) (httpStatus, bool) {
	if e, ok := errors.AsType[*openai.Error](err); ok {
		st := httpStatus{code: e.StatusCode, message: e.Message}
		if e.Response != nil {
			st.header = e.Response.Header
		}
		return st, true
	}
	if e, ok := errors.AsType[*anthropic.Error](err); ok {
		st := httpStatus{code: e.StatusCode}
		// {"type":"error","error":{"type":...,"message":...}}; its Error()
		// would quote the whole body and the URL.
		var body struct {
			Error struct {
				Message string `json:"message"`
			} `json:"error"`
		}
		if json.Unmarshal([]byte(e.RawJSON()), &body) == nil {
			st.message = body.Error.Message
		}
		if e.Response != nil {
			st.header = e.Response.Header
		}
		return st, true
	}
	return httpStatus{}, false
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

// post sends one request for a forced call of tool and returns the answer's
// body, which the SDK reads (through limitAnswer) but does not decode:
// decodeAnswer does, trusting nothing in it.
func (b *backend) post(ctx context.Context, p Prompt, tool string, schema map[string]any, maxTokens int64) ([]byte, error) {
	var body []byte
	into := option.WithResponseBodyInto(&body)
	switch b.cfg.API {
	case APIAnthropic:
		_, err := b.messages.New(ctx, anthropic.MessageNewParams{
			Model:     b.cfg.Model,
			MaxTokens: maxTokens,
			// The system prompt is the same for every check under one
			// policy: marked for caching, it and the tool before it are
			// billed at the cache-read rate on repeats.
			System:   []anthropic.TextBlockParam{{Text: p.System, CacheControl: anthropic.NewCacheControlEphemeralParam()}},
			Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock(p.User))},
			Tools: []anthropic.ToolUnionParam{{OfTool: &anthropic.ToolParam{
				Name:        tool,
				Description: anthropic.String(toolDescription),
				InputSchema: anthropic.ToolInputSchemaParam{
					Properties:  schema["properties"],
					Required:    schema["required"].([]string),
					ExtraFields: map[string]any{"additionalProperties": false},
				},
			}}},
			ToolChoice: anthropic.ToolChoiceUnionParam{OfTool: &anthropic.ToolChoiceToolParam{
				Name: tool, DisableParallelToolUse: anthropic.Bool(true),
			}},
		}, aoption.WithResponseBodyInto(&body))
		return body, err
	case APIResponses:
		_, err := b.responses.New(ctx, responses.ResponseNewParams{
			Model:           b.cfg.Model,
			Instructions:    openai.String(p.System),
			Input:           responses.ResponseNewParamsInputUnion{OfString: openai.String(p.User)},
			Tools:           []responses.ToolUnionParam{responses.ToolParamOfFunction(tool, schema, true)},
			ToolChoice:      responses.ResponseNewParamsToolChoiceUnion{OfFunctionTool: &responses.ToolChoiceFunctionParam{Name: tool}},
			MaxOutputTokens: openai.Int(maxTokens),
			// Tool calls and transcripts are not kept by the provider.
			Store: openai.Bool(false),
		}, into)
		return body, err
	}
	_, err := b.chat.New(ctx, openai.ChatCompletionNewParams{
		Model: b.cfg.Model,
		Messages: []openai.ChatCompletionMessageParamUnion{
			openai.SystemMessage(p.System),
			openai.UserMessage(p.User),
		},
		Tools: []openai.ChatCompletionToolUnionParam{openai.ChatCompletionFunctionTool(shared.FunctionDefinitionParam{
			Name:        tool,
			Description: openai.String(toolDescription),
			Parameters:  schema,
			Strict:      openai.Bool(true),
		})},
		ToolChoice:          openai.ToolChoiceOptionFunctionToolChoice(openai.ChatCompletionNamedToolChoiceFunctionParam{Name: tool}),
		MaxCompletionTokens: openai.Int(maxTokens),
	}, into)
	return body, err
}
