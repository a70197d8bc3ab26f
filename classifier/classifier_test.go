package classifier

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"go.uber.org/zap"

	"github.com/toolgate/toolgate/classifier/policy"
	"github.com/toolgate/toolgate/engine"
	"github.com/toolgate/toolgate/fakellm"
)

// testConfig is one backend pointed at the fake, with short deadlines.
func testConfig(urls ...string) Config {
	cfg := DefaultConfig()
	cfg.Timeout = 2 * time.Second
	cfg.QueueTimeout = 200 * time.Millisecond
	for i, u := range urls {
		cfg.Backends = append(cfg.Backends, BackendConfig{
			Name: []string{"primary", "secondary", "third"}[i], BaseURL: u, Model: "fake-model",
			APIKeyEnv: "TOOLGATE_TEST_KEY", MaxConcurrent: 4, Priority: 10 - i,
		})
	}
	return cfg
}

// apis are the APIs a backend speaks: the fault tests run for each.
var apis = []string{APIChat, APIResponses, APIAnthropic}

// baseURL is the base URL of a fake, given as its OpenAI base URL (with
// /v1), for a backend speaking api: Anthropic's SDK adds /v1 itself.
func baseURL(url, api string) string {
	if api == APIAnthropic {
		return strings.TrimSuffix(url, "/v1")
	}
	return url
}

// apiConfig is testConfig with api as the classifier's default API, its
// backends pointed at the fakes of the given OpenAI base URLs.
func apiConfig(api string, urls ...string) Config {
	bases := make([]string, len(urls))
	for i, u := range urls {
		bases[i] = baseURL(u, api)
	}
	cfg := testConfig(bases...)
	cfg.API = api
	return cfg
}

// testRules are the tests' policy: one free-text soft deny (which the
// model sees as the category extra_soft_deny) and the allow category the
// fake names by default.
var testRules = Rules{
	SoftDeny:   []string{"Deleting production data."},
	Categories: []policy.Category{{Name: fakellm.DefaultAllowCategory, Kind: policy.Allow, Definition: "Routine work in the project."}},
}

