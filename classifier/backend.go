package classifier

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net/http"
	"os"
	"strconv"
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
	stage          string
	inTok, outTok  int64
	backend, model string
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
		// Whatever the client, an answer is read within the attempt and
		// at most MaxAnswerBytes of it, decompressed.
		option.WithMiddleware(limitAnswer),
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
		v, in, o, err := b.callWithRetry(ctx, p, fastTool, fastSchema, fastMaxTokens)
		out.inTok, out.outTok = out.inTok+in, out.outTok+o
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
	v, in, o, err := b.callWithRetry(ctx, p, fullTool, fullSchema, int64(b.maxTokens))
	out.inTok, out.outTok = out.inTok+in, out.outTok+o
	if err != nil {
		return out, err
	}
	out.verdict = v
	return out, nil
}

// callWithRetry makes one call and, when it failed in a way worth
// retrying (429, 5xx, attempt timeout, transport), one more, honouring
// Retry-After, but only while ctx's deadline leaves room for it.
func (b *backend) callWithRetry(ctx context.Context, p Prompt, tool string, schema map[string]any, maxTokens int64) (verdict, int64, int64, error) {
	v, in, out, err := b.attempt(ctx, p, tool, schema, maxTokens)
	if err == nil || ctx.Err() != nil {
		return v, in, out, err
	}
	wait, ok := retryable(err)
	if !ok {
		return v, in, out, err
	}
	// Retry only when a whole attempt still fits: a retry cut short by the
	// deadline would look like the caller's timeout, hiding a hanging
	// backend from its breaker and leaving no time to fail over.
	if dl, has := ctx.Deadline(); has && time.Until(dl) < wait+b.cfg.Timeout {
		return v, in, out, fmt.Errorf("%w (no time left to retry)", err)
	}
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return v, in, out, err
	case <-t.C:
	}
	v, in2, out2, err := b.attempt(ctx, p, tool, schema, maxTokens)
	if err != nil {
		err = fmt.Errorf("after a retry: %w", err)
	}
	return v, in + in2, out + out2, err
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
func (b *backend) attempt(ctx context.Context, p Prompt, tool string, schema map[string]any, maxTokens int64) (verdict, int64, int64, error) {
	actx, cancel := context.WithTimeout(ctx, b.cfg.Timeout)
	defer cancel()
	var (
		v       verdict
		in, out int64
	)
	body, err := b.post(actx, p, tool, schema, maxTokens)
	if err == nil {
		v, in, out, err = decodeAnswer(b.cfg.API, tool, body)
		if err == nil {
			err = actx.Err()
		}
	}
	if err == nil {
		return v, in, out, nil
	}
	if ctx.Err() != nil {
		return verdict{}, in, out, ctx.Err()
	}
	return verdict{}, in, out, describe(err, actx, b.cfg.Timeout)
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
	case isBadAnswer(err):
		// Not retried: asked again, the backend answers the same way.
		return err
	case errors.Is(actx.Err(), context.DeadlineExceeded):
		return &attemptError{msg: fmt.Sprintf("no answer within %s", timeout), err: err, retry: true}
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

// post sends one request for a forced call of tool and returns the answer's
// body, which openai-go reads (through limitAnswer) but does not decode:
// decodeAnswer does, trusting nothing in it.
func (b *backend) post(ctx context.Context, p Prompt, tool string, schema map[string]any, maxTokens int64) ([]byte, error) {
	var body []byte
	into := option.WithResponseBodyInto(&body)
	if b.cfg.API == APIResponses {
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
			Description: openai.String("Report whether the pending action should be blocked."),
			Parameters:  schema,
			Strict:      openai.Bool(true),
		})},
		ToolChoice:          openai.ToolChoiceOptionFunctionToolChoice(openai.ChatCompletionNamedToolChoiceFunctionParam{Name: tool}),
		MaxCompletionTokens: openai.Int(maxTokens),
	}, into)
	return body, err
}
