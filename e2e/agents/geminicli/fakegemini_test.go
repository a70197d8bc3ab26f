package geminicli

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

// turn is one scripted model answer: a function call, or the closing text
// when call is empty.
type turn struct {
	id   string // functionCall.id; Gemini CLI echoes it in the functionResponse
	call string // tool name
	args map[string]any
	text string
}

// fakeGemini is a scripted Gemini API (generateContent and
// streamGenerateContent) on 127.0.0.1. Each main request (one that
// declares tools) gets the next scripted turn; side queries (the model
// router, next-speaker checks: requests without tools) get a JSON answer
// that fits their response schema without consuming the script. Every
// request is recorded. It also serves GET /install.sh, the download of the
// download-and-run case.
type fakeGemini struct {
	srv *httptest.Server

	mu       sync.Mutex
	script   []turn
	next     int
	main     []map[string]any // bodies of the main requests, in order
	marks    []int            // mark() when each main request arrived
	side     int              // side queries answered
	unknown  []string         // requests the fake does not serve
	installs int              // GETs of /install.sh
	mark     func() int

	installScript string
}

// newFakeGemini starts the fake. mark is called as each main request
// arrives (the number of hook calls so far), so that the hook calls made
// between two model turns can be told apart.
func newFakeGemini(t *testing.T, installScript string, mark func() int) *fakeGemini {
	t.Helper()
	f := &fakeGemini{installScript: installScript, mark: mark}
	f.srv = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(f.srv.Close)
	if !strings.HasPrefix(f.srv.URL, "http://127.0.0.1:") {
		t.Fatalf("fake Gemini API at %s, want loopback", f.srv.URL)
	}
	return f
}

func (f *fakeGemini) setScript(s []turn) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.script = s
}