func newTestClassifier(t *testing.T, cfg Config) *Classifier {
	t.Helper()
	c, err := New(cfg, map[string]Rules{"default": testRules}, zap.NewNop())
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func input(tool, command, session string) *engine.ClassifyInput {
	return &engine.ClassifyInput{
		Request: &engine.Request{SessionID: session, Tool: engine.ToolCall{Name: tool, Input: map[string]any{"command": command}}, WorkingDirectory: "/work/app"},
		Kind:    engine.KindShell,
		Policy:  "default",
	}
}

// blockOn blocks requests whose user message contains marker.
func blockOn(marker string) fakellm.Handler {
	return func(r *fakellm.Request) fakellm.Reply {
		if strings.Contains(r.User, marker) {
			return fakellm.Reply{Block: true, Reason: "matches <b>soft deny</b>\n\x1b[31mdeleting\x1b[0m"}
		}
		return fakellm.Reply{Reason: "routine work"}
	}
}

func TestVerdictEachAPI(t *testing.T) {
	t.Setenv("TOOLGATE_TEST_KEY", "sk-test-123")
	for _, api := range apis {
		t.Run(api, func(t *testing.T) {
			fake := fakellm.Start(t, blockOn("drop table"), fakellm.WithAPIKey("sk-test-123"))
			c := newTestClassifier(t, apiConfig(api, fake.URL()))

			v, err := c.Classify(t.Context(), input("Bash", "psql -c 'drop table users'", ""))
			if err != nil {
				t.Fatal(err)
			}
			if v.Decision != engine.Deny || v.Cached {
				t.Fatalf("got %+v, want a fresh block", v)
			}
			// Reason hygiene: no tags, no control characters.
			if strings.ContainsAny(v.Reason, "<>\x1b\n") || !strings.Contains(v.Reason, "soft deny") {
				t.Errorf("reason not sanitised: %q", v.Reason)
			}
			if d := v.Details; d == nil || d.Backend != "primary" || d.Model != "fake-model" || d.Stage != "single" || d.InputTokens == 0 || d.OutputTokens == 0 {
				t.Errorf("details %+v", v.Details)
			}
			v, err = c.Classify(t.Context(), input("Bash", "go build ./...", ""))
			if err != nil || v.Decision != engine.Allow {
				t.Fatalf("got %+v %v, want allow", v, err)
			}
			reqs := fake.Requests()
			if len(reqs) != 2 {
				t.Fatalf("%d requests, want 2", len(reqs))
			}
			r := reqs[0]
			if r.API != api || r.Tool != "classify_result" || r.Model != "fake-model" {
				t.Errorf("request api %q tool %q model %q", r.API, r.Tool, r.Model)
			}
			auth, key := r.Header.Get("Authorization"), r.Header.Get("X-Api-Key")
			if api == APIAnthropic && (key != "sk-test-123" || auth != "") || api != APIAnthropic && auth != "Bearer sk-test-123" {
				t.Errorf("Authorization %q, X-Api-Key %q", auth, key)
			}
			def := r.ToolDef("classify_result")
			// Strict schemas are OpenAI's; Anthropic's answers are checked
			// against the schema here all the same.
			if def == nil || def.Strict != (api != APIAnthropic) || !strings.Contains(string(def.Parameters), `"should_block"`) {
				t.Fatalf("tool definition %+v", def)
			}
			// The model reasons before it decides.
			params := string(def.Parameters)
			if i, j, k := strings.Index(params, `"thinking"`), strings.Index(params, `"should_block"`), strings.Index(params, `"reason"`); i < 0 || i > j || j > k {
				t.Errorf("properties out of order: %s", params)
			}
			if !strings.Contains(r.System, "Deleting production data.") || !strings.Contains(r.User, "drop table users") {
				t.Errorf("prompt lacks the rules or the action:\n%s\n%s", r.System, r.User)
			}
		})
	}
}

// TestFaultsFailClosedWithinDeadline: every fault fails closed, within the
// classifier's deadline. It runs on the fake clock of a synctest bubble,
// over an in-memory fake, so the bound is the deadline itself.
func TestFaultsFailClosedWithinDeadline(t *testing.T) {
	for _, api := range apis {
		for _, fault := range fakellm.Faults {
			t.Run(api+"/"+string(fault), func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) {
					fake, hc := startMemFake(t, fakellm.Always(fakellm.Reply{Fault: fault, RetryAfter: -1}))
					cfg := apiConfig(api, fake.URL())
					cfg.Timeout = 500 * time.Millisecond
					c := newMemClassifier(t, cfg, hc)
					eng, err := engine.New(engine.Config{Classifier: c})
					if err != nil {
						t.Fatal(err)
					}
					start := time.Now()
					res, err := eng.Check(t.Context(), &engine.Request{Tool: engine.ToolCall{Name: "Bash", Input: map[string]any{"command": "make deploy"}}})
					elapsed := time.Since(start)
					if err != nil {
						t.Fatal(err)
					}
					if res.Decision != engine.Deny || res.Source != engine.SourceClassifierUnavailable {
						t.Fatalf("got %s/%s %q, want deny/classifier_unavailable", res.Decision, res.Source, res.Reason)
					}
					if !strings.Contains(res.Reason, "classifier failed") || !strings.Contains(res.Reason, "primary") {
						t.Errorf("reason %q does not say the classifier failed and where", res.Reason)
					}
					if elapsed > cfg.Timeout {
						t.Errorf("took %s with a %s deadline", elapsed, cfg.Timeout)
					}
					if fake.Count() == 0 || fake.Requests()[0].API != api {
						t.Errorf("the fake was not asked through the %s API", api)
					}
				})
			})
		}
	}
}

