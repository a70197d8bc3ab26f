package app

import (
	"os"
	"strings"
	"testing"

	"google.golang.org/protobuf/types/known/structpb"

	"github.com/toolgate/toolgate/fakellm"
	pb "github.com/toolgate/toolgate/gen/toolgate/v1"
)

// startCentre runs a central toolgate classifying with fake, with an
// audit log; with fake nil it has no classifier.
func startCentre(t *testing.T, fake *fakellm.Server, audit string) *running {
	t.Helper()
	body := "server:\n  listen: 127.0.0.1:0\n  metrics_listen: \"\"\n  audit: {file: " + audit + "}\n"
	if fake != nil {
		body += "classifier:\n  backends:\n    - {name: fake, base_url: \"" + fake.URL() + "\", model: m}\n"
	}
	return start(t, loadConfig(t, configFile(t, t.TempDir(), body+policyNoRules)))
}

// startLocal runs a local toolgate whose upstream is addr, with extra
// YAML (a classifier section without backends).
func startLocal(t *testing.T, addr, extra string) *running {
	t.Helper()
	body := "server:\n  listen: 127.0.0.1:0\n  metrics_listen: 127.0.0.1:0\n" + extra + "upstream:\n  address: " + addr + "\n" + policyNoRules
	return start(t, loadConfig(t, configFile(t, t.TempDir(), body)))
}

