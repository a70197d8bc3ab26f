package classifier

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"

	"github.com/toolgate/toolgate/classifier/policy"
	"github.com/toolgate/toolgate/internal/jsonkeys"
)

// MaxAnswerBytes caps the body of one backend answer, counted in the bytes
// that are decoded: after the transport's transparent gzip decompression
// (the only decompression that ever happens; a body still marked with a
// Content-Encoding is refused, never decoded). An answer past the cap
// fails closed; it is never cut short and read.
//
// A classify_result answer is small: at the default max_tokens (1024) its
// arguments are at most about 4 KiB, in an envelope of a few hundred bytes.
// 1 MiB leaves room for much larger max_tokens, reasoning items and verbose
// gateways, while bounding what one attempt holds in memory: a 100 MB
// answer, or a gzip bomb expanding to gigabytes, costs at most 1 MiB.
const MaxAnswerBytes = 1 << 20

var (
	errNoToolCall   = errors.New("the answer has no " + fullTool + " call")
	errBadArguments = errors.New("the function arguments do not match the schema")
	errBadAnswer    = errors.New("the answer is not one complete tool call")
	// errBadBody: the body is not an API response of the expected shape
	// (not JSON, not an object, null or wrong-typed fields).
	errBadBody = errors.New("the answer is not a well-formed API response")
	// errAnswerTooLarge: the body passed MaxAnswerBytes.
	errAnswerTooLarge = errors.New("the answer is larger than the 1 MiB cap")
	// errAnswerEncoded: the body is still compressed (the transport only
	// decodes the gzip it asked for itself).
	errAnswerEncoded = errors.New("the answer is compressed in a way the client did not ask for")
)

// isBadAnswer reports whether err says the backend answered something that
// is not a verdict. Such answers are not retried (the same question gets
// the same kind of answer) but count against the backend's breaker.
func isBadAnswer(err error) bool {
	for _, target := range []error{errNoToolCall, errBadArguments, errBadAnswer, errBadBody, errAnswerTooLarge, errAnswerEncoded} {
		if errors.Is(err, target) {
			return true
		}
	}
	return false
}

// limitAnswer is middleware of both SDKs (their Middleware types are the
// same function type) bounding what one attempt reads: a
// body still compressed is refused, one that declares more than
// MaxAnswerBytes is refused unread, and any other is read through an
// answerBody, which errors past the cap and ends with the request's
// context. It wraps whatever HTTP client the backend uses, so the bounds
// hold for injected clients too.
func limitAnswer(req *http.Request, next func(*http.Request) (*http.Response, error)) (*http.Response, error) {
	res, err := next(req)
	if err != nil {
		return res, err
	}
	if res == nil {
		return nil, fmt.Errorf("%w: the HTTP client returned no response", errBadBody)
	}
	body := res.Body
	if body == nil {
		body = http.NoBody
	}
	for _, ce := range res.Header.Values("Content-Encoding") {
		if strings.TrimSpace(ce) != "" && !strings.EqualFold(strings.TrimSpace(ce), "identity") {
			_ = body.Close()
			return nil, fmt.Errorf("%w (Content-Encoding %q)", errAnswerEncoded, promptCutRunes(ce, 40))
		}
	}
	if res.ContentLength > MaxAnswerBytes {
		_ = body.Close()
		return nil, fmt.Errorf("%w (Content-Length %d)", errAnswerTooLarge, res.ContentLength)
	}
	// An answer is the configured endpoint's own: a redirect is refused,
	// and so is an answer some client fetched from another host after one
	// (it would have had the API key, and its verdict would count).
	if res.StatusCode >= 300 && res.StatusCode < 400 || res.Request != nil && res.Request.URL != nil && res.Request.URL.Host != req.URL.Host {
		_ = body.Close()
		return nil, fmt.Errorf("%w: a redirect (HTTP %d), which the classifier does not follow", errBadBody, res.StatusCode)
	}
	res.Body = newAnswerBody(req.Context(), body)
	return res, nil
}

