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

func bodyFor(api, tool, system, user string) map[string]any {
	if api == fakellm.APIChat {
		return chatBody(tool, system, user)
	}
	return responsesBody(tool, system, user)
}

func pathFor(api string) string {
	if api == fakellm.APIChat {
		return "/chat/completions"
	}
	return "/responses"
}

var apis = []string{fakellm.APIChat, fakellm.APIResponses}

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
	r := send(t.Context(), http.DefaultClient, http.MethodPost, srv.URL()+pathFor(api), body, nil)
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
		if api == fakellm.APIChat {
			b["tools"] = []any{map[string]any{"type": "function", "function": map[string]any{"name": "classify_fast"}}}
		} else {
			b["tools"] = []any{map[string]any{"type": "function", "name": "classify_fast"}}
		}
		if _, args := toolCall(t, api, post(t, srv, api, b)); !slices.Equal(argKeys(t, args), []string{"should_block"}) {
			t.Errorf("%s: schemaless classify_fast arguments %s", api, args)
		}

		// Not forced: classify_result is picked among the tools offered.
		b = bodyFor(api, "classify_result", "s", "u")
		tools := b["tools"].([]any)
		if api == fakellm.APIChat {
			b["tools"] = append([]any{map[string]any{"type": "function", "function": map[string]any{"name": "other"}}}, tools...)
		} else {
			b["tools"] = append([]any{map[string]any{"type": "function", "name": "other"}}, tools...)
		}
		b["tool_choice"] = "required"
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
	auth := http.Header{"Authorization": {"Bearer sk-test"}}
	for _, api := range apis {
		r := send(t.Context(), http.DefaultClient, http.MethodPost, srv.URL()+pathFor(api),
			bodyFor(api, "classify_fast", "You are a classifier.", "transcript: BLOCKME"), auth)
		if r.err != nil || r.resp.StatusCode != http.StatusOK {
			t.Fatalf("%s: %v %s", api, r.err, r.body)
		}
	}
	reqs := srv.Requests()
	if len(reqs) != 2 || srv.Count() != 2 {
		t.Fatalf("%d requests recorded, Count %d", len(reqs), srv.Count())
	}
	for i, api := range apis {
		r := reqs[i]
		wantSystem := "You are a classifier."
		wantMax := int64(256)
		wantPath := "/v1/chat/completions"
		if api == fakellm.APIResponses {
			wantSystem += "\ndev note"
			wantMax = 128
			wantPath = "/v1/responses"
		}
		if r.Index != i || r.API != api || r.Path != wantPath || r.Model != "gpt-test" || r.Tool != "classify_fast" ||
			r.System != wantSystem || r.User != "transcript: BLOCKME" || r.MaxTokens != wantMax {
			t.Errorf("%s: recorded %+v", api, r)
		}
		if r.Header.Get("Authorization") != "Bearer sk-test" {
			t.Errorf("%s: Authorization %q", api, r.Header.Get("Authorization"))
		}
		if len(r.Tools) != 1 || r.Tools[0].Name != "classify_fast" || r.Tools[0].Type != "function" || !r.Tools[0].Strict ||
			!json.Valid(r.Tools[0].Parameters) || !json.Valid(r.Tools[0].Raw) || r.ToolDef("classify_fast") == nil {
			t.Errorf("%s: tools %+v", api, r.Tools)
		}
		if !json.Valid(r.Body) || !json.Valid(r.ToolChoice) || r.Received.IsZero() {
			t.Errorf("%s: body %s, tool_choice %s", api, r.Body, r.ToolChoice)
		}
	}
	if reqs[0].Temperature == nil || *reqs[0].Temperature != 0 || reqs[1].Temperature != nil {
		t.Errorf("temperatures %v %v", reqs[0].Temperature, reqs[1].Temperature)
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
		// Retry-After and retry-after-ms, "" when absent.
		retryAfter, retryAfterMs string
	}{
		{fakellm.Reply{Fault: fakellm.FaultRateLimit}, 429, "requests", "rate_limit_exceeded", "1", "1000"},
		{fakellm.Reply{Fault: fakellm.FaultRateLimit, RetryAfter: 1500 * time.Millisecond}, 429, "requests", "rate_limit_exceeded", "2", "1500"},
		{fakellm.Reply{Fault: fakellm.FaultRateLimit, RetryAfter: -1}, 429, "requests", "rate_limit_exceeded", "0", "0"},
		{fakellm.Reply{Fault: fakellm.FaultServerError}, 500, "server_error", "server_error", "", ""},
		{fakellm.Reply{Fault: fakellm.FaultServerError, RetryAfter: 250 * time.Millisecond}, 500, "server_error", "server_error", "1", "250"},
		{fakellm.Reply{Fault: fakellm.FaultBadRequest}, 400, "invalid_request_error", "invalid_request", "", ""},
		{fakellm.Reply{Fault: "no_such_fault"}, 500, "fakellm_error", "unknown_fault", "", ""},
	} {
		srv := fakellm.Start(t, fakellm.Always(tc.reply))
		for _, api := range apis {
			r := post(t, srv, api, bodyFor(api, "classify_result", "s", "u"))
			checkError(t, r, tc.status, tc.typ, tc.code)
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
}

func TestMalformedAndWrongSchema(t *testing.T) {
	srv := fakellm.Start(t, nil)
	for _, api := range apis {
		for _, tool := range []string{"classify_result", "classify_fast"} {
			srv.SetHandler(fakellm.Always(fakellm.Reply{Fault: fakellm.FaultMalformed, Block: true}))
			name, args := toolCall(t, api, post(t, srv, api, bodyFor(api, tool, "s", "u")))
			if name != tool || json.Valid([]byte(args)) || !strings.HasPrefix(args, "{") {
				t.Errorf("%s %s malformed: %s %q", api, tool, name, args)
			}

			srv.SetHandler(fakellm.Always(fakellm.Reply{Fault: fakellm.FaultWrongSchema, Block: true}))
			name, args = toolCall(t, api, post(t, srv, api, bodyFor(api, tool, "s", "u")))
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
		r := send(t.Context(), freshClient(t), http.MethodPost, srv.URL()+pathFor(api), bodyFor(api, "classify_result", "s", "u"), nil)
		if r.err == nil {
			t.Fatalf("%s: got status %d, want a connection error", api, r.resp.StatusCode)
		}
		if errors.Is(r.err, context.Canceled) || errors.Is(r.err, context.DeadlineExceeded) {
			t.Errorf("%s: %v, want a connection error", api, r.err)
		}
	}
	if srv.Count() != 2 {
		t.Errorf("Count %d, want 2", srv.Count())
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
		for _, auth := range []string{"", "Bearer sk-wrong", "sk-right"} {
			var h http.Header
			if auth != "" {
				h = http.Header{"Authorization": {auth}}
			}
			r := send(t.Context(), http.DefaultClient, http.MethodPost, url, body, h)
			if r.err != nil {
				t.Fatal(r.err)
			}
			checkError(t, r, http.StatusUnauthorized, "invalid_request_error", "invalid_api_key")
		}
		r := send(t.Context(), http.DefaultClient, http.MethodPost, url, body, http.Header{"Authorization": {"Bearer sk-right"}})
		if r.err != nil {
			t.Fatal(r.err)
		}
		toolCall(t, api, r)
	}
	if srv.Count() != 8 {
		t.Errorf("Count %d, want 8 (rejected requests are recorded too)", srv.Count())
	}
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
}