func TestRetryOnceHonouringRetryAfter(t *testing.T) {
	for _, api := range apis {
		t.Run(api, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				fake, hc := startMemFake(t, fakellm.Sequence(
					fakellm.Reply{Fault: fakellm.FaultRateLimit, RetryAfter: 300 * time.Millisecond},
					fakellm.Reply{Block: true, Reason: "second try"},
				))
				c := newMemClassifier(t, apiConfig(api, fake.URL()), hc)
				start := time.Now()
				v, err := c.Classify(t.Context(), input("Bash", "x", ""))
				if err != nil {
					t.Fatal(err)
				}
				if v.Decision != engine.Deny || v.Reason != "second try" || fake.Count() != 2 {
					t.Fatalf("got %+v after %d requests", v, fake.Count())
				}
				// The fake clock moves only when the retry waits.
				if gap := time.Since(start); gap < 300*time.Millisecond {
					t.Errorf("retried after %s, before Retry-After", gap)
				}

				// A Retry-After beyond the deadline is not waited for.
				fake.SetHandler(fakellm.Always(fakellm.Reply{Fault: fakellm.FaultRateLimit, RetryAfter: 10 * time.Second}))
				_, err = c.Classify(t.Context(), input("Bash", "y", ""))
				if err == nil || !strings.Contains(err.Error(), "no time left to retry") {
					t.Fatalf("err %v: want a failure that declined to wait past the deadline", err)
				}
				// A 5xx is retried once.
				n := fake.Count()
				fake.SetHandler(fakellm.Always(fakellm.Reply{Fault: fakellm.FaultServerError, RetryAfter: -1}))
				if _, err := c.Classify(t.Context(), input("Bash", "w", "")); err == nil || !strings.Contains(err.Error(), "HTTP 500") || fake.Count() != n+2 {
					t.Fatalf("server error: err %v, %d requests (want two)", err, fake.Count()-n)
				}
				// A 400 is not retried.
				n = fake.Count()
				fake.SetHandler(fakellm.Always(fakellm.Reply{Fault: fakellm.FaultBadRequest}))
				if _, err := c.Classify(t.Context(), input("Bash", "z", "")); !errors.Is(err, ErrRequestRefused) || fake.Count() != n+1 {
					t.Fatalf("bad request: err %v, %d requests (want exactly one)", err, fake.Count()-n)
				}
			})
		})
	}
}

func TestCallerDeadlineWins(t *testing.T) {
	for _, api := range apis {
		t.Run(api, func(t *testing.T) { testCallerDeadlineWins(t, api) })
	}
}

func testCallerDeadlineWins(t *testing.T, api string) {
	synctest.Test(t, func(t *testing.T) {
		fake, hc := startMemFake(t, fakellm.Always(fakellm.Reply{Fault: fakellm.FaultHang}))
		cfg := apiConfig(api, fake.URL())
		cfg.Timeout = 10 * time.Second
		c := newMemClassifier(t, cfg, hc)
		const deadline = 200 * time.Millisecond
		ctx, cancel := context.WithTimeout(t.Context(), deadline)
		defer cancel()
		start := time.Now()
		_, err := c.Classify(ctx, input("Bash", "x", ""))
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("got %v, want the caller's deadline", err)
		}
		if elapsed := time.Since(start); elapsed > deadline {
			t.Errorf("took %s past a %s caller deadline", elapsed, deadline)
		}
		// The upstream call, shared and detached from its callers, still
		// ends by the classifier's own deadline: the bubble would report
		// it left blocked otherwise.
		time.Sleep(cfg.Timeout) // synctest: the fake clock, no real wait
		synctest.Wait()
		if s := c.Pool().States()[0]; s.InFlight != 0 || fake.Count() != 1 {
			t.Errorf("after the classifier deadline: %+v, %d requests; want the one call ended", s, fake.Count())
		}
	})
}

