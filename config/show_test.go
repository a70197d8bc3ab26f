package config

import (
	"fmt"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func TestMarshalShow(t *testing.T) {
	vars := env(map[string]string{
		"LLM_URL":        "https://svc:topsecret-1@llm.internal/v1",
		"PROXY_PASSWORD": "topsecret-2",
		"MODEL":          "gpt-topsecret-3",
	})
	dir := t.TempDir()
	settings := writeAt(t, dir, "claude.json", `{"permissions": {"deny": ["Bash(make deploy)"]}, "autoMode": {"soft_deny": ["Deleting buckets."]}}`)
	cfgPath := writeAt(t, dir, "toolgate.yaml", `
classifier:
  dump_file: /tmp/$$dump.jsonl
  backends:
    - {name: env-url, base_url: "${LLM_URL}", model: m}
    - {name: env-password, base_url: "https://bob:${PROXY_PASSWORD}@proxy.internal/v1", model: "${MODEL}"}
    - {name: written-password, base_url: "https://bob:hunter2@llm.example/v1", model: m}
    - {name: token-user, base_url: "https://ghp_abcdefghijklmnopqrstuvwxyz@llm.example/v1", model: m}
    - {name: query-key, base_url: "https://llm.example/v1?api-version=2&api-key=topsecret-4", model: m}
server:
  tracing:
    otlp_endpoint: "https://u:topsecret-5@otel.example:4318"
policies:
  default:
    claude_settings: claude.json
    permissions: {deny: ["Bash(echo $$ ${HOME})"]}
`)
	c, err := load(cfgPath, vars)
	if err != nil {
		t.Fatal(err)
	}
	_, cls, err := sections(c)
	if err != nil {
		t.Fatal(err)
	}
	out, err := c.MarshalShow()
	if err != nil {
		t.Fatal(err)
	}
	shown := string(out)
	for _, secret := range []string{"topsecret", "hunter2", "ghp_"} {
		if strings.Contains(shown, secret) {
			t.Errorf("show printed %q:\n%s", secret, shown)
		}
	}
	for _, want := range []string{
		"base_url: ${LLM_URL}",
		"base_url: https://bob:xxxxx@proxy.internal/v1",
		"model: ${MODEL}",
		"base_url: https://bob:xxxxx@llm.example/v1",
		"base_url: https://xxxxx@llm.example/v1",
		"base_url: https://llm.example/v1?api-version=2&api-key=xxxxx",
		"otlp_endpoint: https://u:xxxxx@otel.example:4318",
		"dump_file: /tmp/$$dump.jsonl",
		"Bash(echo $$ ${HOME})",
		"# layers: built-in (toolgate config defaults), then " + cfgPath + ", then " + settings,
		"- Bash(make deploy) # " + settings,
		"- Bash(curl * | sh) # built-in",
	} {
		if !strings.Contains(shown, want) {
			t.Errorf("show output lacks %q:\n%s", want, shown)
		}
	}
	if strings.Contains(shown, "claude_settings") {
		t.Errorf("show output names claude_settings; loading it would import the rules twice:\n%s", shown)
	}

	// What show prints loads back, in the same environment, to the same
	// configuration (but for the masked passwords) without reading the
	// settings file again.
	again, err := load(writeAt(t, t.TempDir(), "shown.yaml", shown), vars)
	if err != nil {
		t.Fatalf("show output does not load: %v\n%s", err, shown)
	}
	if len(again.Files()) != 1 {
		t.Errorf("files %q", again.Files())
	}
	if !samePolicies(again, c) {
		t.Errorf("policies changed:\n%+v\n%+v", again.enginePolicies(), c.enginePolicies())
	}
	_, clsAgain, err := sections(again)
	if err != nil {
		t.Fatal(err)
	}
	a, b := *clsAgain, *cls
	a.Backends, b.Backends = a.Backends[:1], b.Backends[:1]
	if !reflect.DeepEqual(a, b) || clsAgain.Backends[1].Model != "gpt-topsecret-3" {
		t.Errorf("classifier changed:\n%+v\n%+v", clsAgain, cls)
	}
}

func TestMarshalShowDefault(t *testing.T) {
	c, err := Default()
	if err != nil {
		t.Fatal(err)
	}
	out, err := c.MarshalShow()
	if err != nil {
		t.Fatal(err)
	}
	again, err := load(writeAt(t, t.TempDir(), "shown.yaml", string(out)), env(nil))
	if err != nil {
		t.Fatal(err)
	}
	if !samePolicies(again, c) || len(c.Files()) != 0 {
		t.Error("the default does not survive show")
	}
}

// samePolicies compares what the engine and the classifier get, with nil
// and empty lists alike (YAML does not tell them apart).
func samePolicies(a, b *Config) bool {
	auto := func(c *Config) map[string]AutoMode {
		out := map[string]AutoMode{}
		for name, p := range c.Policies {
			out[name] = p.AutoMode
		}
		return out
	}
	return fmt.Sprintf("%+v %+v", a.enginePolicies(), auto(a)) == fmt.Sprintf("%+v %+v", b.enginePolicies(), auto(b))
}

func TestMaskUserinfo(t *testing.T) {
	for _, tt := range []struct{ in, want string }{
		{"https://llm.example/v1", "https://llm.example/v1"},
		{"https://bob:pw@llm.example/v1", "https://bob:xxxxx@llm.example/v1"},
		{"https://bob:p@ss@llm.example", "https://bob:xxxxx@llm.example"},
		{"https://token@llm.example/v1?x=1", "https://xxxxx@llm.example/v1?x=1"},
		{"https://bob:${PW}@llm.example/${PATH}", "https://bob:xxxxx@llm.example/${PATH}"},
		{"https://llm.example/v1/@user", "https://llm.example/v1/@user"},
		{"https://llm.example?u=a@b", "https://llm.example?u=a@b"},
		{"${URL}", "${URL}"},
		{filepath.Join("no", "scheme@host"), filepath.Join("no", "scheme@host")},
	} {
		if got := maskUserinfo(tt.in); got != tt.want {
			t.Errorf("maskUserinfo(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}
