package claudecode

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// toolUseIDPrefix starts the id of every tool_use the fake API scripts;
// the number after it is the step's index.
const toolUseIDPrefix = "toolu_e2e_"

// scriptedCall is one turn of the fake model: a call of tool with the
// input that input returns. input sees the tool results of the calls
// before it (by tool_use_id) and runs under the request's context.
type scriptedCall struct {
	tool  string
	input func(ctx context.Context, results map[string]toolResult) map[string]any
}

// toolResult is a tool_result block the CLI sent back.
type toolResult struct {
	ID      string
	IsError bool
	Content string // text of the content, blocks joined by newlines
}

// fakeAPI is a scripted Anthropic Messages API. A request of the main
// conversation (it offers the Bash tool and a user message carries the
// prompt marker) gets the next scripted call, which is the one after the
// highest scripted tool_use already in the conversation, so a retried
// request gets the same answer; once the script is done it gets a plain
// text answer. Any other request (a title, a side query) gets plain text
// and does not move the script. It also serves GET /install.sh, a script
// that creates the marker file.
type fakeAPI struct {
	srv    *httptest.Server
	marker string // what install.sh creates
	prompt string // marks the main conversation
	script []scriptedCall

	mu           sync.Mutex
	bodies       [][]byte              // every request body, in order
	results      map[string]toolResult // latest tool_result by id
	served       int                   // scripted calls answered (highest index + 1)
	finished     bool                  // the final text answer was sent
	installFetch int                   // GETs of /install.sh
	errs         []string              // requests the fake could not answer
}

func newFakeAPI(t *testing.T, prompt, marker string, script []scriptedCall) *fakeAPI {
	t.Helper()
	f := &fakeAPI{marker: marker, prompt: prompt, script: script, results: map[string]toolResult{}}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	f.srv = httptest.NewUnstartedServer(f)
	f.srv.Listener = ln
	f.srv.Start()
	t.Cleanup(f.srv.Close)
	return f
}

// URL is the base URL for ANTHROPIC_BASE_URL.
func (f *fakeAPI) URL() string { return f.srv.URL }

// Addr is host:port of the server.
func (f *fakeAPI) Addr() string { return f.srv.Listener.Addr().String() }

