package fakellm_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/toolgate/toolgate/fakellm"
)

// ---- request builders, shaped like what openai-go sends ----

var resultSchema = json.RawMessage(`{"type":"object","properties":{` +
	`"thinking":{"type":"string"},"should_block":{"type":"boolean"},"reason":{"type":"string"}},` +
	`"required":["thinking","should_block","reason"],"additionalProperties":false}`)

var fastSchema = json.RawMessage(`{"type":"object","properties":{"should_block":{"type":"boolean"}},` +
	`"required":["should_block"],"additionalProperties":false}`)

func schemaFor(tool string) json.RawMessage {
	if tool == "classify_fast" {
		return fastSchema
	}
	return resultSchema
}

// chatBody is a chat completions request forcing tool.
func chatBody(tool, system, user string) map[string]any {
	return map[string]any{
		"model": "gpt-test",
		"messages": []any{
			map[string]any{"role": "system", "content": system},
			map[string]any{"role": "user", "content": []any{map[string]any{"type": "text", "text": user}}},
		},
		"tools": []any{map[string]any{"type": "function", "function": map[string]any{
			"name": tool, "description": "classify", "parameters": schemaFor(tool), "strict": true,
		}}},
		"tool_choice":           map[string]any{"type": "function", "function": map[string]any{"name": tool}},
		"max_completion_tokens": 256,
		"temperature":           0,
	}
}

// responsesBody is a responses request forcing tool.
func responsesBody(tool, system, user string) map[string]any {
	return map[string]any{
		"model":        "gpt-test",
		"instructions": system,
		"input": []any{
			map[string]any{"role": "developer", "content": "dev note"},
			map[string]any{"type": "message", "role": "user", "content": []any{map[string]any{"type": "input_text", "text": user}}},
		},
		"tools": []any{map[string]any{
			"type": "function", "name": tool, "description": "classify", "parameters": schemaFor(tool), "strict": true,
		}},
		"tool_choice":       map[string]any{"type": "function", "name": tool},
		"max_output_tokens": 128,
	}
}

// messagesBody is a Messages API request forcing tool, shaped like what
// anthropic-sdk-go sends for toolgate: the system prompt as a text block
// marked for caching.
func messagesBody(tool, system, user string) map[string]any {
	return map[string]any{
		"model":      "claude-test",
		"max_tokens": 64,
		"system":     []any{map[string]any{"type": "text", "text": system, "cache_control": map[string]any{"type": "ephemeral"}}},
		"messages": []any{
			map[string]any{"role": "user", "content": []any{map[string]any{"type": "text", "text": user}}},
		},
		"tools": []any{map[string]any{
			"name": tool, "description": "classify", "input_schema": schemaFor(tool),
		}},
		"tool_choice": map[string]any{"type": "tool", "name": tool, "disable_parallel_tool_use": true},
	}
}

func bodyFor(api, tool, system, user string) map[string]any {
	switch api {
	case fakellm.APIChat:
		return chatBody(tool, system, user)
	case fakellm.APIAnthropic:
		return messagesBody(tool, system, user)
	}
	return responsesBody(tool, system, user)
}

// pathFor is api's endpoint, relative to Server.URL.
func pathFor(api string) string {
	switch api {
	case fakellm.APIChat:
		return "/chat/completions"
	case fakellm.APIAnthropic:
		return "/messages"
	}
	return "/responses"
}

// headerFor is what every request of api carries: anthropic-version for
// the Messages API.
func headerFor(api string) http.Header {
	if api == fakellm.APIAnthropic {
		return http.Header{"Anthropic-Version": {fakellm.AnthropicVersion}}
	}
	return nil
}

// withHeader is headerFor(api) with more headers.
func withHeader(api string, h http.Header) http.Header {
	out := headerFor(api)
	if out == nil {
		out = http.Header{}
	}
	for k, v := range h {
		out[k] = v
	}
	return out
}

// modelFor is the model of bodyFor(api, ...).
func modelFor(api string) string {
	if api == fakellm.APIAnthropic {
		return "claude-test"
	}
	return "gpt-test"
}

var apis = []string{fakellm.APIChat, fakellm.APIResponses, fakellm.APIAnthropic}

// ---- HTTP helpers ----

type result struct {
	resp *http.Response
	body []byte
	err  error
}

// send posts body (JSON-encoded unless already []byte) to url.
func send(ctx context.Context, client *http.Client, method, url string, body any, header http.Header) result {
	var raw []byte
	switch b := body.(type) {
	case nil:
	case []byte:
		raw = b
	default:
		var err error
		if raw, err = json.Marshal(b); err != nil {
			return result{err: err}
		}
	}
	req, err := http.NewRequestWithContext(ctx, method, url, bytes.NewReader(raw))
	if err != nil {
		return result{err: err}
	}
	req.Header.Set("Content-Type", "application/json")
	for k, v := range header {
		req.Header[k] = v
	}
	resp, err := client.Do(req)
	if err != nil {
		return result{err: err}
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return result{resp: resp, body: b, err: err}
}

// post posts body to srv's API endpoint and fails the test on a transport
// error.
func post(t *testing.T, srv *fakellm.Server, api string, body any) result {
	t.Helper()
	r := send(t.Context(), http.DefaultClient, http.MethodPost, srv.URL()+pathFor(api), body, headerFor(api))
	if r.err != nil {
		t.Fatalf("POST %s: %v", pathFor(api), r.err)
	}
	return r
}

func freshClient(t *testing.T) *http.Client {
	tr := &http.Transport{}
	t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr}
}

func decode(t *testing.T, b []byte, v any) {
	t.Helper()
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("decode %s: %v", b, err)
	}
}

// ---- response shapes ----

type chatCompletion struct {
	ID      string `json:"id"`
	Object  string `json:"object"`
	Created int64  `json:"created"`
	Model   string `json:"model"`
	Choices []struct {
		Index        int    `json:"index"`
		FinishReason string `json:"finish_reason"`
		Message      struct {
			Role      string  `json:"role"`
			Content   *string `json:"content"`
			ToolCalls []struct {
				ID       string `json:"id"`
				Type     string `json:"type"`
				Function struct {
					Name      string `json:"name"`
					Arguments string `json:"arguments"`
				} `json:"function"`
			} `json:"tool_calls"`
		} `json:"message"`
	} `json:"choices"`
	Usage struct {
		PromptTokens     int `json:"prompt_tokens"`
		CompletionTokens int `json:"completion_tokens"`
		TotalTokens      int `json:"total_tokens"`
	} `json:"usage"`
}