// answerBody reads at most MaxAnswerBytes of a response body and fails
// (errAnswerTooLarge) on the byte after. It is closed when ctx ends, so
// that a body trickling in cannot outlive the attempt even through an
// HTTP client whose bodies ignore the request's context, and a read cut
// by ctx reports ctx's error. Read is for one goroutine; Close may run
// concurrently with it.
type answerBody struct {
	ctx  context.Context
	rc   io.ReadCloser
	left int64 // bytes still allowed
	err  error // sticky; only Read touches it
	stop func() bool
	once sync.Once
	cerr error
}

func newAnswerBody(ctx context.Context, rc io.ReadCloser) *answerBody {
	b := &answerBody{ctx: ctx, rc: rc, left: MaxAnswerBytes}
	b.stop = context.AfterFunc(ctx, func() { _ = b.closeOnce() })
	return b
}

func (b *answerBody) Read(p []byte) (int, error) {
	if b.err != nil {
		return 0, b.err
	}
	if err := b.ctx.Err(); err != nil {
		b.err = err
		return 0, err
	}
	if len(p) == 0 {
		return 0, nil
	}
	// One byte more than allowed tells a body at the cap from one past it.
	if int64(len(p)) > b.left+1 {
		p = p[:b.left+1]
	}
	n, err := b.rc.Read(p)
	if int64(n) > b.left {
		b.err = errAnswerTooLarge
		return int(b.left), b.err
	}
	b.left -= int64(n)
	if err != nil && err != io.EOF {
		if cerr := b.ctx.Err(); cerr != nil {
			err = cerr // the read was cut by the attempt's deadline
		}
		b.err = err
	}
	return n, err
}

func (b *answerBody) Close() error {
	b.stop()
	return b.closeOnce()
}

func (b *answerBody) closeOnce() error {
	b.once.Do(func() { b.cerr = b.rc.Close() })
	return b.cerr
}

// decodeAnswer turns one successful (2xx) response body of api into the
// verdict carried by the arguments of tool, with the tokens the backend
// reports. Nothing in body is trusted: it must be one JSON object of the
// API's shape holding exactly one complete call of tool, whose arguments
// match tool's schema exactly; anything else (null, arrays, wrong types,
// missing or null fields, several calls, a cut answer) is an error for
// which isBadAnswer holds, and an allow in no allow category of ins is
// ErrUnusableAnswer: either way the check fails closed. Token counts are
// informational and read leniently (0 when absent or odd).
func decodeAnswer(api, tool string, body []byte, ins *instructions) (v verdict, u usage, err error) {
	// A key given twice (or in two cases) anywhere in the answer would let
	// the last one, or a case-variant, decide: the envelope is read with
	// encoding/json, which keeps the last and ignores case.
	if err := jsonkeys.Unique(body); err != nil {
		return verdict{}, usage{}, fmt.Errorf("%w: %w", errBadBody, err)
	}
	var args string
	switch api {
	case APIResponses:
		args, u, err = responsesArguments(body, tool)
	case APIAnthropic:
		args, u, err = messagesArguments(body, tool)
	default:
		args, u, err = chatArguments(body, tool)
	}
	if err != nil {
		return verdict{}, u, err
	}
	if tool == fastTool {
		v, err = parseFast(args)
	} else {
		v, err = parseFull(args)
	}
	if err == nil {
		err = checkCategory(&v, ins)
	}
	return v, u, err
}

// checkCategory holds the named category against the policy's. A block
// blocks whatever it names, recorded as policy.Unknown unless it names a
// deny category; an allow stands only in an allow category, so an allow
// naming anything else is not a verdict (ErrUnusableAnswer) and fails
// closed. The model's text is never echoed: it is untrusted.
func checkCategory(v *verdict, ins *instructions) error {
	k, known := ins.kind(v.Category)
	switch {
	case v.Block && !(known && k.Blocks()):
		v.Category = policy.Unknown
	case v.Block:
	case !known:
		return fmt.Errorf("%w: an allow that names no category of the policy", ErrUnusableAnswer)
	case k != policy.Allow:
		return fmt.Errorf("%w: an allow that names the %s category %s", ErrUnusableAnswer, k, v.Category)
	}
	return nil
}

