package classifier

import (
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"go.uber.org/zap"

	"github.com/toolgate/toolgate/classifier/policy"
	"github.com/toolgate/toolgate/engine"
	"github.com/toolgate/toolgate/fakellm"
)

// categoryRules have one category of each kind, a free-text soft deny
// and a free-text allow.
var categoryRules = Rules{
	Categories: []policy.Category{
		{Name: "credential_exposure", Kind: policy.HardDeny, Definition: "Reading or sending secrets.", MustName: "the secret"},
		{Name: "production_deploy", Kind: policy.SoftDeny, Definition: "Deploying to production.", NotCovered: []string{"a local dev server"}, MustName: "the environment"},
		{Name: "ordinary_work", Kind: policy.Allow, Definition: "Routine work in the project."},
	},
	SoftDeny: []string{"Deleting production data."},
	Allow:    []string{"Running the project's tests."},
}

func categoryClassifier(t *testing.T, api string, h fakellm.Handler, twoStage bool, opts ...Option) (*Classifier, *fakellm.Server) {
	t.Helper()
	t.Setenv("TOOLGATE_TEST_KEY", "sk-test-123")
	fake := fakellm.Start(t, h)
	cfg := apiConfig(api, fake.URL())
	cfg.TwoStage = twoStage
	cfg.Cache.Enabled = new(false)
	c, err := New(cfg, map[string]Rules{"default": categoryRules}, zap.NewNop(), opts...)
	if err != nil {
		t.Fatal(err)
	}
	return c, fake
}

// TestCategoryNamed: every verdict carries the category the model named
// and its kind; a block naming none of the policy's still blocks and is
// recorded as unknown; an allow naming none, or a deny category, is not
// a verdict and fails closed. For each API, in one and two stages.
func TestCategoryNamed(t *testing.T) {
	cases := []struct {
		name     string
		reply    fakellm.Reply
		decision engine.Decision
		category string
		kind     policy.Kind
		err      bool // not a verdict: the check fails closed
	}{
		{"block in a hard deny", fakellm.Reply{Block: true, Category: "credential_exposure"}, engine.Deny, "credential_exposure", policy.HardDeny, false},
		{"block in a soft deny", fakellm.Reply{Block: true, Category: "production_deploy"}, engine.Deny, "production_deploy", policy.SoftDeny, false},
		{"block in a free-text list", fakellm.Reply{Block: true, Category: policy.ExtraSoftDeny}, engine.Deny, policy.ExtraSoftDeny, policy.SoftDeny, false},
		{"block naming no category", fakellm.Reply{Block: true, Category: "made_up <script>"}, engine.Deny, policy.Unknown, "", false},
		{"block naming nothing", fakellm.Reply{Block: true, Category: " "}, engine.Deny, policy.Unknown, "", false},
		{"allow in an allow category", fakellm.Reply{Category: "ordinary_work"}, engine.Allow, "ordinary_work", policy.Allow, false},
		{"allow in the free-text allow list", fakellm.Reply{Category: policy.ExtraAllow}, engine.Allow, policy.ExtraAllow, policy.Allow, false},
		{"allow naming no category", fakellm.Reply{Category: "made_up"}, 0, "", "", true},
		{"allow naming a hard deny", fakellm.Reply{Category: "credential_exposure"}, 0, "", "", true},
		{"allow naming a soft deny", fakellm.Reply{Category: "production_deploy"}, 0, "", "", true},
		{"allow naming unknown", fakellm.Reply{Category: policy.Unknown}, 0, "", "", true},
	}
	for _, api := range apis {
		for _, twoStage := range []bool{false, true} {
			for _, tc := range cases {
				t.Run(api+"/"+map[bool]string{false: "single", true: "two-stage"}[twoStage]+"/"+tc.name, func(t *testing.T) {
					c, _ := categoryClassifier(t, api, fakellm.Always(tc.reply), twoStage)
					v, err := c.Classify(t.Context(), input("Bash", "make deploy", ""))
					if tc.err {
						var ce *engine.ClassifierError
						if !errors.As(err, &ce) || !errors.Is(err, ErrUnusableAnswer) || v.Decision == engine.Allow {
							t.Fatalf("got %+v, %v; want a ClassifierError of an unusable answer", v, err)
						}
						return
					}
					if err != nil {
						t.Fatal(err)
					}
					if v.Decision != tc.decision || v.Details == nil || v.Details.Category != tc.category || v.Details.CategoryKind != string(tc.kind) {
						t.Fatalf("got %+v %+v; want %s in %s (%s)", v, v.Details, tc.decision, tc.category, tc.kind)
					}
				})
			}
		}
	}
}