type responseObject struct {
	ID        string `json:"id"`
	Object    string `json:"object"`
	CreatedAt int64  `json:"created_at"`
	Status    string `json:"status"`
	Model     string `json:"model"`
	Output    []struct {
		Type      string `json:"type"`
		ID        string `json:"id"`
		CallID    string `json:"call_id"`
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
		Status    string `json:"status"`
		Role      string `json:"role"`
		Content   []struct {
			Type string `json:"type"`
			Text string `json:"text"`
		} `json:"content"`
	} `json:"output"`
	Usage struct {
		InputTokens  int `json:"input_tokens"`
		OutputTokens int `json:"output_tokens"`
		TotalTokens  int `json:"total_tokens"`
	} `json:"usage"`
}

type message struct {
	ID           string  `json:"id"`
	Type         string  `json:"type"`
	Role         string  `json:"role"`
	Model        string  `json:"model"`
	StopReason   string  `json:"stop_reason"`
	StopSequence *string `json:"stop_sequence"`
	Content      []struct {
		Type  string          `json:"type"`
		ID    string          `json:"id"`
		Name  string          `json:"name"`
		Input json.RawMessage `json:"input"`
		Text  string          `json:"text"`
	} `json:"content"`
	Usage struct {
		InputTokens              int `json:"input_tokens"`
		OutputTokens             int `json:"output_tokens"`
		CacheCreationInputTokens int `json:"cache_creation_input_tokens"`
		CacheReadInputTokens     int `json:"cache_read_input_tokens"`
	} `json:"usage"`
}

type verdict struct {
	Thinking    string `json:"thinking"`
	ShouldBlock bool   `json:"should_block"`
	Reason      string `json:"reason"`
}

// toolCall checks the 200 answer's envelope for api and returns the called
// function's name and arguments string.
func toolCall(t *testing.T, api string, r result) (name, args string) {
	t.Helper()
	if r.resp.StatusCode != http.StatusOK {
		t.Fatalf("status %d, body %s", r.resp.StatusCode, r.body)
	}
	if ct := r.resp.Header.Get("Content-Type"); ct != "application/json" {
		t.Errorf("Content-Type %q", ct)
	}
	if api == fakellm.APIChat {
		var c chatCompletion
		decode(t, r.body, &c)
		if !strings.HasPrefix(c.ID, "chatcmpl-") || c.Object != "chat.completion" || c.Created == 0 || c.Model != "gpt-test" {
			t.Errorf("envelope: %s", r.body)
		}
		if len(c.Choices) != 1 {
			t.Fatalf("choices: %s", r.body)
		}
		ch := c.Choices[0]
		if ch.Index != 0 || ch.FinishReason != "tool_calls" || ch.Message.Role != "assistant" || ch.Message.Content != nil {
			t.Errorf("choice: %s", r.body)
		}
		if len(ch.Message.ToolCalls) != 1 {
			t.Fatalf("tool_calls: %s", r.body)
		}
		tc := ch.Message.ToolCalls[0]
		if !strings.HasPrefix(tc.ID, "call_") || tc.Type != "function" {
			t.Errorf("tool call: %s", r.body)
		}
		u := c.Usage
		if u.PromptTokens <= 0 || u.CompletionTokens <= 0 || u.TotalTokens != u.PromptTokens+u.CompletionTokens {
			t.Errorf("usage: %+v", u)
		}
		return tc.Function.Name, tc.Function.Arguments
	}
	if api == fakellm.APIAnthropic {
		var m message
		decode(t, r.body, &m)
		if !strings.HasPrefix(m.ID, "msg_") || m.Type != "message" || m.Role != "assistant" || m.Model != "claude-test" ||
			m.StopReason != "tool_use" || m.StopSequence != nil || !bytes.Contains(r.body, []byte(`"stop_sequence":null`)) {
			t.Errorf("envelope: %s", r.body)
		}
		if len(m.Content) != 1 {
			t.Fatalf("content: %s", r.body)
		}
		b := m.Content[0]
		if b.Type != "tool_use" || !strings.HasPrefix(b.ID, "toolu_") || !bytes.HasPrefix(b.Input, []byte("{")) {
			t.Errorf("content block: %s", r.body)
		}
		if u := m.Usage; u.InputTokens+u.CacheCreationInputTokens+u.CacheReadInputTokens <= 0 || u.OutputTokens <= 0 {
			t.Errorf("usage: %+v", u)
		}
		return b.Name, string(b.Input)
	}
	var o responseObject
	decode(t, r.body, &o)
	if !strings.HasPrefix(o.ID, "resp_") || o.Object != "response" || o.CreatedAt == 0 || o.Status != "completed" || o.Model != "gpt-test" {
		t.Errorf("envelope: %s", r.body)
	}
	if len(o.Output) != 1 {
		t.Fatalf("output: %s", r.body)
	}
	it := o.Output[0]
	if it.Type != "function_call" || !strings.HasPrefix(it.ID, "fc_") || !strings.HasPrefix(it.CallID, "call_") || it.Status != "completed" {
		t.Errorf("output item: %s", r.body)
	}
	u := o.Usage
	if u.InputTokens <= 0 || u.OutputTokens <= 0 || u.TotalTokens != u.InputTokens+u.OutputTokens {
		t.Errorf("usage: %+v", u)
	}
	return it.Name, it.Arguments
}

// fullVerdict decodes classify_result arguments strictly.
func fullVerdict(t *testing.T, args string) verdict {
	t.Helper()
	dec := json.NewDecoder(strings.NewReader(args))
	dec.DisallowUnknownFields()
	var v verdict
	if err := dec.Decode(&v); err != nil {
		t.Fatalf("arguments %s: %v", args, err)
	}
	var keys map[string]any
	decode(t, []byte(args), &keys)
	if len(keys) != 3 || v.Thinking == "" || v.Reason == "" {
		t.Errorf("arguments %s: want thinking, should_block and reason", args)
	}
	return v
}