func (f *fakeAPI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch {
	case r.Method == http.MethodGet && r.URL.Path == "/install.sh":
		f.mu.Lock()
		f.installFetch++
		f.mu.Unlock()
		w.Header().Set("Content-Type", "text/x-shellscript")
		fmt.Fprintf(w, "#!/bin/sh\necho installed > '%s'\n", f.marker)
	case r.Method == http.MethodPost && r.URL.Path == "/v1/messages/count_tokens":
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"input_tokens":1}`)
	case r.Method == http.MethodPost && r.URL.Path == "/v1/messages":
		f.messages(w, r)
	default:
		f.fail(fmt.Sprintf("unexpected request %s %s", r.Method, r.URL))
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusNotFound)
		io.WriteString(w, `{"type":"error","error":{"type":"not_found_error","message":"not served by the fake"}}`)
	}
}

func (f *fakeAPI) fail(msg string) {
	f.mu.Lock()
	f.errs = append(f.errs, msg)
	f.mu.Unlock()
}

// apiRequest is the part of a Messages API request the fake reads.
type apiRequest struct {
	Model  string `json:"model"`
	Stream bool   `json:"stream"`
	Tools  []struct {
		Name string `json:"name"`
	} `json:"tools"`
	Messages []struct {
		Role    string          `json:"role"`
		Content json.RawMessage `json:"content"`
	} `json:"messages"`
}

// contentBlock is one block of a message's content.
type contentBlock struct {
	Type      string          `json:"type"`
	Text      string          `json:"text"`
	ID        string          `json:"id"`
	Name      string          `json:"name"`
	ToolUseID string          `json:"tool_use_id"`
	IsError   bool            `json:"is_error"`
	Content   json.RawMessage `json:"content"`
}

// blocks decodes content, a string or an array of blocks.
func blocks(raw json.RawMessage) []contentBlock {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return []contentBlock{{Type: "text", Text: s}}
	}
	var bs []contentBlock
	_ = json.Unmarshal(raw, &bs)
	return bs
}

// text flattens a tool_result's content (a string or text blocks).
func text(raw json.RawMessage) string {
	if len(raw) == 0 {
		return ""
	}
	var parts []string
	for _, b := range blocks(raw) {
		if b.Type == "text" {
			parts = append(parts, b.Text)
		}
	}
	return strings.Join(parts, "\n")
}

func (f *fakeAPI) messages(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(io.LimitReader(r.Body, 64<<20))
	if err != nil {
		f.fail("reading a request: " + err.Error())
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	var req apiRequest
	if err := json.Unmarshal(body, &req); err != nil {
		f.fail("decoding a request: " + err.Error())
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	main, next := false, 0
	results := map[string]toolResult{}
	for _, m := range req.Messages {
		for _, b := range blocks(m.Content) {
			switch {
			case m.Role == "user" && b.Type == "text" && strings.Contains(b.Text, f.prompt):
				main = true
			case m.Role == "user" && b.Type == "tool_result":
				results[b.ToolUseID] = toolResult{ID: b.ToolUseID, IsError: b.IsError, Content: text(b.Content)}
			case m.Role == "assistant" && b.Type == "tool_use" && strings.HasPrefix(b.ID, toolUseIDPrefix):
				if n, err := strconv.Atoi(strings.TrimPrefix(b.ID, toolUseIDPrefix)); err == nil && n+1 > next {
					next = n + 1
				}
			}
		}
	}
	offersBash := false
	for _, tl := range req.Tools {
		offersBash = offersBash || tl.Name == "Bash"
	}
	main = main && offersBash

	f.mu.Lock()
	f.bodies = append(f.bodies, body)
	if main {
		for id, res := range results {
			f.results[id] = res
		}
		f.served = max(f.served, next)
	}
	f.mu.Unlock()

	block := map[string]any{"type": "text", "text": "ok"}
	stop := "end_turn"
	switch {
	case main && next < len(f.script):
		call := f.script[next]
		block = map[string]any{
			"type":  "tool_use",
			"id":    fmt.Sprintf("%s%02d", toolUseIDPrefix, next),
			"name":  call.tool,
			"input": call.input(r.Context(), results),
		}
		stop = "tool_use"
		f.mu.Lock()
		f.served = max(f.served, next+1)
		f.mu.Unlock()
	case main:
		block["text"] = "All scripted calls are done."
		f.mu.Lock()
		f.finished = true
		f.mu.Unlock()
	}
	model := req.Model
	if model == "" {
		model = "claude-e2e"
	}
	msg := map[string]any{
		"id":            fmt.Sprintf("msg_e2e_%d", time.Now().UnixNano()),
		"type":          "message",
		"role":          "assistant",
		"model":         model,
		"content":       []any{block},
		"stop_reason":   stop,
		"stop_sequence": nil,
		"usage":         map[string]any{"input_tokens": 10, "output_tokens": 5},
	}
	if !req.Stream {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(msg)
		return
	}
	f.stream(w, msg, block, stop)
}

// stream writes msg as the Messages API's server-sent events.
func (f *fakeAPI) stream(w http.ResponseWriter, msg, block map[string]any, stop string) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	flusher, _ := w.(http.Flusher)
	event := func(name string, v map[string]any) {
		v["type"] = name
		data, _ := json.Marshal(v)
		fmt.Fprintf(w, "event: %s\ndata: %s\n\n", name, data)
		if flusher != nil {
			flusher.Flush()
		}
	}
	start := map[string]any{}
	for k, v := range msg {
		start[k] = v
	}
	start["content"] = []any{}
	start["stop_reason"] = nil
	start["usage"] = map[string]any{"input_tokens": 10, "output_tokens": 1}
	event("message_start", map[string]any{"message": start})
	event("ping", map[string]any{})
	if block["type"] == "tool_use" {
		input, _ := json.Marshal(block["input"])
		event("content_block_start", map[string]any{"index": 0, "content_block": map[string]any{
			"type": "tool_use", "id": block["id"], "name": block["name"], "input": map[string]any{},
		}})
		event("content_block_delta", map[string]any{"index": 0, "delta": map[string]any{
			"type": "input_json_delta", "partial_json": string(input),
		}})
	} else {
		event("content_block_start", map[string]any{"index": 0, "content_block": map[string]any{"type": "text", "text": ""}})
		event("content_block_delta", map[string]any{"index": 0, "delta": map[string]any{"type": "text_delta", "text": block["text"]}})
	}
	event("content_block_stop", map[string]any{"index": 0})
	event("message_delta", map[string]any{
		"delta": map[string]any{"stop_reason": stop, "stop_sequence": nil},
		"usage": map[string]any{"output_tokens": 5},
	})
	event("message_stop", map[string]any{})
}

// snapshot is what the fake saw, copied under its lock.
type snapshot struct {
	requests     int
	results      map[string]toolResult
	served       int
	finished     bool
	installFetch int
	errs         []string
}

func (f *fakeAPI) snapshot() snapshot {
	f.mu.Lock()
	defer f.mu.Unlock()
	res := make(map[string]toolResult, len(f.results))
	for k, v := range f.results {
		res[k] = v
	}
	return snapshot{
		requests:     len(f.bodies),
		results:      res,
		served:       f.served,
		finished:     f.finished,
		installFetch: f.installFetch,
		errs:         append([]string(nil), f.errs...),
	}
}
