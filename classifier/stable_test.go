package classifier

import (
	"bytes"
	"encoding/json"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/tiktoken-go/tokenizer"
	"go.uber.org/zap"

	"github.com/toolgate/toolgate/config"
	"github.com/toolgate/toolgate/engine"
	"github.com/toolgate/toolgate/fakellm"
)

// defaultRules are the classifier instructions of the embedded default
// configuration's policies, loaded afresh.
func defaultRules(t *testing.T) (map[string]Rules, string) {
	t.Helper()
	cfg, err := config.Default()
	if err != nil {
		t.Fatal(err)
	}
	_, version, err := cfg.Served()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]Rules{}
	for name, p := range cfg.Policies {
		out[name] = p.AutoMode.Classifier()
	}
	return out, version
}

// stableCalls differ in everything a call can: tool, input (one cut to
// fit), directory, mode, session, transcript and the local stages' notes.
func stableCalls() []*engine.ClassifyInput {
	return []*engine.ClassifyInput{
		input("Bash", "npm run build", "s1"),
		input("Bash", "git push --force origin main", "s2"),
		{Request: &engine.Request{SessionID: "s3", Tool: engine.ToolCall{Name: "Edit", Input: map[string]any{"file_path": "/srv/q7/registry.conf", "old_string": "a", "new_string": "b"}},
			WorkingDirectory: "/home/dev/other", Mode: engine.ModeAcceptEdits,
			Transcript: []engine.TranscriptEntry{{Role: engine.RoleUser, Text: "point the registry at 10.11.12.13"}}},
			Kind: engine.KindEdit, Policy: "default", Notes: []string{"edit target /srv/q7/registry.conf is outside the project"}},
		input("Bash", "echo "+strings.Repeat("x", 20000), "s4"),
		{Request: &engine.Request{Tool: engine.ToolCall{Name: "mcp__notes__create_doc", Input: map[string]any{"title": "t"}}}, Kind: engine.KindUnknown, Policy: "default"},
	}
}

// TestSystemPromptStable: under one policy version, every side-query
// sends the same system prompt and the same forced function, byte for
// byte, whatever the call, through each API, from classifiers built
// apart (a reload, another replica): the prefix providers cache stays
// the same, and the policy is in it. The call's data is only in the user
// message.
func TestSystemPromptStable(t *testing.T) {
	t.Setenv("TOOLGATE_TEST_KEY", "sk-test-123")
	for _, api := range apis {
		t.Run(api, func(t *testing.T) {
			fake := fakellm.Start(t, blockOn("force"))
			var versions []string
			for range 2 {
				rules, version := defaultRules(t)
				versions = append(versions, version)
				for _, twoStage := range []bool{false, true} {
					cfg := apiConfig(api, fake.URL())
					cfg.TwoStage = twoStage
					c, err := New(cfg, rules, zap.NewNop())
					if err != nil {
						t.Fatal(err)
					}
					for _, in := range stableCalls() {
						if _, err := c.Classify(t.Context(), in); err != nil {
							t.Fatal(err)
						}
					}
				}
			}
			if versions[0] != versions[1] {
				t.Fatalf("the default policy loaded twice has two versions: %s", versions)
			}
			reqs := fake.Requests()
			if len(reqs) < 2*2*len(stableCalls()) {
				t.Fatalf("%d requests", len(reqs))
			}
			tools := map[string][]byte{}
			for i, r := range reqs {
				if r.System != reqs[0].System {
					t.Fatalf("request %d: the system prompt differs from request 0's", i)
				}
				raw := r.ToolDef(r.Tool).Raw
				if prev, ok := tools[r.Tool]; ok && !bytes.Equal(prev, raw) {
					t.Fatalf("request %d: the %s definition differs: %s vs %s", i, r.Tool, raw, prev)
				}
				tools[r.Tool] = raw
			}
			sys := reqs[0].System
			rules, _ := defaultRules(t)
			for _, cat := range rules["default"].InForce() {
				if !strings.Contains(sys, "### "+cat.Name+"\n") {
					t.Errorf("category %s is not in the system prompt", cat.Name)
				}
			}
			for _, call := range []string{"npm run build", "/srv/q7", "10.11.12.13", "xxxxxxxx", "mcp__notes", "/home/dev/other"} {
				if strings.Contains(sys, call) {
					t.Errorf("the system prompt holds the call's %q", call)
				}
			}
		})
	}
}

// TestSystemPromptSize measures the default policy's system prompt in
// bytes and in tokens of o200k_base (the encoding of OpenAI's GPT-4o and
// GPT-4.1 models; Claude's tokenizer is not public) and holds
// docs/policy.md to the figures it states, and the prompt to its budget.
func TestSystemPromptSize(t *testing.T) {
	rules, _ := defaultRules(t)
	ins := compileInstructions(rules["default"])
	enc, err := tokenizer.Get(tokenizer.O200kBase)
	if err != nil {
		t.Fatal(err)
	}
	count := func(s string) int {
		ids, _, err := enc.Encode(s)
		if err != nil {
			t.Fatal(err)
		}
		return len(ids)
	}
	sysTokens := count(ins.system)
	full, err := json.Marshal(ins.full)
	if err != nil {
		t.Fatal(err)
	}
	fullTokens := count(string(full))
	t.Logf("system prompt: %d bytes, %d tokens; classify_result schema: %d tokens; %d categories",
		len(ins.system), sysTokens, fullTokens, len(rules["default"].InForce()))
	const budget = 10000
	if sysTokens+fullTokens > budget {
		t.Errorf("the cached prefix is %d tokens, over the budget of %d", sysTokens+fullTokens, budget)
	}

	doc, err := os.ReadFile("../docs/policy.md")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`system prompt is ([0-9,]+) bytes, ([0-9,]+) tokens`).FindSubmatch(doc)
	if m == nil {
		t.Fatal(`docs/policy.md does not state "system prompt is N bytes, T tokens"`)
	}
	num := func(b []byte) int {
		n, err := strconv.Atoi(strings.ReplaceAll(string(b), ",", ""))
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	// Within 2%: a reworded sentence needs no new figure; a new category does.
	if b, tok := num(m[1]), num(m[2]); !near(b, len(ins.system)) || !near(tok, sysTokens) {
		t.Errorf("docs/policy.md says the system prompt is %d bytes, %d tokens; it is %d bytes, %d tokens", b, tok, len(ins.system), sysTokens)
	}
	s := regexp.MustCompile(`schema adds about ([0-9,]+) more`).FindSubmatch(doc)
	if s == nil || !near(num(s[1]), fullTokens) {
		t.Errorf("docs/policy.md should say the classify_result schema adds about %d more (tokens)", fullTokens)
	}
}

func near(stated, measured int) bool {
	d := stated - measured
	if d < 0 {
		d = -d
	}
	return d*50 <= measured
}