// TestCategorySchema: both forced functions constrain category to the
// names in force, in the policy's order (kinds in order, the free-text
// lists' categories after the policy's own), and require it.
func TestCategorySchema(t *testing.T) {
	c, fake := categoryClassifier(t, APIChat, fakellm.Sequence(fakellm.Reply{Block: true, Category: "production_deploy"}), true)
	if _, err := c.Classify(t.Context(), input("Bash", "make deploy", "")); err != nil {
		t.Fatal(err)
	}
	want := []string{"credential_exposure", "production_deploy", "ordinary_work", policy.ExtraSoftDeny, policy.ExtraAllow}
	reqs := fake.Requests()
	if len(reqs) != 2 {
		t.Fatalf("%d requests, want the fast and the full one", len(reqs))
	}
	for _, r := range reqs {
		def := r.ToolDef(r.Tool)
		var schema struct {
			Properties map[string]struct {
				Enum []string `json:"enum"`
			} `json:"properties"`
			Required []string `json:"required"`
		}
		if def == nil || json.Unmarshal(def.Parameters, &schema) != nil {
			t.Fatalf("%s: no schema", r.Tool)
		}
		if got := schema.Properties["category"].Enum; !slices.Equal(got, want) {
			t.Errorf("%s: category enum %q, want %q", r.Tool, got, want)
		}
		if !slices.Contains(schema.Required, "category") {
			t.Errorf("%s: category not required: %q", r.Tool, schema.Required)
		}
	}
}

// TestCategoryMetrics: verdicts are counted by the category they name,
// cached ones included, and an unknown name never becomes a label.
func TestCategoryMetrics(t *testing.T) {
	reg := prometheus.NewRegistry()
	m, err := NewMetrics(reg)
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("TOOLGATE_TEST_KEY", "sk-test-123")
	fake := fakellm.Start(t, func(r *fakellm.Request) fakellm.Reply {
		switch {
		case strings.Contains(r.User, "deploy"):
			return fakellm.Reply{Block: true, Category: "production_deploy"}
		case strings.Contains(r.User, "weird"):
			return fakellm.Reply{Block: true, Category: "attacker_chosen_label"}
		}
		return fakellm.Reply{Category: "ordinary_work"}
	})
	c, err := New(testConfig(fake.URL()), map[string]Rules{"default": categoryRules}, zap.NewNop(), WithMetrics(m))
	if err != nil {
		t.Fatal(err)
	}
	for _, cmd := range []string{"make deploy", "make deploy", "go test ./...", "weird thing"} {
		if _, err := c.Classify(t.Context(), input("Bash", cmd, "")); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		category, decision string
		want               float64
	}{{"production_deploy", "deny", 2}, {"ordinary_work", "allow", 1}, {policy.Unknown, "deny", 1}} {
		if got := testutil.ToFloat64(m.decisions.WithLabelValues(tc.category, tc.decision)); got != tc.want {
			t.Errorf("decisions{%s,%s} = %v, want %v", tc.category, tc.decision, got, tc.want)
		}
	}
	if n := testutil.CollectAndCount(m.decisions); n != 3 {
		t.Errorf("%d series, want 3 (no label from the model's own text)", n)
	}
}