func TestCacheAndCoalescing(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var calls atomic.Int32
		fake, hc := startMemFake(t, func(r *fakellm.Request) fakellm.Reply {
			calls.Add(1)
			return fakellm.Reply{Latency: 200 * time.Millisecond}
		})
		c := newMemClassifier(t, testConfig(fake.URL()), hc)
		var wg sync.WaitGroup
		for range 8 {
			wg.Go(func() {
				if v, err := c.Classify(t.Context(), input("Bash", "same", "")); err != nil || v.Decision != engine.Allow {
					t.Errorf("%+v %v", v, err)
				}
			})
		}
		// The fake clock stands still until all eight wait: the upstream
		// latency cannot end before the last one has asked.
		wg.Wait()
		if n := calls.Load(); n != 1 {
			t.Fatalf("%d upstream calls for 8 identical classifications, want 1", n)
		}
		v, err := c.Classify(t.Context(), input("Bash", "same", ""))
		if err != nil || !v.Cached || !v.Details.Cached || calls.Load() != 1 {
			t.Fatalf("second round: %+v %v, %d calls; want a cache hit", v, err, calls.Load())
		}
		if _, err := c.Classify(t.Context(), input("Bash", "different", "")); err != nil || calls.Load() != 2 {
			t.Fatalf("a different prompt must go upstream: %v, %d calls", err, calls.Load())
		}

		off := testConfig(fake.URL())
		no := false
		off.Cache.Enabled, off.Coalesce = &no, &no
		c2 := newMemClassifier(t, off, hc)
		before := calls.Load()
		var wg2 sync.WaitGroup
		for range 2 {
			wg2.Go(func() {
				if v, err := c2.Classify(t.Context(), input("Bash", "same", "")); err != nil || v.Cached {
					t.Errorf("%+v %v", v, err)
				}
			})
		}
		wg2.Wait()
		if calls.Load()-before != 2 {
			t.Fatalf("cache and coalescing off: %d calls, want 2", calls.Load()-before)
		}
	})
}

func TestSessionBlockLimits(t *testing.T) {
	fake := fakellm.Start(t, blockOn("BAD"))
	c := newTestClassifier(t, testConfig(fake.URL()))
	classify := func(session, cmd string) engine.Verdict {
		t.Helper()
		v, err := c.Classify(t.Context(), input("Bash", cmd, session))
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	// Two blocks, an allow (resets the streak), then three blocks in a row.
	for i, cmd := range []string{"BAD 1", "BAD 2", "ok 1", "BAD 3", "BAD 4", "BAD 5"} {
		if v := classify("s1", cmd); (v.Decision == engine.Deny) != strings.HasPrefix(cmd, "BAD") || v.Decision == engine.Ask {
			t.Fatalf("call %d (%s): %+v", i, cmd, v)
		}
	}
	n := fake.Count()
	v := classify("s1", "ok 2")
	if v.Decision != engine.Ask || !strings.Contains(v.Reason, "3 calls in a row") || fake.Count() != n {
		t.Fatalf("after 3 consecutive blocks: %+v (upstream calls %d)", v, fake.Count()-n)
	}
	// Other sessions are not affected.
	if v := classify("s2", "ok 3"); v.Decision != engine.Allow {
		t.Fatalf("other session: %+v", v)
	}
	// 20 total, never 3 in a row.
	cfg := testConfig(fake.URL())
	cfg.SessionBlockLimits = SessionLimits{Consecutive: 3, Total: 4}
	c = newTestClassifier(t, cfg)
	for i, cmd := range []string{"BAD a", "BAD b", "ok a", "BAD c", "ok b", "BAD d"} {
		if v := classify("s3", cmd); v.Decision == engine.Ask {
			t.Fatalf("call %d asked early: %+v", i, v)
		}
	}
	if v := classify("s3", "ok c"); v.Decision != engine.Ask || !strings.Contains(v.Reason, "4 calls") {
		t.Fatalf("after 4 total blocks: %+v", v)
	}
}

func TestTwoStage(t *testing.T) {
	for _, api := range apis {
		t.Run(api, func(t *testing.T) { testTwoStage(t, api) })
	}
}

func testTwoStage(t *testing.T, api string) {
	fake := fakellm.Start(t, blockOn("BAD"))
	cfg := apiConfig(api, fake.URL())
	cfg.TwoStage = true
	c := newTestClassifier(t, cfg)
	v, err := c.Classify(t.Context(), input("Bash", "fine", ""))
	if err != nil || v.Decision != engine.Allow || v.Details.Stage != "fast" || fake.Count() != 1 {
		t.Fatalf("allow path: %+v %v, %d requests", v, err, fake.Count())
	}
	r := fake.Requests()[0]
	if r.Tool != "classify_fast" || r.MaxTokens > 64 {
		t.Errorf("stage 1 forced %q with %d tokens", r.Tool, r.MaxTokens)
	}
	v, err = c.Classify(t.Context(), input("Bash", "BAD", ""))
	if err != nil || v.Decision != engine.Deny || v.Details.Stage != "full" || fake.Count() != 3 {
		t.Fatalf("block path: %+v %v, %d requests", v, err, fake.Count())
	}
	if r := fake.Requests()[2]; r.Tool != "classify_result" {
		t.Errorf("stage 2 forced %q", r.Tool)
	}
}

func TestFailoverAndSaturation(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := newMemNet(t)
		broken := n.serve(t, "broken.test", fakellm.Always(fakellm.Reply{Fault: fakellm.FaultServerError, RetryAfter: -1}))
		good := n.serve(t, "good.test", fakellm.Always(fakellm.Reply{Reason: "from the second"}))
		hc := WithHTTPClient(n.client())
		c := newMemClassifier(t, testConfig(broken.URL(), good.URL()), hc)
		v, err := c.Classify(t.Context(), input("Bash", "x", ""))
		if err != nil || v.Details.Backend != "secondary" || v.Reason != "from the second" {
			t.Fatalf("failover: %+v %v", v, err)
		}
		if broken.Count() == 0 {
			t.Error("the higher-priority backend was never tried")
		}

		slow := n.serve(t, "slow.test", fakellm.Always(fakellm.Reply{Latency: time.Second}))
		cfg := testConfig(slow.URL())
		cfg.Backends[0].MaxConcurrent = 1
		cfg.QueueTimeout = 50 * time.Millisecond
		c = newMemClassifier(t, cfg, hc)
		done := make(chan struct{})
		go func() {
			defer close(done)
			_, _ = c.Classify(t.Context(), input("Bash", "first", ""))
		}()
		synctest.Wait() // the first call waits on the backend, holding the only slot
		if got := c.Pool().States()[0].InFlight; got != 1 {
			t.Fatalf("%d calls in flight, want the first one", got)
		}
		_, err = c.Classify(t.Context(), input("Bash", "second", ""))
		if !errors.Is(err, ErrSaturated) {
			t.Fatalf("got %v, want ErrSaturated", err)
		}
		<-done
	})
}