// The parts of the APIs' answers that are read. Pointers tell a null
// or missing object from an empty one; every other field is ignored.
type chatEnvelope struct {
	Choices []*struct {
		FinishReason string `json:"finish_reason"`
		Message      *struct {
			ToolCalls []*struct {
				Type     string `json:"type"`
				Function *struct {
					Name      string  `json:"name"`
					Arguments *string `json:"arguments"`
				} `json:"function"`
			} `json:"tool_calls"`
		} `json:"message"`
	} `json:"choices"`
	Usage json.RawMessage `json:"usage"`
}

type responsesEnvelope struct {
	Status string            `json:"status"`
	Output []json.RawMessage `json:"output"`
	Usage  json.RawMessage   `json:"usage"`
}

type responsesFunctionCall struct {
	Name      string  `json:"name"`
	Arguments *string `json:"arguments"`
}

type messagesEnvelope struct {
	Type       string            `json:"type"`
	StopReason string            `json:"stop_reason"`
	Content    []json.RawMessage `json:"content"`
	Usage      json.RawMessage   `json:"usage"`
}

// messagesToolUse is a tool_use content block; its input is the arguments
// as a JSON object, not a string holding one.
type messagesToolUse struct {
	Name  string          `json:"name"`
	Input json.RawMessage `json:"input"`
}

func chatArguments(body []byte, tool string) (string, usage, error) {
	var env chatEnvelope
	if err := decodeObject(body, &env, "the body"); err != nil {
		return "", usage{}, err
	}
	u := usageTokens(env.Usage, "prompt_tokens", "completion_tokens", "prompt_tokens_details")
	// One answer holding one call: with several, which one counts would be
	// a guess, and a guess must not allow.
	if len(env.Choices) != 1 {
		return "", u, fmt.Errorf("%w: %d choices, want 1", errBadAnswer, len(env.Choices))
	}
	ch := env.Choices[0]
	if ch == nil {
		return "", u, fmt.Errorf("%w: choices[0] is null", errBadBody)
	}
	switch ch.FinishReason {
	case "tool_calls", "stop", "":
	default:
		// "length", "content_filter": the arguments may be cut short.
		return "", u, fmt.Errorf("%w: finish reason %q", errBadAnswer, promptCutRunes(ch.FinishReason, 40))
	}
	if ch.Message == nil {
		return "", u, fmt.Errorf("%w: choices[0].message is missing or null", errBadBody)
	}
	calls := ch.Message.ToolCalls
	switch {
	case len(calls) == 0:
		return "", u, fmt.Errorf("%w (tool %s)", errNoToolCall, tool)
	case len(calls) > 1:
		return "", u, fmt.Errorf("%w: %d tool calls, want 1", errBadAnswer, len(calls))
	}
	c := calls[0]
	switch {
	case c == nil:
		return "", u, fmt.Errorf("%w: tool_calls[0] is null", errBadBody)
	case c.Type != "" && c.Type != "function":
		return "", u, fmt.Errorf("%w (tool %s, got a call of another kind)", errNoToolCall, tool)
	case c.Function == nil:
		return "", u, fmt.Errorf("%w: tool_calls[0].function is missing or null", errBadBody)
	case c.Function.Name != tool:
		return "", u, fmt.Errorf("%w (tool %s, got a call of another tool)", errNoToolCall, tool)
	case c.Function.Arguments == nil:
		return "", u, fmt.Errorf("%w: the arguments are missing or null", errBadArguments)
	}
	return *c.Function.Arguments, u, nil
}