// TestCachedInputTokens: the part of the prompt a provider read from its
// cache is reported apart, from each API's usage (OpenAI's
// cached_tokens, Anthropic's cache_read_input_tokens).
func TestCachedInputTokens(t *testing.T) {
	for _, api := range apis {
		c, _ := categoryClassifier(t, api, fakellm.Always(fakellm.Reply{InputTokens: 100, CacheReadTokens: 80, OutputTokens: 5}), false)
		v, err := c.Classify(t.Context(), input("Bash", "go build ./...", ""))
		if err != nil {
			t.Fatal(err)
		}
		wantIn := int64(100)
		if api == APIAnthropic {
			wantIn = 180 // input_tokens are those after the cached prefix
		}
		if d := v.Details; d.InputTokens != wantIn || d.CachedInputTokens != 80 || d.OutputTokens != 5 {
			t.Errorf("%s: tokens %d in (%d cached), %d out; want %d (80), 5", api, d.InputTokens, d.CachedInputTokens, d.OutputTokens, wantIn)
		}
	}
	// Simulated by the fake from the second call on, for a long enough
	// system prompt (the default policy's).
	rules, _ := defaultRules(t)
	for _, api := range apis {
		t.Setenv("TOOLGATE_TEST_KEY", "sk-test-123")
		fake := fakellm.Start(t, nil)
		cfg := apiConfig(api, fake.URL())
		cfg.Cache.Enabled = new(false)
		c, err := New(cfg, rules, zap.NewNop())
		if err != nil {
			t.Fatal(err)
		}
		var cached []int64
		for _, cmd := range []string{"npm run build", "npm test"} {
			v, err := c.Classify(t.Context(), input("Bash", cmd, ""))
			if err != nil {
				t.Fatal(err)
			}
			cached = append(cached, v.Details.CachedInputTokens)
		}
		if cached[0] != 0 || cached[1] < 1000 {
			t.Errorf("%s: cached input tokens %v; want none on the first call, the system prompt's on the second", api, cached)
		}
	}
}

// TestCategoryFastSlip: in two stages, a quick pass that allows in no
// allow category is not the answer: the full stage, which reasons
// first, decides; and the slip never counts against the breaker.
func TestCategoryFastSlip(t *testing.T) {
	for _, full := range []fakellm.Reply{{Category: "ordinary_work"}, {Block: true, Category: "production_deploy"}} {
		c, fake := categoryClassifier(t, APIChat, fakellm.Sequence(fakellm.Reply{Category: "production_deploy"}, full), true)
		v, err := c.Classify(t.Context(), input("Bash", "make deploy", ""))
		if err != nil || v.Details.Stage != "full" || v.Details.Category != full.Category || (v.Decision == engine.Allow) == full.Block {
			t.Errorf("full stage %+v: got %+v %+v, %v", full, v, v.Details, err)
		}
		if n := len(fake.Requests()); n != 2 {
			t.Errorf("%d requests, want the quick pass and the full one", n)
		}
	}
}

// TestCachedTokensClamped: a usage claiming more cached tokens than
// input ones is held to the input.
func TestCachedTokensClamped(t *testing.T) {
	body := `{"choices":[{"finish_reason":"tool_calls","message":{"tool_calls":[{"type":"function","function":{"name":"classify_result",` +
		`"arguments":"{\"thinking\":\"t\",\"category\":\"ordinary_work\",\"should_block\":false,\"reason\":\"r\"}"}}]}}],` +
		`"usage":{"prompt_tokens":50,"completion_tokens":5,"prompt_tokens_details":{"cached_tokens":80}}}`
	_, u, err := decodeAnswer(APIChat, fullTool, []byte(body), compileInstructions(testRules))
	if err != nil || u != (usage{in: 50, out: 5, cached: 50}) {
		t.Fatalf("usage %+v, %v; want 50 in (50 cached), 5 out", u, err)
	}
}