// TestFailoverAcrossAPIs: backends of different APIs share one pool; a
// failing Anthropic backend fails over to an OpenAI one and back.
func TestFailoverAcrossAPIs(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := newMemNet(t)
		anth := n.serve(t, "anthropic.test", fakellm.Always(fakellm.Reply{Fault: fakellm.FaultServerError, RetryAfter: -1}))
		chat := n.serve(t, "chat.test", fakellm.Always(fakellm.Reply{Reason: "from chat"}))
		cfg := testConfig(baseURL(anth.URL(), APIAnthropic), chat.URL())
		cfg.Backends[0].API = APIAnthropic
		c := newMemClassifier(t, cfg, WithHTTPClient(n.client()))
		v, err := c.Classify(t.Context(), input("Bash", "x", ""))
		if err != nil || v.Details.Backend != "secondary" || v.Reason != "from chat" {
			t.Fatalf("failover: %+v %v", v, err)
		}
		if anth.Count() != 2 || anth.Requests()[0].API != APIAnthropic || chat.Requests()[0].API != APIChat {
			t.Errorf("anthropic backend asked %d times (want 2: a 5xx is retried once)", anth.Count())
		}
		anth.SetHandler(fakellm.Always(fakellm.Reply{Reason: "from anthropic"}))
		if v, err := c.Classify(t.Context(), input("Bash", "y", "")); err != nil || v.Reason != "from anthropic" {
			t.Fatalf("after recovery: %+v %v", v, err)
		}
	})
}