func responsesArguments(body []byte, tool string) (string, usage, error) {
	var env responsesEnvelope
	if err := decodeObject(body, &env, "the body"); err != nil {
		return "", usage{}, err
	}
	u := usageTokens(env.Usage, "input_tokens", "output_tokens", "input_tokens_details")
	if env.Status != "completed" && env.Status != "" {
		// An empty status is a compatible server that does not set it (as
		// with an empty finish reason in chat); "incomplete" (max tokens,
		// content filter) and the rest may have cut the arguments short.
		return "", u, fmt.Errorf("%w: status %q", errBadAnswer, promptCutRunes(env.Status, 40))
	}
	args, err := soleCall(env.Output, "output", "function_call", tool, func(raw json.RawMessage, where string) (string, error) {
		var call responsesFunctionCall
		if err := decodeObject(raw, &call, where); err != nil {
			return "", err
		}
		if call.Name != tool {
			return "", fmt.Errorf("%w (tool %s, got a call of another tool)", errNoToolCall, tool)
		}
		if call.Arguments == nil {
			return "", fmt.Errorf("%w: the arguments are missing or null", errBadArguments)
		}
		return *call.Arguments, nil
	})
	return args, u, err
}

// messagesArguments reads a Messages API answer: exactly one tool_use
// block, of tool, whose input is returned as JSON text for parseFull or
// parseFast (which take only an object). Text and thinking blocks are
// ignored: a verdict comes from the tool call alone.
func messagesArguments(body []byte, tool string) (string, usage, error) {
	var env messagesEnvelope
	if err := decodeObject(body, &env, "the body"); err != nil {
		return "", usage{}, err
	}
	u := anthropicUsage(env.Usage)
	if env.Type != "message" && env.Type != "" {
		// "error" with a 200 status, from a gateway.
		return "", u, fmt.Errorf("%w: type %q", errBadAnswer, promptCutRunes(env.Type, 40))
	}
	switch env.StopReason {
	case "tool_use", "end_turn", "":
	default:
		// "max_tokens" (the input may be cut), "refusal", "pause_turn"...
		return "", u, fmt.Errorf("%w: stop reason %q", errBadAnswer, promptCutRunes(env.StopReason, 40))
	}
	args, err := soleCall(env.Content, "content", "tool_use", tool, func(raw json.RawMessage, where string) (string, error) {
		var call messagesToolUse
		if err := decodeObject(raw, &call, where); err != nil {
			return "", err
		}
		if call.Name != tool {
			return "", fmt.Errorf("%w (tool %s, got a call of another tool)", errNoToolCall, tool)
		}
		if len(call.Input) == 0 || string(call.Input) == "null" {
			return "", fmt.Errorf("%w: the input is missing or null", errBadArguments)
		}
		return string(call.Input), nil
	})
	return args, u, err
}

// soleCall returns the arguments of the one item of callType among items
// (field[i] in errors), which args reads; other items (reasoning, text)
// are passed over. None, or more than one, fails closed.
func soleCall(items []json.RawMessage, field, callType, tool string, args func(raw json.RawMessage, where string) (string, error)) (string, error) {
	var found []string
	for i, raw := range items {
		where := fmt.Sprintf("%s[%d]", field, i)
		var item struct {
			Type string `json:"type"`
		}
		if err := decodeObject(raw, &item, where); err != nil {
			return "", err
		}
		if item.Type != callType {
			continue
		}
		a, err := args(raw, where)
		if err != nil {
			return "", err
		}
		found = append(found, a)
	}
	switch len(found) {
	case 0:
		return "", fmt.Errorf("%w (tool %s)", errNoToolCall, tool)
	case 1:
		return found[0], nil
	}
	return "", fmt.Errorf("%w: %d tool calls, want 1", errBadAnswer, len(found))
}

