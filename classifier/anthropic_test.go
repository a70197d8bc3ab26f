package classifier

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/propagation"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/toolgate/toolgate/engine"
	"github.com/toolgate/toolgate/fakellm"
)

// messagesBody is the part of a Messages API request these tests check.
type messagesBody struct {
	Model     string `json:"model"`
	MaxTokens int64  `json:"max_tokens"`
	Stream    *bool  `json:"stream"`
	System    []struct {
		Type         string            `json:"type"`
		Text         string            `json:"text"`
		CacheControl map[string]string `json:"cache_control"`
	} `json:"system"`
	Messages []struct {
		Role    string `json:"role"`
		Content []struct {
			Type         string          `json:"type"`
			Text         string          `json:"text"`
			CacheControl json.RawMessage `json:"cache_control"`
		} `json:"content"`
	} `json:"messages"`
	Tools []struct {
		Name         string          `json:"name"`
		Description  string          `json:"description"`
		InputSchema  json.RawMessage `json:"input_schema"`
		CacheControl json.RawMessage `json:"cache_control"`
	} `json:"tools"`
	ToolChoice map[string]any `json:"tool_choice"`
}

// TestAnthropicRequest: what an anthropic backend sends: the system prompt
// as one text block marked for prompt caching, the user message, the one
// tool with our schema, forced through tool_choice, max_tokens as for the
// OpenAI APIs, the key in x-api-key; and the tokens it reports, cache
// writes and reads counted as input.
func TestAnthropicRequest(t *testing.T) {
	t.Setenv("TOOLGATE_TEST_KEY", "sk-ant-test")
	fake := fakellm.Start(t, blockOn("BAD"), fakellm.WithAPIKey("sk-ant-test"))
	cfg := apiConfig(APIAnthropic, fake.URL())
	cfg.TwoStage = true
	c := newTestClassifier(t, cfg)

	var details []*engine.ClassifierDetails
	for _, cmd := range []string{"go build ./...", "BAD deploy", "go test ./..."} {
		v, err := c.Classify(t.Context(), input("Bash", cmd, ""))
		if err != nil {
			t.Fatal(err)
		}
		details = append(details, v.Details)
	}
	reqs := fake.Requests()
	if len(reqs) != 4 { // fast; fast then full; fast
		t.Fatalf("%d requests, want 4", len(reqs))
	}
	for i, r := range reqs {
		tool, schema, maxTokens := fastTool, c.rules["default"].fast, int64(fastMaxTokens)
		if i == 2 {
			tool, schema, maxTokens = fullTool, c.rules["default"].full, int64(cfg.MaxTokens)
		}
		if r.API != fakellm.APIAnthropic || r.Path != "/v1/messages" || r.Tool != tool {
			t.Fatalf("request %d: api %q path %q tool %q", i, r.API, r.Path, r.Tool)
		}
		h := r.Header
		if h.Get("X-Api-Key") != "sk-ant-test" || h.Get("Authorization") != "" || h.Get("Anthropic-Version") != fakellm.AnthropicVersion {
			t.Errorf("request %d: x-api-key %q, authorization %q, anthropic-version %q", i, h.Get("X-Api-Key"), h.Get("Authorization"), h.Get("Anthropic-Version"))
		}
		var b messagesBody
		if err := json.Unmarshal(r.Body, &b); err != nil {
			t.Fatal(err)
		}
		if b.Model != "fake-model" || b.MaxTokens != maxTokens || b.Stream != nil {
			t.Errorf("request %d: model %q, max_tokens %d, stream %v", i, b.Model, b.MaxTokens, b.Stream)
		}
		// The stable system prompt, marked for caching; the varying user
		// message not.
		if len(b.System) != 1 || b.System[0].Type != "text" || b.System[0].Text != r.System || !strings.Contains(r.System, "Deleting production data.") ||
			!reflect.DeepEqual(b.System[0].CacheControl, map[string]string{"type": "ephemeral"}) {
			t.Errorf("request %d: system %+v", i, b.System)
		}
		if len(b.Messages) != 1 || b.Messages[0].Role != "user" || len(b.Messages[0].Content) != 1 ||
			b.Messages[0].Content[0].Text != r.User || b.Messages[0].Content[0].CacheControl != nil {
			t.Errorf("request %d: messages %+v", i, b.Messages)
		}
		want := map[string]any{"type": "tool", "name": tool, "disable_parallel_tool_use": true}
		if !reflect.DeepEqual(b.ToolChoice, want) {
			t.Errorf("request %d: tool_choice %v, want %v", i, b.ToolChoice, want)
		}
		if len(b.Tools) != 1 || b.Tools[0].Name != tool || b.Tools[0].Description == "" || b.Tools[0].CacheControl != nil {
			t.Fatalf("request %d: tools %+v", i, b.Tools)
		}
		wantSchema, _ := json.Marshal(schema)
		var got, exp any
		_ = json.Unmarshal(b.Tools[0].InputSchema, &got)
		_ = json.Unmarshal(wantSchema, &exp)
		if !reflect.DeepEqual(got, exp) {
			t.Errorf("request %d: input_schema %s, want %s", i, b.Tools[0].InputSchema, wantSchema)
		}
	}
	if d := details[1]; d.Stage != "full" || d.Backend != "primary" || d.Model != "fake-model" {
		t.Errorf("block details %+v", d)
	}
	for i, d := range details {
		if d.InputTokens == 0 || d.OutputTokens == 0 {
			t.Errorf("classification %d: no tokens reported: %+v", i, d)
		}
	}
}

