//go:build unix

package codex

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
)

// toolCall is one scripted model turn: a function call (exec_command) with
// JSON arguments, or a call of the freeform custom tool apply_patch.
type toolCall struct {
	id     string         // call_id, which Codex passes to the hook as tool_use_id
	name   string         // exec_command or apply_patch
	args   map[string]any // function arguments (exec_command)
	custom string         // freeform input (apply_patch)
}

// fakeModel is a scripted OpenAI Responses API on loopback. Each POST
// /v1/responses is answered with the first scripted call whose output is
// not yet in the request's input, and, once all have one, with a plain
// message: stateless, so a retried request gets the same answer. It also
// serves GET /install.sh, and records every request.
type fakeModel struct {
	srv     *httptest.Server
	calls   []toolCall
	install string // body of /install.sh

	mu       sync.Mutex
	requests []map[string]any // decoded /v1/responses bodies
	others   []string         // any other request, "METHOD PATH"
	fetched  int              // GETs of /install.sh
}

const finalMessage = "All scripted steps are done."

func newFakeModel(t *testing.T) *fakeModel {
	f := &fakeModel{}
	f.srv = httptest.NewServer(http.HandlerFunc(f.serve)) // 127.0.0.1
	t.Cleanup(f.srv.Close)
	return f
}

func (f *fakeModel) serve(w http.ResponseWriter, r *http.Request) {
	switch {
	case r.Method == http.MethodGet && r.URL.Path == "/install.sh":
		f.mu.Lock()
		f.fetched++
		body := f.install
		f.mu.Unlock()
		w.Header().Set("Content-Type", "text/x-shellscript")
		io.WriteString(w, body)
		return
	case r.Method == http.MethodPost && r.URL.Path == "/v1/responses":
	default:
		f.mu.Lock()
		f.others = append(f.others, r.Method+" "+r.URL.Path)
		f.mu.Unlock()
		http.NotFound(w, r)
		return
	}
	var req map[string]any
	if err := json.NewDecoder(io.LimitReader(r.Body, 64<<20)).Decode(&req); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	f.mu.Lock()
	f.requests = append(f.requests, req)
	n := len(f.requests)
	f.mu.Unlock()

	answered := map[string]bool{}
	for id := range callOutputs(req) {
		answered[id] = true
	}
	var item map[string]any
	for _, c := range f.calls {
		if answered[c.id] {
			continue
		}
		item = c.item()
		break
	}
	if item == nil || n > 4*len(f.calls)+4 { // done, or looping: stop
		item = map[string]any{
			"type": "message", "id": fmt.Sprintf("msg_%d", n), "role": "assistant", "status": "completed",
			"content": []any{map[string]any{"type": "output_text", "text": finalMessage, "annotations": []any{}}},
		}
	}
	respID := fmt.Sprintf("resp_%d", n)
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	event := func(typ string, v map[string]any) {
		v["type"] = typ
		b, _ := json.Marshal(v)
		fmt.Fprintf(w, "event: %s\ndata: %s\n\n", typ, b)
	}
	event("response.created", map[string]any{"response": map[string]any{"id": respID, "status": "in_progress"}})
	event("response.output_item.added", map[string]any{"output_index": 0, "item": item})
	event("response.output_item.done", map[string]any{"output_index": 0, "item": item})
	event("response.completed", map[string]any{"response": map[string]any{
		"id": respID, "status": "completed",
		"usage": map[string]any{"input_tokens": 10, "output_tokens": 5, "total_tokens": 15,
			"input_tokens_details": map[string]any{"cached_tokens": 0}, "output_tokens_details": map[string]any{"reasoning_tokens": 0}},
	}})
	if fl, ok := w.(http.Flusher); ok {
		fl.Flush()
	}
}

// item renders the call as a Responses API output item.
func (c toolCall) item() map[string]any {
	if c.args == nil {
		return map[string]any{"type": "custom_tool_call", "id": "ctc_" + c.id, "call_id": c.id, "name": c.name, "input": c.custom, "status": "completed"}
	}
	args, _ := json.Marshal(c.args)
	return map[string]any{"type": "function_call", "id": "fc_" + c.id, "call_id": c.id, "name": c.name, "arguments": string(args), "status": "completed"}
}

// callOutputs returns the tool outputs in a request's input by call_id.
func callOutputs(req map[string]any) map[string]string {
	out := map[string]string{}
	items, _ := req["input"].([]any)
	for _, it := range items {
		m, _ := it.(map[string]any)
		switch m["type"] {
		case "function_call_output", "custom_tool_call_output":
		default:
			continue
		}
		id, _ := m["call_id"].(string)
		switch o := m["output"].(type) {
		case string:
			out[id] = o
		default: // content items: keep their text
			b, _ := json.Marshal(o)
			out[id] = string(b)
		}
	}
	return out
}

// outputs returns every tool output the CLI sent back, by call_id.
func (f *fakeModel) outputs() map[string]string {
	f.mu.Lock()
	defer f.mu.Unlock()
	all := map[string]string{}
	for _, req := range f.requests {
		for id, o := range callOutputs(req) {
			all[id] = o
		}
	}
	return all
}

// tools lists the tools of the first request as "type:name".
func (f *fakeModel) tools() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.requests) == 0 {
		return nil
	}
	var names []string
	list, _ := f.requests[0]["tools"].([]any)
	for _, t := range list {
		m, _ := t.(map[string]any)
		name, _ := m["name"].(string)
		typ, _ := m["type"].(string)
		names = append(names, typ+":"+name)
	}
	return names
}

// toolParams returns the JSON-schema properties of a function tool of the
// first request.
func (f *fakeModel) toolParams(name string) map[string]any {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.requests) == 0 {
		return nil
	}
	list, _ := f.requests[0]["tools"].([]any)
	for _, t := range list {
		m, _ := t.(map[string]any)
		if m["name"] == name {
			p, _ := m["parameters"].(map[string]any)
			props, _ := p["properties"].(map[string]any)
			return props
		}
	}
	return nil
}

func (f *fakeModel) summary() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return fmt.Sprintf("%d model requests, other requests %q, install.sh fetched %d times", len(f.requests), f.others, f.fetched)
}

func (f *fakeModel) url() string { return f.srv.URL }

func (f *fakeModel) hostPort() string { return strings.TrimPrefix(f.srv.URL, "http://") }