func (f *fakeGemini) serve(w http.ResponseWriter, r *http.Request) {
	if r.Method == http.MethodGet && r.URL.Path == "/install.sh" {
		f.mu.Lock()
		f.installs++
		f.mu.Unlock()
		w.Header().Set("Content-Type", "text/x-shellscript")
		io.WriteString(w, f.installScript)
		return
	}
	_, method, _ := strings.Cut(r.URL.Path, ":")
	if r.Method != http.MethodPost || !strings.HasPrefix(r.URL.Path, "/v1beta/models/") ||
		(method != "generateContent" && method != "streamGenerateContent") {
		f.mu.Lock()
		f.unknown = append(f.unknown, r.Method+" "+r.URL.String())
		f.mu.Unlock()
		http.Error(w, "not served by the fake", http.StatusNotFound)
		return
	}
	var body map[string]any
	if err := json.NewDecoder(io.LimitReader(r.Body, 16<<20)).Decode(&body); err != nil {
		http.Error(w, "bad JSON: "+err.Error(), http.StatusBadRequest)
		return
	}
	var resp map[string]any
	if _, hasTools := body["tools"]; !hasTools {
		f.mu.Lock()
		f.side++
		f.mu.Unlock()
		resp = textResponse(sideAnswer(body))
	} else {
		f.mu.Lock()
		f.main = append(f.main, body)
		m := 0
		if f.mark != nil {
			m = f.mark()
		}
		f.marks = append(f.marks, m)
		t := turn{text: "The scripted session is over."}
		if f.next < len(f.script) {
			t = f.script[f.next]
			f.next++
		}
		f.mu.Unlock()
		if t.call != "" {
			resp = callResponse(t)
		} else {
			resp = textResponse(t.text)
		}
	}
	b, err := json.Marshal(resp)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	if method == "streamGenerateContent" && r.URL.Query().Get("alt") == "sse" {
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprintf(w, "data: %s\n\n", b)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	if method == "streamGenerateContent" {
		// Without alt=sse the stream is a JSON array of responses.
		fmt.Fprintf(w, "[%s]", b)
		return
	}
	w.Write(b)
}

func candidate(parts ...map[string]any) map[string]any {
	return map[string]any{
		"candidates": []any{map[string]any{
			"content":      map[string]any{"role": "model", "parts": parts},
			"finishReason": "STOP",
			"index":        0,
		}},
		"usageMetadata": map[string]any{"promptTokenCount": 10, "candidatesTokenCount": 5, "totalTokenCount": 15},
		"modelVersion":  "fake-gemini",
	}
}

func callResponse(t turn) map[string]any {
	args := t.args
	if args == nil {
		args = map[string]any{}
	}
	return candidate(map[string]any{"functionCall": map[string]any{"id": t.id, "name": t.call, "args": args}})
}

func textResponse(text string) map[string]any {
	return candidate(map[string]any{"text": text})
}

// sideAnswer answers a side query with a JSON document that fits its
// response schema: the model router's complexity score (low, so the
// router picks a flash model), the next-speaker check ("user": the turn is
// over), and any other schema filled with plain values.
func sideAnswer(body map[string]any) string {
	gc, _ := body["generationConfig"].(map[string]any)
	schema, _ := gc["responseJsonSchema"].(map[string]any)
	if schema == nil {
		schema, _ = gc["responseSchema"].(map[string]any)
	}
	if schema == nil {
		return "OK"
	}
	b, _ := json.Marshal(fillSchema(schema, ""))
	return string(b)
}

func fillSchema(s map[string]any, name string) any {
	if enum, _ := s["enum"].([]any); len(enum) > 0 {
		for _, e := range enum {
			if e == "user" { // next_speaker: hand the turn back
				return e
			}
		}
		return enum[0]
	}
	typ, _ := s["type"].(string)
	switch strings.ToLower(typ) {
	case "object":
		out := map[string]any{}
		props, _ := s["properties"].(map[string]any)
		for k, v := range props {
			if ps, ok := v.(map[string]any); ok {
				out[k] = fillSchema(ps, k)
			}
		}
		return out
	case "array":
		return []any{}
	case "integer", "number":
		return 10
	case "boolean":
		return false
	}
	if name == "next_speaker" {
		return "user"
	}
	return "scripted answer"
}

// functionResponses returns the function responses Gemini CLI sent back,
// by call id, from every main request.
func (f *fakeGemini) functionResponses() map[string]map[string]any {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := map[string]map[string]any{}
	for _, body := range f.main {
		contents, _ := body["contents"].([]any)
		for _, c := range contents {
			cm, _ := c.(map[string]any)
			parts, _ := cm["parts"].([]any)
			for _, p := range parts {
				pm, _ := p.(map[string]any)
				fr, ok := pm["functionResponse"].(map[string]any)
				if !ok {
					continue
				}
				id, _ := fr["id"].(string)
				out[id] = fr
			}
		}
	}
	return out
}

// hookSpan returns the range [from, to) of hook calls made while the
// scripted turn i was being carried out: after main request i arrived and
// before main request i+1 (which carries turn i's function response).
func (f *fakeGemini) hookSpan(i int, total int) (from, to int, ok bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if i >= len(f.marks) {
		return 0, 0, false
	}
	from, to = f.marks[i], total
	if i+1 < len(f.marks) {
		to = f.marks[i+1]
	}
	return from, to, true
}

func (f *fakeGemini) stats() (mainRequests, side, installs int, unknown []string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.main), f.side, f.installs, append([]string(nil), f.unknown...)
}

// offLoopback is the proxy the CLI's environment names for HTTP and HTTPS
// (loopback excepted by NO_PROXY): it refuses every request and records
// it, so that a run that tries to reach beyond loopback is seen.
type offLoopback struct {
	srv  *httptest.Server
	mu   sync.Mutex
	seen []string
}

func newOffLoopback(t *testing.T) *offLoopback {
	t.Helper()
	p := &offLoopback{}
	p.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p.mu.Lock()
		p.seen = append(p.seen, r.Method+" "+r.Host+r.URL.Path)
		p.mu.Unlock()
		http.Error(w, "the e2e test allows loopback only", http.StatusForbidden)
	}))
	t.Cleanup(p.srv.Close)
	return p
}

func (p *offLoopback) requests() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.seen...)
}