func TestConfigValidate(t *testing.T) {
	good := testConfig("http://127.0.0.1:1/v1")
	if err := good.Validate(); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		mut  func(*Config)
		want string
	}{
		{"api", func(c *Config) { c.API = "grpc" }, "classifier.api"},
		{"backend api", func(c *Config) { c.Backends[0].API = "messages" }, "classifier.backends[0].api"},
		{"anthropic base_url with /v1", func(c *Config) { c.Backends[0].API = APIAnthropic }, "classifier.backends[0].base_url"},
		{"anthropic by default, base_url with /v1/", func(c *Config) { c.API = APIAnthropic; c.Backends[0].BaseURL += "/" }, "classifier.backends[0].base_url"},
		{"timeout", func(c *Config) { c.Timeout = 0 }, "classifier.timeout"},
		{"on_unavailable", func(c *Config) { c.OnUnavailable = "allow" }, "classifier.on_unavailable"},
		{"base_url", func(c *Config) { c.Backends[0].BaseURL = "ftp://x" }, "classifier.backends[0].base_url"},
		{"model", func(c *Config) { c.Backends[0].Model = "" }, "classifier.backends[0].model"},
		{"dup name", func(c *Config) { c.Backends = append(c.Backends, c.Backends[0]) }, "classifier.backends[1].name"},
		{"concurrency", func(c *Config) { c.Backends[0].MaxConcurrent = -1 }, "classifier.backends[0].max_concurrent"},
		{"attempt as long as the deadline", func(c *Config) { c.Backends[0].Timeout = c.Timeout }, "classifier.backends[0].timeout"},
		{"limits", func(c *Config) { c.SessionBlockLimits.Total = 0 }, "classifier.session_block_limits"},
		{"negative price", func(c *Config) { c.Backends[0].Price.Output = -1 }, "classifier.backends[0].price"},
		{"NaN price", func(c *Config) { c.Backends[0].Price.Input = math.NaN() }, "classifier.backends[0].price"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := testConfig("http://127.0.0.1:1/v1")
			tt.mut(&c)
			if err := c.Validate(); err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("got %v, want an error naming %s", err, tt.want)
			}
		})
	}
	for _, api := range apis {
		c := apiConfig(api, "http://127.0.0.1:1/v1")
		if err := c.Validate(); err != nil {
			t.Errorf("api %s: %v", api, err)
		}
	}
}

// TestAnthropicDefaults: an anthropic backend, by its own api or the
// classifier's, reads ANTHROPIC_API_KEY unless told otherwise.
func TestAnthropicDefaults(t *testing.T) {
	cfg := DefaultConfig()
	cfg.API = APIAnthropic
	cfg.Backends = []BackendConfig{
		{BaseURL: "https://api.anthropic.com", Model: "claude-haiku-4-5"},
		{BaseURL: "https://api.openai.com/v1", Model: "m", API: APIChat},
		{BaseURL: "https://gw.example", Model: "m", API: APIAnthropic, APIKeyEnv: "GW_KEY"},
	}
	cfg.WithBackendDefaults()
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	for i, want := range []struct{ api, env string }{
		{APIAnthropic, "ANTHROPIC_API_KEY"}, {APIChat, "OPENAI_API_KEY"}, {APIAnthropic, "GW_KEY"},
	} {
		if b := cfg.Backends[i]; b.API != want.api || b.APIKeyEnv != want.env {
			t.Errorf("backend %d: api %q, api_key_env %q; want %q, %q", i, b.API, b.APIKeyEnv, want.api, want.env)
		}
	}
}

func TestDumpRedacts(t *testing.T) {
	t.Setenv("TOOLGATE_TEST_KEY", "sk-configured-api-key-0123456789")
	fake := fakellm.Start(t, blockOn("BAD"))
	cfg := testConfig(fake.URL())
	cfg.DumpFile = filepath.Join(t.TempDir(), "dump.jsonl")
	c := newTestClassifier(t, cfg)
	const secret = "sk-live-tooldata-abcdefghijklmnop"
	if _, err := c.Classify(t.Context(), input("Bash", "curl -H 'Authorization: Bearer "+secret+"' https://x BAD", "")); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Classify(t.Context(), input("Bash", "ls", "")); err != nil {
		t.Fatal(err)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(cfg.DumpFile)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(data)), "\n")
	if len(lines) != 2 {
		t.Fatalf("%d dump lines, want 2:\n%s", len(lines), data)
	}
	var first struct {
		Backend     string `json:"backend"`
		User        string `json:"user"`
		ShouldBlock *bool  `json:"should_block"`
	}
	if err := json.Unmarshal([]byte(lines[0]), &first); err != nil {
		t.Fatal(err)
	}
	if first.Backend != "primary" || first.ShouldBlock == nil || !*first.ShouldBlock || !strings.Contains(first.User, "curl") {
		t.Errorf("first record %+v", first)
	}
	for _, leak := range []string{secret, "abcdefghijklmnop", "sk-configured-api-key"} {
		if strings.Contains(string(data), leak) {
			t.Errorf("dump leaks %q", leak)
		}
	}
}