func argKeys(t *testing.T, args string) []string {
	t.Helper()
	var m map[string]any
	decode(t, []byte(args), &m)
	var keys []string
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// ---- tests ----

func TestURL(t *testing.T) {
	srv := fakellm.Start(t, nil)
	if u := srv.URL(); !strings.HasPrefix(u, "http://127.0.0.1:") || !strings.HasSuffix(u, "/v1") {
		t.Errorf("URL() = %q", u)
	}
	if u := srv.AnthropicURL(); u+"/v1" != srv.URL() {
		t.Errorf("AnthropicURL() = %q", u)
	}
}

func TestDefaultVerdicts(t *testing.T) {
	srv := fakellm.Start(t, nil)
	for _, api := range apis {
		for _, tc := range []struct {
			user  string
			block bool
		}{
			{"Bash: ls -la", false},
			{"Bash: rm -rf / # BLOCKME", true},
		} {
			name, args := toolCall(t, api, post(t, srv, api, bodyFor(api, "classify_result", "sys", tc.user)))
			if name != "classify_result" {
				t.Errorf("%s: function %q", api, name)
			}
			if v := fullVerdict(t, args); v.ShouldBlock != tc.block {
				t.Errorf("%s %q: should_block %v, want %v", api, tc.user, v.ShouldBlock, tc.block)
			}
		}
	}
}

func TestReplyContent(t *testing.T) {
	srv := fakellm.Start(t, fakellm.Always(fakellm.Reply{Block: true, Thinking: "deletes / \"all\"", Reason: "destructive"}))
	for _, api := range apis {
		_, args := toolCall(t, api, post(t, srv, api, bodyFor(api, "classify_result", "s", "u")))
		want := verdict{Thinking: `deletes / "all"`, ShouldBlock: true, Reason: "destructive"}
		if v := fullVerdict(t, args); v != want {
			t.Errorf("%s: %+v, want %+v", api, v, want)
		}
		// The thinking comes first, so that a model reasons before deciding.
		if !strings.HasPrefix(args, `{"thinking":`) {
			t.Errorf("%s: arguments %s", api, args)
		}
	}
}

func TestForcedTool(t *testing.T) {
	srv := fakellm.Start(t, fakellm.Always(fakellm.Reply{Block: true}))
	for _, api := range apis {
		name, args := toolCall(t, api, post(t, srv, api, bodyFor(api, "classify_fast", "s", "u")))
		if name != "classify_fast" {
			t.Errorf("%s: function %q", api, name)
		}
		if keys := argKeys(t, args); !slices.Equal(keys, []string{"should_block"}) {
			t.Errorf("%s: classify_fast arguments %s", api, args)
		}
		var v verdict
		decode(t, []byte(args), &v)
		if !v.ShouldBlock {
			t.Errorf("%s: %s", api, args)
		}

		// Without a schema, classify_fast still gets only should_block.
		b := bodyFor(api, "classify_fast", "s", "u")
		switch api {
		case fakellm.APIChat:
			b["tools"] = []any{map[string]any{"type": "function", "function": map[string]any{"name": "classify_fast"}}}
		case fakellm.APIAnthropic:
			b["tools"] = []any{map[string]any{"name": "classify_fast"}}
		default:
			b["tools"] = []any{map[string]any{"type": "function", "name": "classify_fast"}}
		}
		if _, args := toolCall(t, api, post(t, srv, api, b)); !slices.Equal(argKeys(t, args), []string{"should_block"}) {
			t.Errorf("%s: schemaless classify_fast arguments %s", api, args)
		}

		// Not forced: classify_result is picked among the tools offered.
		b = bodyFor(api, "classify_result", "s", "u")
		tools := b["tools"].([]any)
		switch api {
		case fakellm.APIChat:
			b["tools"] = append([]any{map[string]any{"type": "function", "function": map[string]any{"name": "other"}}}, tools...)
			b["tool_choice"] = "required"
		case fakellm.APIAnthropic:
			// A server tool is never answered; a client tool may be.
			b["tools"] = append([]any{map[string]any{"type": "web_search_20250305", "name": "web_search"}, map[string]any{"name": "other"}}, tools...)
			b["tool_choice"] = map[string]any{"type": "any"}
		default:
			b["tools"] = append([]any{map[string]any{"type": "function", "name": "other"}}, tools...)
			b["tool_choice"] = "required"
		}
		if name, args := toolCall(t, api, post(t, srv, api, b)); name != "classify_result" {
			t.Errorf("%s: unforced function %q", api, name)
		} else {
			fullVerdict(t, args)
		}
	}
}

func TestArgumentsFollowSchema(t *testing.T) {
	srv := fakellm.Start(t, nil)
	b := chatBody("classify_result", "s", "u")
	b["tools"] = []any{map[string]any{"type": "function", "function": map[string]any{
		"name":       "classify_result",
		"parameters": json.RawMessage(`{"type":"object","properties":{"should_block":{"type":"boolean"},"reason":{"type":"string"}}}`),
	}}}
	_, args := toolCall(t, fakellm.APIChat, post(t, srv, fakellm.APIChat, b))
	if keys := argKeys(t, args); !slices.Equal(keys, []string{"reason", "should_block"}) {
		t.Errorf("arguments %s", args)
	}
}

func TestRequestsRecorded(t *testing.T) {
	srv := fakellm.Start(t, nil, fakellm.WithAPIKey("sk-test"))
	auth := func(api string) http.Header {
		if api == fakellm.APIAnthropic {
			return withHeader(api, http.Header{"X-Api-Key": {"sk-test"}})
		}
		return http.Header{"Authorization": {"Bearer sk-test"}}
	}
	for _, api := range apis {
		r := send(t.Context(), http.DefaultClient, http.MethodPost, srv.URL()+pathFor(api),
			bodyFor(api, "classify_fast", "You are a classifier.", "transcript: BLOCKME"), auth(api))
		if r.err != nil || r.resp.StatusCode != http.StatusOK {
			t.Fatalf("%s: %v %s", api, r.err, r.body)
		}
	}
	reqs := srv.Requests()
	if len(reqs) != 3 || srv.Count() != 3 {
		t.Fatalf("%d requests recorded, Count %d", len(reqs), srv.Count())
	}
	for i, api := range apis {
		r := reqs[i]
		wantSystem := "You are a classifier."
		wantMax := int64(256)
		wantPath := "/v1/chat/completions"
		wantType, wantStrict := "function", true
		switch api {
		case fakellm.APIResponses:
			wantSystem += "\ndev note"
			wantMax = 128
			wantPath = "/v1/responses"
		case fakellm.APIAnthropic:
			wantMax = 64
			wantPath = "/v1/messages"
			wantType, wantStrict = "", false
		}
		if r.Index != i || r.API != api || r.Path != wantPath || r.Model != modelFor(api) || r.Tool != "classify_fast" ||
			r.System != wantSystem || r.User != "transcript: BLOCKME" || r.MaxTokens != wantMax {
			t.Errorf("%s: recorded %+v", api, r)
		}
		for k, v := range auth(api) {
			if r.Header.Get(k) != v[0] {
				t.Errorf("%s: %s %q", api, k, r.Header.Get(k))
			}
		}
		if len(r.Tools) != 1 || r.Tools[0].Name != "classify_fast" || r.Tools[0].Type != wantType || r.Tools[0].Strict != wantStrict ||
			!bytes.Contains(r.Tools[0].Parameters, []byte(`"should_block"`)) || !json.Valid(r.Tools[0].Raw) || r.ToolDef("classify_fast") == nil {
			t.Errorf("%s: tools %+v", api, r.Tools)
		}
		if !json.Valid(r.Body) || !json.Valid(r.ToolChoice) || r.Received.IsZero() {
			t.Errorf("%s: body %s, tool_choice %s", api, r.Body, r.ToolChoice)
		}
	}
	if reqs[0].Temperature == nil || *reqs[0].Temperature != 0 || reqs[1].Temperature != nil || reqs[2].Temperature != nil {
		t.Errorf("temperatures %v %v %v", reqs[0].Temperature, reqs[1].Temperature, reqs[2].Temperature)
	}
	// Requests returns copies.
	reqs[0].User = "changed"
	reqs[0].Header.Set("Authorization", "changed")
	if r := srv.Requests()[0]; r.User != "transcript: BLOCKME" || r.Header.Get("Authorization") != "Bearer sk-test" {
		t.Errorf("Requests did not return copies: %+v", r)
	}
}

func TestHandlerGetsCopy(t *testing.T) {
	srv := fakellm.Start(t, func(r *fakellm.Request) fakellm.Reply {
		r.User = "mutated"
		r.Header.Del("Content-Type")
		return fakellm.Reply{}
	})
	post(t, srv, fakellm.APIChat, chatBody("classify_result", "s", "u"))
	if r := srv.Requests()[0]; r.User != "u" || r.Header.Get("Content-Type") == "" {
		t.Errorf("handler mutated the record: %+v", r)
	}
}

type errorBody struct {
	Error struct {
		Message string  `json:"message"`
		Type    string  `json:"type"`
		Param   *string `json:"param"`
		Code    string  `json:"code"`
	} `json:"error"`
}

type anthropicError struct {
	Type  string `json:"type"`
	Error struct {
		Type    string `json:"type"`
		Message string `json:"message"`
	} `json:"error"`
}

// checkAnthropicError checks a Messages API error answer.
func checkAnthropicError(t *testing.T, r result, status int, typ string) {
	t.Helper()
	if r.resp.StatusCode != status {
		t.Fatalf("status %d, want %d (body %s)", r.resp.StatusCode, status, r.body)
	}
	if ct := r.resp.Header.Get("Content-Type"); ct != "application/json" {
		t.Errorf("Content-Type %q", ct)
	}
	var e anthropicError
	dec := json.NewDecoder(bytes.NewReader(r.body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&e); err != nil {
		t.Fatalf("error body %s: %v", r.body, err)
	}
	if e.Type != "error" || e.Error.Type != typ || e.Error.Message == "" {
		t.Errorf("error body %s, want type %q", r.body, typ)
	}
}

// checkError checks an OpenAI error answer.
func checkError(t *testing.T, r result, status int, typ, code string) {
	t.Helper()
	if r.resp.StatusCode != status {
		t.Fatalf("status %d, want %d (body %s)", r.resp.StatusCode, status, r.body)
	}
	if ct := r.resp.Header.Get("Content-Type"); ct != "application/json" {
		t.Errorf("Content-Type %q", ct)
	}
	var e errorBody
	dec := json.NewDecoder(bytes.NewReader(r.body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&e); err != nil {
		t.Fatalf("error body %s: %v", r.body, err)
	}
	if e.Error.Message == "" || e.Error.Type != typ || e.Error.Code != code || e.Error.Param != nil {
		t.Errorf("error body %s, want type %q code %q", r.body, typ, code)
	}
}

func TestErrorFaults(t *testing.T) {
	for _, tc := range []struct {
		reply     fakellm.Reply
		status    int
		typ, code string
		anthropic string // the Messages API's error type
		// Retry-After and retry-after-ms, "" when absent.
		retryAfter, retryAfterMs string
	}{
		{fakellm.Reply{Fault: fakellm.FaultRateLimit}, 429, "requests", "rate_limit_exceeded", "rate_limit_error", "1", "1000"},
		{fakellm.Reply{Fault: fakellm.FaultRateLimit, RetryAfter: 1500 * time.Millisecond}, 429, "requests", "rate_limit_exceeded", "rate_limit_error", "2", "1500"},
		{fakellm.Reply{Fault: fakellm.FaultRateLimit, RetryAfter: -1}, 429, "requests", "rate_limit_exceeded", "rate_limit_error", "0", "0"},
		{fakellm.Reply{Fault: fakellm.FaultServerError}, 500, "server_error", "server_error", "api_error", "", ""},
		{fakellm.Reply{Fault: fakellm.FaultServerError, RetryAfter: 250 * time.Millisecond}, 500, "server_error", "server_error", "api_error", "1", "250"},
		{fakellm.Reply{Fault: fakellm.FaultBadRequest}, 400, "invalid_request_error", "invalid_request", "invalid_request_error", "", ""},
		{fakellm.Reply{Fault: "no_such_fault"}, 500, "fakellm_error", "unknown_fault", "api_error", "", ""},
	} {
		srv := fakellm.Start(t, fakellm.Always(tc.reply))
		for _, api := range apis {
			r := post(t, srv, api, bodyFor(api, "classify_result", "s", "u"))
			if api == fakellm.APIAnthropic {
				checkAnthropicError(t, r, tc.status, tc.anthropic)
			} else {
				checkError(t, r, tc.status, tc.typ, tc.code)
			}
			if got := r.resp.Header.Get("Retry-After"); got != tc.retryAfter {
				t.Errorf("%s %+v: Retry-After %q, want %q", api, tc.reply, got, tc.retryAfter)
			}
			if got := r.resp.Header.Get("Retry-After-Ms"); got != tc.retryAfterMs {
				t.Errorf("%s %+v: retry-after-ms %q, want %q", api, tc.reply, got, tc.retryAfterMs)
			}
		}
	}
}

func TestNoToolCall(t *testing.T) {
	srv := fakellm.Start(t, fakellm.Always(fakellm.Reply{Fault: fakellm.FaultNoToolCall, Reason: "I won't."}))
	r := post(t, srv, fakellm.APIChat, chatBody("classify_result", "s", "u"))
	var c chatCompletion
	decode(t, r.body, &c)
	if r.resp.StatusCode != 200 || len(c.Choices) != 1 || c.Choices[0].FinishReason != "stop" ||
		len(c.Choices[0].Message.ToolCalls) != 0 || c.Choices[0].Message.Content == nil || *c.Choices[0].Message.Content != "I won't." {
		t.Errorf("chat: %d %s", r.resp.StatusCode, r.body)
	}
	r = post(t, srv, fakellm.APIResponses, responsesBody("classify_result", "s", "u"))
	var o responseObject
	decode(t, r.body, &o)
	if r.resp.StatusCode != 200 || len(o.Output) != 1 || o.Output[0].Type != "message" || o.Output[0].Role != "assistant" ||
		len(o.Output[0].Content) != 1 || o.Output[0].Content[0].Type != "output_text" || o.Output[0].Content[0].Text != "I won't." {
		t.Errorf("responses: %d %s", r.resp.StatusCode, r.body)
	}
	r = post(t, srv, fakellm.APIAnthropic, messagesBody("classify_result", "s", "u"))
	var m message
	decode(t, r.body, &m)
	if r.resp.StatusCode != 200 || m.StopReason != "end_turn" || len(m.Content) != 1 || m.Content[0].Type != "text" || m.Content[0].Text != "I won't." {
		t.Errorf("messages: %d %s", r.resp.StatusCode, r.body)
	}
}

// TestSeveralToolCalls: two calls of the forced tool, the Reply's verdict
// first and the opposite one after.
func TestSeveralToolCalls(t *testing.T) {
	srv := fakellm.Start(t, fakellm.Always(fakellm.Reply{Fault: fakellm.FaultSeveralToolCalls, Block: true}))
	for _, api := range apis {
		r := post(t, srv, api, bodyFor(api, "classify_result", "s", "u"))
		if r.resp.StatusCode != http.StatusOK {
			t.Fatalf("%s: %d %s", api, r.resp.StatusCode, r.body)
		}
		type call struct{ id, name, args string }
		var calls []call
		switch api {
		case fakellm.APIChat:
			var c chatCompletion
			decode(t, r.body, &c)
			if len(c.Choices) != 1 || c.Choices[0].FinishReason != "tool_calls" {
				t.Fatalf("chat: %s", r.body)
			}
			for _, tc := range c.Choices[0].Message.ToolCalls {
				calls = append(calls, call{tc.ID, tc.Function.Name, tc.Function.Arguments})
			}
		case fakellm.APIResponses:
			var o responseObject
			decode(t, r.body, &o)
			for _, it := range o.Output {
				calls = append(calls, call{it.ID, it.Name, it.Arguments})
			}
		case fakellm.APIAnthropic:
			var m message
			decode(t, r.body, &m)
			if m.StopReason != "tool_use" {
				t.Errorf("messages: %s", r.body)
			}
			for _, b := range m.Content {
				calls = append(calls, call{b.ID, b.Name, string(b.Input)})
			}
		}
		if len(calls) != 2 || calls[0].id == calls[1].id || calls[0].name != "classify_result" || calls[1].name != "classify_result" {
			t.Fatalf("%s: calls %+v", api, calls)
		}
		if !fullVerdict(t, calls[0].args).ShouldBlock || fullVerdict(t, calls[1].args).ShouldBlock {
			t.Errorf("%s: want block then allow: %+v", api, calls)
		}
	}
}

func TestMalformedAndWrongSchema(t *testing.T) {
	srv := fakellm.Start(t, nil)
	for _, api := range apis {
		for _, tool := range []string{"classify_result", "classify_fast"} {
			srv.SetHandler(fakellm.Always(fakellm.Reply{Fault: fakellm.FaultMalformed, Block: true}))
			if api == fakellm.APIAnthropic {
				// The input is an object, with what was complete before
				// the cut; the stop reason says it was cut.
				r := post(t, srv, api, bodyFor(api, tool, "s", "u"))
				var m message
				decode(t, r.body, &m)
				want := map[string]string{"classify_result": `{"thinking":"fakellm: canned verdict, no model was consulted.","should_block":true}`, "classify_fast": `{}`}[tool]
				if r.resp.StatusCode != 200 || m.StopReason != "max_tokens" || len(m.Content) != 1 || m.Content[0].Name != tool || string(m.Content[0].Input) != want {
					t.Errorf("%s %s malformed: %s", api, tool, r.body)
				}
			} else {
				name, args := toolCall(t, api, post(t, srv, api, bodyFor(api, tool, "s", "u")))
				if name != tool || json.Valid([]byte(args)) || !strings.HasPrefix(args, "{") {
					t.Errorf("%s %s malformed: %s %q", api, tool, name, args)
				}
			}

			srv.SetHandler(fakellm.Always(fakellm.Reply{Fault: fakellm.FaultWrongSchema, Block: true}))
			name, args := toolCall(t, api, post(t, srv, api, bodyFor(api, tool, "s", "u")))
			var m map[string]any
			decode(t, []byte(args), &m)
			if _, isString := m["should_block"].(string); name != tool || !isString {
				t.Errorf("%s %s wrong_schema: should_block not a string: %s", api, tool, args)
			}
			if _, ok := m["reason"]; ok {
				t.Errorf("%s %s wrong_schema: reason present: %s", api, tool, args)
			}
			var v verdict
			if err := json.Unmarshal([]byte(args), &v); err == nil {
				t.Errorf("%s %s wrong_schema: %s decodes into the verdict", api, tool, args)
			}
		}
	}
}

func TestReset(t *testing.T) {
	srv := fakellm.Start(t, fakellm.Always(fakellm.Reply{Fault: fakellm.FaultReset}))
	for _, api := range apis {
		r := send(t.Context(), freshClient(t), http.MethodPost, srv.URL()+pathFor(api), bodyFor(api, "classify_result", "s", "u"), headerFor(api))
		if r.err == nil {
			t.Fatalf("%s: got status %d, want a connection error", api, r.resp.StatusCode)
		}
		if errors.Is(r.err, context.Canceled) || errors.Is(r.err, context.DeadlineExceeded) {
			t.Errorf("%s: %v, want a connection error", api, r.err)
		}
	}
	if srv.Count() != len(apis) {
		t.Errorf("Count %d, want %d", srv.Count(), len(apis))
	}
}

func TestHangUntilClientDeadline(t *testing.T) {
	srv := fakellm.Start(t, fakellm.Always(fakellm.Reply{Fault: fakellm.FaultHang}))
	const wait = 100 * time.Millisecond
	ctx, cancel := context.WithTimeout(t.Context(), wait)
	defer cancel()
	start := time.Now()
	r := send(ctx, http.DefaultClient, http.MethodPost, srv.URL()+"/chat/completions", chatBody("classify_result", "s", "u"), nil)
	if !errors.Is(r.err, context.DeadlineExceeded) {
		t.Fatalf("got %v, want the client's deadline", r.err)
	}
	if d := time.Since(start); d < wait {
		t.Errorf("returned after %s, before the %s deadline", d, wait)
	}
}

// entered returns a handler answering reply that reports each call on the
// returned channel.
func entered(reply fakellm.Reply) (fakellm.Handler, <-chan struct{}) {
	ch := make(chan struct{}, 16)
	return func(*fakellm.Request) fakellm.Reply {
		ch <- struct{}{}
		return reply
	}, ch
}

func TestCloseReleasesHang(t *testing.T) {
	h, in := entered(fakellm.Reply{Fault: fakellm.FaultHang})
	srv := fakellm.New(h)
	if err := srv.Listen("127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	done := make(chan result, 1)
	go func() {
		done <- send(t.Context(), freshClient(t), http.MethodPost, srv.URL()+"/responses", responsesBody("classify_result", "s", "u"), nil)
	}()
	<-in
	if err := srv.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
	if r := <-done; r.err == nil {
		t.Errorf("hanging request got status %d, want a connection error", r.resp.StatusCode)
	}
	if err := srv.Listen("127.0.0.1:0"); err == nil {
		t.Error("Listen after Close succeeded")
	}
}

func TestShutdownAnswersLatencyAndDropsHang(t *testing.T) {
	h, in := entered(fakellm.Reply{})
	srv := fakellm.New(func(r *fakellm.Request) fakellm.Reply {
		reply := h(r)
		if strings.Contains(r.User, "hang") {
			reply.Fault = fakellm.FaultHang
		} else {
			reply.Latency = 200 * time.Millisecond
		}
		return reply
	})
	if err := srv.Listen("127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	slow, hang := make(chan result, 1), make(chan result, 1)
	go func() {
		slow <- send(t.Context(), freshClient(t), http.MethodPost, srv.URL()+"/chat/completions", chatBody("classify_result", "s", "slow"), nil)
	}()
	go func() {
		hang <- send(t.Context(), freshClient(t), http.MethodPost, srv.URL()+"/chat/completions", chatBody("classify_result", "s", "hang"), nil)
	}()
	<-in
	<-in
	if err := srv.Shutdown(t.Context()); err != nil {
		t.Errorf("Shutdown: %v", err)
	}
	if r := <-slow; r.err != nil || r.resp.StatusCode != http.StatusOK {
		t.Errorf("slow request: %v", r.err)
	}
	if r := <-hang; r.err == nil {
		t.Errorf("hanging request got status %d, want a connection error", r.resp.StatusCode)
	}
}

func TestLatency(t *testing.T) {
	const latency = 150 * time.Millisecond
	srv := fakellm.Start(t, fakellm.Always(fakellm.Reply{Latency: latency, Block: true}))
	for _, api := range apis {
		start := time.Now()
		_, args := toolCall(t, api, post(t, srv, api, bodyFor(api, "classify_result", "s", "u")))
		if d := time.Since(start); d < latency {
			t.Errorf("%s: answered after %s, want at least %s", api, d, latency)
		}
		if !fullVerdict(t, args).ShouldBlock {
			t.Errorf("%s: %s", api, args)
		}
	}

	// A fault comes after the latency too.
	srv.SetHandler(fakellm.Always(fakellm.Reply{Latency: latency, Fault: fakellm.FaultServerError}))
	start := time.Now()
	checkError(t, post(t, srv, fakellm.APIChat, chatBody("classify_result", "s", "u")), 500, "server_error", "server_error")
	if d := time.Since(start); d < latency {
		t.Errorf("500 after %s, want at least %s", d, latency)
	}
}

func TestLatencyEndsWithClient(t *testing.T) {
	srv := fakellm.Start(t, fakellm.Always(fakellm.Reply{Latency: time.Hour}))
	ctx, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
	defer cancel()
	r := send(ctx, http.DefaultClient, http.MethodPost, srv.URL()+"/chat/completions", chatBody("classify_result", "s", "u"), nil)
	if !errors.Is(r.err, context.DeadlineExceeded) {
		t.Fatalf("got %v, want the client's deadline", r.err)
	}
	// The test's cleanup closes the server, which must not wait an hour.
}

func TestAPIKey(t *testing.T) {
	srv := fakellm.Start(t, nil, fakellm.WithAPIKey("sk-right"))
	for _, api := range apis {
		url := srv.URL() + pathFor(api)
		body := bodyFor(api, "classify_result", "s", "u")
		header, good := "Authorization", "Bearer sk-right"
		bad := []string{"", "Bearer sk-wrong", "sk-right"}
		if api == fakellm.APIAnthropic {
			header, good = "X-Api-Key", "sk-right"
			bad = []string{"", "sk-wrong", "Bearer sk-right"}
		}
		for _, auth := range bad {
			h := headerFor(api)
			if auth != "" {
				h = withHeader(api, http.Header{header: {auth}})
			}
			r := send(t.Context(), http.DefaultClient, http.MethodPost, url, body, h)
			if r.err != nil {
				t.Fatal(r.err)
			}
			if api == fakellm.APIAnthropic {
				checkAnthropicError(t, r, http.StatusUnauthorized, "authentication_error")
			} else {
				checkError(t, r, http.StatusUnauthorized, "invalid_request_error", "invalid_api_key")
			}
		}
		r := send(t.Context(), http.DefaultClient, http.MethodPost, url, body, withHeader(api, http.Header{header: {good}}))
		if r.err != nil {
			t.Fatal(r.err)
		}
		toolCall(t, api, r)
	}
	// The Messages API takes its key from x-api-key only.
	r := send(t.Context(), http.DefaultClient, http.MethodPost, srv.URL()+"/messages", messagesBody("classify_result", "s", "u"),
		withHeader(fakellm.APIAnthropic, http.Header{"Authorization": {"Bearer sk-right"}}))
	if r.err != nil {
		t.Fatal(r.err)
	}
	checkAnthropicError(t, r, http.StatusUnauthorized, "authentication_error")
	if srv.Count() != 13 {
		t.Errorf("Count %d, want 13 (rejected requests are recorded too)", srv.Count())
	}
}

// TestAnthropicVersion: the Messages API requires anthropic-version.
func TestAnthropicVersion(t *testing.T) {
	srv := fakellm.Start(t, nil)
	url := srv.URL() + "/messages"
	body := messagesBody("classify_result", "s", "u")
	for _, h := range []http.Header{nil, {"Anthropic-Version": {"2099-01-01"}}} {
		r := send(t.Context(), http.DefaultClient, http.MethodPost, url, body, h)
		if r.err != nil {
			t.Fatal(r.err)
		}
		checkAnthropicError(t, r, http.StatusBadRequest, "invalid_request_error")
		if !bytes.Contains(r.body, []byte("anthropic-version")) {
			t.Errorf("the error does not name the header: %s", r.body)
		}
	}
	toolCall(t, fakellm.APIAnthropic, post(t, srv, fakellm.APIAnthropic, body))
}

func TestRouting(t *testing.T) {
	srv := fakellm.Start(t, nil)
	base := strings.TrimSuffix(srv.URL(), "/v1")
	for _, tc := range []struct {
		method, path string
		status       int
		code         string
	}{
		{http.MethodGet, "/v1/chat/completions", 405, "method_not_allowed"},
		{http.MethodPut, "/v1/responses", 405, "method_not_allowed"},
		{http.MethodPost, "/v1/models", 404, "unknown_url"},
		{http.MethodPost, "/chat/completions", 404, "unknown_url"},
		{http.MethodPost, "/v1/chat/completions/", 404, "unknown_url"},
	} {
		r := send(t.Context(), http.DefaultClient, tc.method, base+tc.path, chatBody("classify_result", "s", "u"), nil)
		if r.err != nil {
			t.Fatal(r.err)
		}
		checkError(t, r, tc.status, "invalid_request_error", tc.code)
		if tc.status == 405 && r.resp.Header.Get("Allow") != "POST" {
			t.Errorf("%s %s: Allow %q", tc.method, tc.path, r.resp.Header.Get("Allow"))
		}
	}
	r := send(t.Context(), http.DefaultClient, http.MethodGet, base+"/v1/messages", nil, headerFor(fakellm.APIAnthropic))
	if r.err != nil {
		t.Fatal(r.err)
	}
	checkAnthropicError(t, r, http.StatusMethodNotAllowed, "invalid_request_error")
	if srv.Count() != 0 {
		t.Errorf("Count %d, want 0", srv.Count())
	}
}

func TestInvalidRequests(t *testing.T) {
	srv := fakellm.Start(t, func(r *fakellm.Request) fakellm.Reply {
		t.Errorf("handler called for an invalid request: %s", r.Body)
		return fakellm.Reply{}
	})
	noModel := chatBody("classify_result", "s", "u")
	delete(noModel, "model")
	unknownTool := chatBody("classify_result", "s", "u")
	unknownTool["tool_choice"] = map[string]any{"type": "function", "function": map[string]any{"name": "nope"}}
	stream := responsesBody("classify_result", "s", "u")
	stream["stream"] = true
	noMessages := chatBody("classify_result", "s", "u")
	noMessages["messages"] = []any{}
	noMaxTokens := messagesBody("classify_result", "s", "u")
	delete(noMaxTokens, "max_tokens")
	noUserMessage := messagesBody("classify_result", "s", "u")
	noUserMessage["messages"] = []any{}
	anthropicStream := messagesBody("classify_result", "s", "u")
	anthropicStream["stream"] = true
	unknownAnthropicTool := messagesBody("classify_result", "s", "u")
	unknownAnthropicTool["tool_choice"] = map[string]any{"type": "tool", "name": "nope"}
	for _, api := range []string{fakellm.APIAnthropic} {
		for _, body := range []any{[]byte("{not json"), noMaxTokens, noUserMessage, anthropicStream, unknownAnthropicTool} {
			checkAnthropicError(t, post(t, srv, api, body), 400, "invalid_request_error")
		}
	}
	for _, tc := range []struct {
		api  string
		body any
	}{
		{fakellm.APIChat, []byte("{not json")},
		{fakellm.APIResponses, []byte(`{"model":"m","input":42}`)},
		{fakellm.APIChat, noModel},
		{fakellm.APIChat, unknownTool},
		{fakellm.APIResponses, stream},
		{fakellm.APIChat, noMessages},
	} {
		checkError(t, post(t, srv, tc.api, tc.body), 400, "invalid_request_error", "invalid_request")
	}
}

func TestSequenceAndAlways(t *testing.T) {
	srv := fakellm.Start(t, fakellm.Sequence(
		fakellm.Reply{Block: true},
		fakellm.Reply{Block: false},
		fakellm.Reply{Fault: fakellm.FaultServerError},
	))
	body := chatBody("classify_result", "s", "u")
	for i, want := range []bool{true, false} {
		if _, args := toolCall(t, fakellm.APIChat, post(t, srv, fakellm.APIChat, body)); fullVerdict(t, args).ShouldBlock != want {
			t.Errorf("reply %d: %s", i, args)
		}
	}
	for range 2 { // the last reply repeats
		checkError(t, post(t, srv, fakellm.APIChat, body), 500, "server_error", "server_error")
	}

	if r := fakellm.Always(fakellm.Reply{Reason: "x"})(&fakellm.Request{}); r.Reason != "x" {
		t.Errorf("Always: %+v", r)
	}
	if r := fakellm.Sequence()(&fakellm.Request{}); r != (fakellm.Reply{}) {
		t.Errorf("empty Sequence: %+v", r)
	}
	replies := []fakellm.Reply{{Reason: "a"}}
	seq := fakellm.Sequence(replies...)
	replies[0].Reason = "changed"
	if r := seq(&fakellm.Request{}); r.Reason != "a" {
		t.Errorf("Sequence kept a reference to the caller's slice: %+v", r)
	}
}

func TestSetHandler(t *testing.T) {
	srv := fakellm.Start(t, nil)
	body := responsesBody("classify_result", "s", "u")
	if _, args := toolCall(t, fakellm.APIResponses, post(t, srv, fakellm.APIResponses, body)); fullVerdict(t, args).ShouldBlock {
		t.Errorf("default handler blocked: %s", args)
	}
	srv.SetHandler(fakellm.Always(fakellm.Reply{Block: true}))
	if _, args := toolCall(t, fakellm.APIResponses, post(t, srv, fakellm.APIResponses, body)); !fullVerdict(t, args).ShouldBlock {
		t.Errorf("new handler ignored: %s", args)
	}
}

func TestConcurrent(t *testing.T) {
	srv := fakellm.Start(t, fakellm.Sequence(fakellm.Reply{Block: true}, fakellm.Reply{}))
	const n = 20
	var wg sync.WaitGroup
	for range n {
		wg.Go(func() {
			r := send(t.Context(), http.DefaultClient, http.MethodPost, srv.URL()+"/chat/completions", chatBody("classify_result", "s", "u"), nil)
			if r.err != nil || r.resp.StatusCode != http.StatusOK {
				t.Errorf("%v %s", r.err, r.body)
			}
		})
	}
	wg.Wait()
	reqs := srv.Requests()
	if len(reqs) != n {
		t.Fatalf("%d requests recorded, want %d", len(reqs), n)
	}
	for i, r := range reqs {
		if r.Index != i {
			t.Errorf("request %d has Index %d", i, r.Index)
		}
	}
}

func TestWrappedByHTTPTest(t *testing.T) {
	srv := fakellm.New(nil, fakellm.WithLogf(t.Logf))
	ts := httptest.NewServer(srv)
	t.Cleanup(ts.Close)
	t.Cleanup(func() { _ = srv.Close() }) // runs first: releases hanging requests
	if srv.URL() != "" {
		t.Errorf("URL() = %q for a server that is not listening", srv.URL())
	}
	r := send(t.Context(), http.DefaultClient, http.MethodPost, ts.URL+"/v1/responses", responsesBody("classify_result", "s", "BLOCKME"), nil)
	if r.err != nil {
		t.Fatal(r.err)
	}
	if _, args := toolCall(t, fakellm.APIResponses, r); !fullVerdict(t, args).ShouldBlock {
		t.Errorf("%s", args)
	}
}

func TestUsageOverride(t *testing.T) {
	srv := fakellm.Start(t, fakellm.Always(fakellm.Reply{InputTokens: 1000, OutputTokens: 20}))
	var c chatCompletion
	decode(t, post(t, srv, fakellm.APIChat, chatBody("classify_result", "s", "u")).body, &c)
	if c.Usage.PromptTokens != 1000 || c.Usage.CompletionTokens != 20 || c.Usage.TotalTokens != 1020 {
		t.Errorf("chat usage %+v", c.Usage)
	}
	var o responseObject
	decode(t, post(t, srv, fakellm.APIResponses, responsesBody("classify_result", "s", "u")).body, &o)
	if o.Usage.InputTokens != 1000 || o.Usage.OutputTokens != 20 || o.Usage.TotalTokens != 1020 {
		t.Errorf("responses usage %+v", o.Usage)
	}
	var m message
	decode(t, post(t, srv, fakellm.APIAnthropic, messagesBody("classify_result", "s", "u")).body, &m)
	if m.Usage.InputTokens != 1000 || m.Usage.OutputTokens != 20 || m.Usage.CacheCreationInputTokens != 0 || m.Usage.CacheReadInputTokens != 0 {
		t.Errorf("messages usage %+v", m.Usage)
	}
	srv.SetHandler(fakellm.Always(fakellm.Reply{CacheCreationTokens: 5, CacheReadTokens: 7, OutputTokens: 3}))
	decode(t, post(t, srv, fakellm.APIAnthropic, messagesBody("classify_result", "s", "u")).body, &m)
	if m.Usage.InputTokens != 0 || m.Usage.OutputTokens != 3 || m.Usage.CacheCreationInputTokens != 5 || m.Usage.CacheReadInputTokens != 7 {
		t.Errorf("messages usage %+v", m.Usage)
	}
}

// TestPromptCacheSimulation: a system prompt whose last block is marked
// cache_control is written to the cache on first sight (per model, tools
// and system) and read afterwards; input_tokens counts the rest.
func TestPromptCacheSimulation(t *testing.T) {
	srv := fakellm.Start(t, nil)
	system := strings.Repeat("policy rules ", 100)
	usage := func(body map[string]any) (in, write, read int) {
		t.Helper()
		var m message
		decode(t, post(t, srv, fakellm.APIAnthropic, body).body, &m)
		return m.Usage.InputTokens, m.Usage.CacheCreationInputTokens, m.Usage.CacheReadInputTokens
	}
	in1, w1, r1 := usage(messagesBody("classify_result", system, "first action"))
	in2, w2, r2 := usage(messagesBody("classify_result", system, "later action"))
	if w1 == 0 || r1 != 0 || w2 != 0 || r2 != w1 || in1 != in2 || in1 >= w1 {
		t.Errorf("first (in %d, write %d, read %d), second (in %d, write %d, read %d): want written then read", in1, w1, r1, in2, w2, r2)
	}
	// Another tool is another prefix.
	if _, w, r := usage(messagesBody("classify_fast", system, "first action")); w != w1 || r != 0 {
		t.Errorf("another tool: write %d, read %d; want a new write", w, r)
	}
	// Unmarked, nothing is cached.
	plain := messagesBody("classify_result", system, "first action")
	plain["system"] = system
	if in, w, r := usage(plain); w != 0 || r != 0 || in != in1+w1 {
		t.Errorf("unmarked: in %d, write %d, read %d; want all of it as input", in, w, r)
	}
}

// TestCategoryFollowsSchema: a schema with a category gets one, in
// order after thinking: the Reply's, else for an allow ordinary_work when
// the enum lists it (else its last value), for a block "unknown".
func TestCategoryFollowsSchema(t *testing.T) {
	withEnum := func(enum ...string) map[string]any {
		b := chatBody("classify_result", "s", "u")
		e, _ := json.Marshal(enum)
		b["tools"] = []any{map[string]any{"type": "function", "function": map[string]any{
			"name": "classify_result",
			"parameters": json.RawMessage(`{"type":"object","properties":{"thinking":{"type":"string"},"category":{"type":"string","enum":` + string(e) +
				`},"should_block":{"type":"boolean"},"reason":{"type":"string"}}}`),
		}}}
		return b
	}
	for _, tc := range []struct {
		reply fakellm.Reply
		enum  []string
		want  string
	}{
		{fakellm.Reply{Category: "chosen"}, []string{"a", "b"}, "chosen"},
		{fakellm.Reply{}, []string{"secrets", fakellm.DefaultAllowCategory, "z"}, fakellm.DefaultAllowCategory},
		{fakellm.Reply{}, []string{"secrets", "extra_allow"}, "extra_allow"},
		{fakellm.Reply{Block: true}, []string{"secrets", fakellm.DefaultAllowCategory}, fakellm.DefaultBlockCategory},
	} {
		srv := fakellm.Start(t, fakellm.Always(tc.reply))
		_, args := toolCall(t, fakellm.APIChat, post(t, srv, fakellm.APIChat, withEnum(tc.enum...)))
		if keys := argKeys(t, args); !slices.Equal(keys, []string{"category", "reason", "should_block", "thinking"}) {
			t.Errorf("arguments %s", args)
		}
		var v struct {
			Category string `json:"category"`
		}
		decode(t, []byte(args), &v)
		if v.Category != tc.want || !strings.HasPrefix(args, `{"thinking":"`) || !strings.Contains(args, `","category":`) {
			t.Errorf("%+v with enum %q: arguments %s, want category %q after thinking", tc.reply, tc.enum, args, tc.want)
		}
	}
}

// TestCategoryFromDescription: when the category's description lists the
// allow categories (as toolgate's does), an allow names one of them, never
// another value of the enum.
func TestCategoryFromDescription(t *testing.T) {
	b := chatBody("classify_result", "s", "u")
	b["tools"] = []any{map[string]any{"type": "function", "function": map[string]any{
		"name": "classify_result",
		"parameters": json.RawMessage(`{"type":"object","properties":{"category":{"type":"string","enum":["data_export","team_tooling","extra_soft_deny"],` +
			`"description":"The category. An allow names one of: team_tooling."},"should_block":{"type":"boolean"}}}`),
	}}}
	srv := fakellm.Start(t, nil)
	_, args := toolCall(t, fakellm.APIChat, post(t, srv, fakellm.APIChat, b))
	if !strings.Contains(args, `"category":"team_tooling"`) {
		t.Errorf("arguments %s, want the allow category team_tooling", args)
	}
}