// decodeObject decodes raw, which must be one JSON object and nothing
// else, into dst; what names raw in errors.
func decodeObject(raw []byte, dst any, what string) error {
	t := bytes.TrimSpace(raw)
	switch {
	case len(t) == 0:
		return fmt.Errorf("%w: %s is empty", errBadBody, what)
	case !json.Valid(t):
		return fmt.Errorf("%w: %s is not valid JSON", errBadBody, what)
	case t[0] != '{':
		return fmt.Errorf("%w: %s is %s, not a JSON object", errBadBody, what, jsonKind(t))
	}
	if err := json.Unmarshal(t, dst); err != nil {
		return fmt.Errorf("%w: %s: %s", errBadBody, what, typeProblem(err))
	}
	return nil
}

// jsonKind names what t, valid JSON but not an object, holds.
func jsonKind(t []byte) string {
	switch t[0] {
	case 'n':
		return "JSON null"
	case '[':
		return "a JSON array"
	case '"':
		return "a JSON string"
	case 't', 'f':
		return "a JSON boolean"
	}
	return "a JSON number"
}

// typeProblem says which field of valid JSON has the wrong type, without
// echoing the data.
func typeProblem(err error) string {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		field := te.Field
		if field == "" {
			field = "a field"
		}
		return fmt.Sprintf("%s is a JSON %s, of the wrong type", promptCutRunes(field, 80), te.Value)
	}
	return "not what the API answers"
}

// usageTokens reads the token counts of an OpenAI usage object,
// leniently: they are only reported, so an absent, null or odd usage
// gives 0, never an error, and never a negative or absurd count. The
// cached count is details' cached_tokens, at most the input.
func usageTokens(raw json.RawMessage, inKey, outKey, detailsKey string) usage {
	u := usageObject(raw)
	in := tokenCount(u[inKey])
	return usage{in: in, out: tokenCount(u[outKey]), cached: min(tokenCount(usageObject(u[detailsKey])["cached_tokens"]), in)}
}

// anthropicUsage reads a Messages API usage as usageTokens does. Input is
// every prompt token, cached or not: input_tokens counts only those after
// the last cache breakpoint, the rest are cache writes and reads.
func anthropicUsage(raw json.RawMessage) usage {
	u := usageObject(raw)
	read := tokenCount(u["cache_read_input_tokens"])
	in := tokenCount(u["input_tokens"]) + tokenCount(u["cache_creation_input_tokens"]) + read
	return usage{in: in, out: tokenCount(u["output_tokens"]), cached: read}
}

func usageObject(raw json.RawMessage) map[string]json.RawMessage {
	var u map[string]json.RawMessage
	if json.Unmarshal(raw, &u) != nil {
		return nil
	}
	return u
}

// tokenCount is one count: 0 unless a number in [0, 2^40].
func tokenCount(raw json.RawMessage) int64 {
	var f float64
	if json.Unmarshal(raw, &f) != nil || f < 0 || f > 1<<40 {
		return 0
	}
	return int64(f)
}

// parseFull validates classify_result arguments strictly: compatible
// servers do not all honour strict schemas, and a verdict we cannot read
// must fail closed, never default to allow.
func parseFull(raw string) (verdict, error) {
	var m map[string]json.RawMessage
	if err := decodeStrict(raw, &m); err != nil {
		return verdict{}, err
	}
	if len(m) != 4 {
		return verdict{}, fmt.Errorf("%w: want exactly thinking, category, should_block and reason, got %d fields", errBadArguments, len(m))
	}
	var v verdict
	if err := field(m, "thinking", &v.Thinking); err != nil {
		return verdict{}, err
	}
	if err := field(m, "category", &v.Category); err != nil {
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
	if len(m) != 2 {
		return verdict{}, fmt.Errorf("%w: want only category and should_block, got %d fields", errBadArguments, len(m))
	}
	var v verdict
	if err := field(m, "category", &v.Category); err != nil {
		return verdict{}, err
	}
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
			return fmt.Errorf("%w: %s is given twice", errBadArguments, promptCutRunes(key, 40))
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