// TestLocalServerClassifiesThroughItsUpstream: a local server with an
// upstream and no model decides locally what it can, and the centre's
// classifier answers the rest; the centre records it in its audit log;
// the session's block counters are the local server's; a centre that is
// gone fails the local server's checks closed with their own source.
func TestLocalServerClassifiesThroughItsUpstream(t *testing.T) {
	fake := fakellm.Start(t, nil)
	audit := t.TempDir() + "/audit.jsonl"
	centre := startCentre(t, fake, audit)
	local := startLocal(t, centre.app.Addr().String(), "")
	if local.app.Classifier() != nil {
		t.Fatal("the local server built a model classifier")
	}
	dir := t.TempDir()
	auto := pb.PermissionMode_PERMISSION_MODE_AUTO

	if res := local.check(t, t.Context(), "Read", map[string]any{"file_path": "/usr/include/stdio.h"}, dir, auto); res.GetSource() != pb.DecisionSource_DECISION_SOURCE_SAFE_TOOL {
		t.Errorf("safe read: %v", res)
	}
	if fake.Count() != 0 {
		t.Fatalf("a local decision reached the model (%d calls)", fake.Count())
	}
	res := local.check(t, t.Context(), "Bash", map[string]any{"command": "npm install left-pad"}, dir, auto)
	if res.GetSource() != pb.DecisionSource_DECISION_SOURCE_CLASSIFIER || res.GetDecision() != pb.Decision_DECISION_ALLOW ||
		res.GetClassifier().GetBackend() != "fake" || fake.Count() != 1 {
		t.Fatalf("classified through the upstream: %v (model calls %d)", res, fake.Count())
	}
	if u := fake.Requests()[0].User; !strings.Contains(u, "npm install left-pad") {
		t.Errorf("the model did not see the call: %q", u)
	}
	waitFor(t, "the centre's audit record", func() bool {
		b, _ := os.ReadFile(audit)
		return strings.Contains(string(b), `"msg":"upstream classification"`) && strings.Contains(string(b), "left-pad")
	})

	// Three blocks in a row in one session: the fourth call of it is
	// asked about here, and the centre is not asked.
	session := func(cmd string) *pb.CheckResponse {
		t.Helper()
		in := map[string]any{"command": cmd}
		r, err := local.client.Check(t.Context(), &pb.CheckRequest{SessionId: "s1", Tool: tool(t, "Bash", in), WorkingDirectory: dir})
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	for i := range 3 {
		if r := session("curl " + fakellm.BlockMarker + " " + string(rune('a'+i))); r.GetDecision() != pb.Decision_DECISION_DENY {
			t.Fatalf("block %d: %v", i, r)
		}
	}
	calls := fake.Count()
	r := session("curl example.com/x")
	if r.GetDecision() != pb.Decision_DECISION_ASK || !strings.Contains(r.GetReason(), "in a row") || fake.Count() != calls {
		t.Fatalf("over the session's limit: %v (model calls %d, were %d)", r, fake.Count(), calls)
	}
	// Another session is not held by it.
	if r, err := local.client.Check(t.Context(), &pb.CheckRequest{SessionId: "s2", Tool: tool(t, "Bash", map[string]any{"command": "curl example.com/x"}), WorkingDirectory: dir}); err != nil || r.GetDecision() != pb.Decision_DECISION_ALLOW {
		t.Fatalf("another session: %v %v", r, err)
	}

	body := scrape(t, local.app.MetricsAddr().String())
	if !strings.Contains(body, `toolgate_upstream_requests_total{result="ok"} 5`) || !strings.Contains(body, "toolgate_upstream_request_duration_seconds_count 5") {
		t.Errorf("upstream metrics:\n%s", grep(body, "toolgate_upstream"))
	}
	if strings.Contains(body, `toolgate_classifier_requests_total{`) {
		t.Errorf("the local server reports model calls:\n%s", grep(body, "toolgate_classifier_requests_total"))
	}

	// The centre gone: classifier-bound checks fail closed; local ones
	// are still decided.
	if err := centre.stop(); err != nil {
		t.Fatal(err)
	}
	res = local.check(t, t.Context(), "Bash", map[string]any{"command": "npm install left-pad"}, dir, auto)
	if res.GetDecision() != pb.Decision_DECISION_DENY || res.GetSource() != pb.DecisionSource_DECISION_SOURCE_UPSTREAM_UNAVAILABLE ||
		!strings.Contains(res.GetReason(), "upstream") {
		t.Fatalf("centre down: %v", res)
	}
	if res := local.check(t, t.Context(), "Read", map[string]any{"file_path": "/usr/include/stdio.h"}, dir, auto); res.GetDecision() != pb.Decision_DECISION_ALLOW {
		t.Errorf("safe read with the centre down: %v", res)
	}
	if !strings.Contains(scrape(t, local.app.MetricsAddr().String()), `toolgate_upstream_requests_total{result="error"} 1`) {
		t.Errorf("the failed call is not counted:\n%s", grep(scrape(t, local.app.MetricsAddr().String()), "toolgate_upstream"))
	}
}

// TestLocalServerUpstreamFailures: on_unavailable: ask answers a centre
// that is down with ASK; a centre without a classifier answers as the
// engine does without one; a centre whose model fails answers
// classifier_unavailable, and the local server's on_unavailable decides.
func TestLocalServerUpstreamFailures(t *testing.T) {
	dir := t.TempDir()
	npm := map[string]any{"command": "npm install left-pad"}
	auto := pb.PermissionMode_PERMISSION_MODE_AUTO

	gone := startCentre(t, nil, t.TempDir()+"/audit.jsonl")
	addr := gone.app.Addr().String()
	none := startLocal(t, addr, "")
	if res := none.check(t, t.Context(), "Bash", npm, dir, auto); res.GetDecision() != pb.Decision_DECISION_ASK || res.GetSource() != pb.DecisionSource_DECISION_SOURCE_NO_CLASSIFIER {
		t.Errorf("centre without a classifier: %v", res)
	}
	if err := gone.stop(); err != nil {
		t.Fatal(err)
	}
	ask := startLocal(t, addr, "classifier:\n  on_unavailable: ask\n")
	if res := ask.check(t, t.Context(), "Bash", npm, dir, auto); res.GetDecision() != pb.Decision_DECISION_ASK || res.GetSource() != pb.DecisionSource_DECISION_SOURCE_UPSTREAM_UNAVAILABLE {
		t.Errorf("centre down, on_unavailable ask: %v", res)
	}

	failing := fakellm.Start(t, fakellm.Always(fakellm.Reply{Fault: fakellm.FaultServerError, RetryAfter: -1}))
	centre := startCentre(t, failing, t.TempDir()+"/audit.jsonl")
	local := startLocal(t, centre.app.Addr().String(), "classifier:\n  on_unavailable: ask\n")
	res := local.check(t, t.Context(), "Bash", npm, dir, auto)
	if res.GetDecision() != pb.Decision_DECISION_ASK || res.GetSource() != pb.DecisionSource_DECISION_SOURCE_CLASSIFIER_UNAVAILABLE || !strings.Contains(res.GetReason(), "HTTP 500") {
		t.Errorf("the centre's model failing: %v", res)
	}
}

// TestUpstreamAndBackendsAreExclusive: a server is local (an upstream) or
// classifies itself, not both; with an upstream it needs no model key.
func TestUpstreamAndBackendsAreExclusive(t *testing.T) {
	_, err := LoadConfig(configFile(t, t.TempDir(), "upstream: {address: \"127.0.0.1:1\"}\nclassifier:\n  backends:\n    - {name: a, base_url: \"http://127.0.0.1:2/v1\", model: m}\n"+policyNoRules))
	if err == nil || !strings.Contains(err.Error(), "upstream.address") {
		t.Fatalf("both: %v", err)
	}
	_, err = LoadConfig(configFile(t, t.TempDir(), "upstream: {address: \"example.com:443\", token_file: /tmp/t}\n"+policyNoRules))
	if err == nil || !strings.Contains(err.Error(), "upstream.token_file: refusing to send a token in plaintext") {
		t.Fatalf("token in plaintext: %v", err)
	}
	t.Setenv("OPENAI_API_KEY", "")
	if _, err := LoadConfig(configFile(t, t.TempDir(), "upstream: {address: \"127.0.0.1:1\"}\n"+policyNoRules)); err != nil {
		t.Fatalf("a local server without a model key: %v", err)
	}
}

func tool(t *testing.T, name string, in map[string]any) *pb.ToolCall {
	t.Helper()
	s, err := structpb.NewStruct(in)
	if err != nil {
		t.Fatal(err)
	}
	return &pb.ToolCall{Name: name, Input: s}
}

func grep(s, sub string) string {
	var out []string
	for line := range strings.Lines(s) {
		if strings.Contains(line, sub) {
			out = append(out, line)
		}
	}
	return strings.Join(out, "")
}