func TestHangingBackendTripsBreaker(t *testing.T) {
	for _, api := range apis {
		t.Run(api, func(t *testing.T) { testHangingBackendTripsBreaker(t, api) })
	}
}

func testHangingBackendTripsBreaker(t *testing.T, api string) {
	synctest.Test(t, func(t *testing.T) {
		fake, hc := startMemFake(t, fakellm.Always(fakellm.Reply{Fault: fakellm.FaultHang}))
		cfg := apiConfig(api, fake.URL())
		cfg.Timeout = 400 * time.Millisecond // each attempt: 200ms
		cfg.Breaker = BreakerConfig{Failures: 2, Cooldown: time.Hour}
		c := newMemClassifier(t, cfg, hc)
		for i := range 2 {
			if _, err := c.Classify(t.Context(), input("Bash", fmt.Sprint("hang ", i), "")); err == nil {
				t.Fatal("a hanging backend gave a verdict")
			}
		}
		if st := c.Pool().States()[0].Breaker; st != "open" {
			t.Fatalf("breaker %s after two timeouts, want open", st)
		}
		n := fake.Count()
		_, err := c.Classify(t.Context(), input("Bash", "hang 3", ""))
		if !errors.Is(err, ErrNoBackend) || fake.Count() != n {
			t.Fatalf("with the breaker open: %v, %d new requests; want ErrNoBackend without asking the backend", err, fake.Count()-n)
		}
	})
}

func TestHangFailsOverAtDefaultRatio(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := newMemNet(t)
		hang := n.serve(t, "hang.test", fakellm.Always(fakellm.Reply{Fault: fakellm.FaultHang}))
		good := n.serve(t, "good.test", fakellm.Always(fakellm.Reply{Reason: "from the second"}))
		cfg := testConfig(hang.URL(), good.URL())
		cfg.Timeout = time.Second
		for i := range cfg.Backends {
			cfg.Backends[i].Timeout = 0 // the default: half the classifier timeout
		}
		c := newMemClassifier(t, cfg, WithHTTPClient(n.client()))
		v, err := c.Classify(t.Context(), input("Bash", "x", ""))
		if err != nil || v.Details.Backend != "secondary" {
			t.Fatalf("got %+v %v, want the second backend's verdict after the first hung", v, err)
		}
		if hang.Count() != 1 {
			t.Errorf("hanging backend asked %d times, want once (no retry that cannot fit)", hang.Count())
		}
	})
}

func TestRefusedRequestsDoNotOpenTheBreaker(t *testing.T) {
	for _, api := range apis {
		t.Run(api, func(t *testing.T) { testRefusedRequestsDoNotOpenTheBreaker(t, api) })
	}
}

func testRefusedRequestsDoNotOpenTheBreaker(t *testing.T, api string) {
	refusing := fakellm.Start(t, fakellm.Always(fakellm.Reply{Fault: fakellm.FaultBadRequest}))
	other := fakellm.Start(t, fakellm.Always(fakellm.Reply{}))
	cfg := apiConfig(api, refusing.URL(), other.URL())
	cfg.Breaker = BreakerConfig{Failures: 2, Cooldown: time.Hour}
	c := newTestClassifier(t, cfg)
	for i := range 4 {
		_, err := c.Classify(t.Context(), input("Bash", fmt.Sprint("too long ", i), ""))
		if !errors.Is(err, ErrRequestRefused) {
			t.Fatalf("call %d: %v, want a refused request", i, err)
		}
	}
	if st := c.Pool().States()[0].Breaker; st != "closed" {
		t.Fatalf("breaker %s after refused requests, want closed", st)
	}
	if other.Count() != 0 {
		t.Errorf("a refused request was failed over %d times", other.Count())
	}
	refusing.SetHandler(fakellm.Always(fakellm.Reply{Reason: "fine now"}))
	if v, err := c.Classify(t.Context(), input("Bash", "ok", "")); err != nil || v.Details.Backend != "primary" {
		t.Fatalf("after refusals: %+v %v", v, err)
	}
}