// TestAnthropicTokensWithCache: input_tokens, cache writes and cache
// reads make the input reported.
func TestAnthropicTokensWithCache(t *testing.T) {
	fake := fakellm.Start(t, fakellm.Always(fakellm.Reply{InputTokens: 7, CacheCreationTokens: 300, CacheReadTokens: 2000, OutputTokens: 11}))
	c := newTestClassifier(t, apiConfig(APIAnthropic, fake.URL()))
	v, err := c.Classify(t.Context(), input("Bash", "go build ./...", ""))
	if err != nil {
		t.Fatal(err)
	}
	if d := v.Details; d.InputTokens != 2307 || d.OutputTokens != 11 {
		t.Errorf("tokens %d in, %d out; want 2307, 11", d.InputTokens, d.OutputTokens)
	}
	// Simulated caching (the fake's default): the prefix is written, then
	// read; the input reported is the whole prompt either way.
	fake.SetHandler(nil)
	var totals []int64
	for _, cmd := range []string{"ls -a", "ls -b"} {
		v, err := c.Classify(t.Context(), input("Bash", cmd, ""))
		if err != nil {
			t.Fatal(err)
		}
		totals = append(totals, v.Details.InputTokens)
	}
	if totals[0] == 0 || totals[0] != totals[1] {
		t.Errorf("input tokens %v: want the same, not 0, with the prefix written then read", totals)
	}
}

// TestNoAmbientAnthropicEnvironment: what the environment holds for
// anthropic-sdk-go (a key or token, a base URL, custom headers, a profile,
// OpenTelemetry settings) and the global tracer provider reach no
// backend: the configured key, or none, goes in x-api-key to the
// configured URL, and nothing else is added. (anthropic.NewClient would
// send the ambient token or custom headers.)
func TestNoAmbientAnthropicEnvironment(t *testing.T) {
	// A process-wide tracer provider and propagator, as a host process
	// may install: the SDK would use them by default.
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	prevTP, prevProp := otel.GetTracerProvider(), otel.GetTextMapPropagator()
	otel.SetTracerProvider(tp)
	otel.SetTextMapPropagator(propagation.TraceContext{})
	t.Cleanup(func() {
		otel.SetTracerProvider(prevTP)
		otel.SetTextMapPropagator(prevProp)
		_ = tp.Shutdown(t.Context())
	})
	otelEnv := map[string]string{
		"ANTHROPIC_BASE_URL":                           "http://127.0.0.1:1/elsewhere",
		"ANTHROPIC_OPEN_TELEMETRY":                     "true",
		"ANTHROPIC_OPEN_TELEMETRY_PROPAGATION":         "true",
		"ANTHROPIC_OPEN_TELEMETRY_TRACES_CONTENT_MODE": "content",
	}
	for _, tc := range []struct {
		name    string
		key     string // TOOLGATE_TEST_KEY, the configured key
		ambient map[string]string
	}{
		{"ambient key", "sk-ant-configured", map[string]string{"ANTHROPIC_API_KEY": "sk-ant-ambient"}},
		{"ambient key, none configured", "", map[string]string{"ANTHROPIC_API_KEY": "sk-ant-ambient"}},
		{"ambient token", "sk-ant-configured", map[string]string{"ANTHROPIC_AUTH_TOKEN": "tok-ambient"}},
		{"custom headers", "", map[string]string{"ANTHROPIC_CUSTOM_HEADERS": "X-Gateway-Secret: hdr-secret", "ANTHROPIC_CONFIG_DIR": t.TempDir()}},
		{"profile", "sk-ant-configured", map[string]string{"ANTHROPIC_PROFILE": "ambient", "ANTHROPIC_CONFIG_DIR": t.TempDir()}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, k := range []string{"ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "ANTHROPIC_PROFILE"} {
				t.Setenv(k, "")
			}
			t.Setenv("TOOLGATE_TEST_KEY", tc.key)
			for _, env := range []map[string]string{otelEnv, tc.ambient} {
				for k, v := range env {
					t.Setenv(k, v)
				}
			}
			exp.Reset()
			url, headers := cannedServer(t, messagesAnswer("tool_use", args(false)))
			c := newTestClassifier(t, apiConfig(APIAnthropic, url))
			ctx, span := tp.Tracer("test").Start(t.Context(), "check")
			if _, err := c.Classify(ctx, input("Bash", "make deploy", "")); err != nil {
				t.Fatal(err)
			}
			span.End()
			h := headers()
			if len(h) != 1 {
				t.Fatalf("%d requests", len(h))
			}
			if got := h[0].Get("X-Api-Key"); got != tc.key {
				t.Errorf("x-api-key %q, want %q", got, tc.key)
			}
			for _, k := range []string{"Authorization", "X-Gateway-Secret", "Traceparent", "Tracestate"} {
				if v := h[0].Get(k); v != "" {
					t.Errorf("the backend received %s: %q", k, v)
				}
			}
			for _, s := range exp.GetSpans() {
				if s.Name != "check" {
					t.Errorf("the SDK recorded a span %q through the global provider", s.Name)
				}
			}
		})
	}
}