func TestCoalescedJoinerKeepsItsOwnDeadline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fake, hc := startMemFake(t, fakellm.Always(fakellm.Reply{Latency: 300 * time.Millisecond}))
		c := newMemClassifier(t, testConfig(fake.URL()), hc)
		short, cancel := context.WithTimeout(t.Context(), 100*time.Millisecond)
		defer cancel()
		firstErr := make(chan error, 1)
		go func() {
			_, err := c.Classify(short, input("Bash", "same", ""))
			firstErr <- err
		}()
		synctest.Wait() // the first call waits on the backend's latency
		if n := fake.Count(); n != 1 {
			t.Fatalf("%d requests reached the backend, want the first call's", n)
		}
		v, err := c.Classify(t.Context(), input("Bash", "same", ""))
		if err != nil || v.Decision != engine.Allow {
			t.Fatalf("joiner: %+v %v; another caller's short deadline must not fail it", v, err)
		}
		if err := <-firstErr; !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("first caller: %v, want its own deadline", err)
		}
		if fake.Count() != 1 {
			t.Errorf("%d upstream calls, want 1 shared", fake.Count())
		}
	})
}

func TestRetryAfterHeader(t *testing.T) {
	tests := []struct {
		name   string
		header map[string]string
		want   time.Duration
	}{
		{"none", nil, 0},
		{"ms first", map[string]string{"Retry-After-Ms": "250", "Retry-After": "9"}, 250 * time.Millisecond},
		{"seconds", map[string]string{"Retry-After": "2"}, 2 * time.Second},
		{"huge seconds are clamped, not dropped", map[string]string{"Retry-After": "86400"}, time.Hour},
		{"huge ms are clamped", map[string]string{"Retry-After-Ms": "1e300"}, time.Hour},
		{"garbage", map[string]string{"Retry-After": "soon"}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := http.Header{}
			for k, v := range tt.header {
				h.Set(k, v)
			}
			if got := retryAfter(h); got != tt.want {
				t.Fatalf("got %s, want %s", got, tt.want)
			}
		})
	}
}

// TestCacheExpiry: an entry answers for its TTL and not after, on the
// fake clock of a synctest bubble (which moves only when told to here).
func TestCacheExpiry(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var calls atomic.Int32
		fake, hc := startMemFake(t, func(r *fakellm.Request) fakellm.Reply {
			calls.Add(1)
			return fakellm.Reply{}
		})
		cfg := testConfig(fake.URL())
		cfg.Cache.TTL = time.Minute
		c := newMemClassifier(t, cfg, hc)
		start := time.Now()
		classify := func(wantCached bool) {
			t.Helper()
			v, err := c.Classify(t.Context(), input("Bash", "same", ""))
			if err != nil || v.Cached != wantCached {
				t.Fatalf("%s after the first call: %+v %v; want cached %t", time.Since(start), v, err, wantCached)
			}
		}
		classify(false)
		time.Sleep(cfg.Cache.TTL - time.Nanosecond) // synctest: the fake clock, no real wait
		classify(true)
		time.Sleep(2 * time.Nanosecond) // synctest: the fake clock; now past the TTL
		classify(false)
		if n := calls.Load(); n != 2 {
			t.Fatalf("%d upstream calls, want 2", n)
		}
		if n := c.cache.Len(); n != 1 {
			t.Fatalf("cache holds %d entries, want the expired one replaced", n)
		}
		classify(true) // the replacement answers
	})
}
