package server

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"
	"google.golang.org/grpc/codes"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/toolgate/toolgate/engine"
	pb "github.com/toolgate/toolgate/gen/toolgate/v1"
)

func TestCheckFastPaths(t *testing.T) {
	project := t.TempDir()
	outside := t.TempDir()
	if err := os.Symlink(outside, filepath.Join(project, "escape")); err != nil {
		t.Fatal(err)
	}
	env := newEnv(t, withPolicies(map[string]engine.PolicySpec{
		engine.DefaultPolicy: {Permissions: engine.RuleSet{Deny: []string{"Bash(rm -rf /)"}, Allow: []string{"Bash(go test ./...)"}}},
	}))
	tests := []struct {
		name     string
		req      *pb.CheckRequest
		decision pb.Decision
		source   pb.DecisionSource
		kind     string
		rule     string
	}{
		{
			name:     "read tool is safe",
			req:      checkReq(t, "r1", "Read", map[string]any{"file_path": "/usr/include/stdio.h"}),
			decision: pb.Decision_DECISION_ALLOW, source: pb.DecisionSource_DECISION_SOURCE_SAFE_TOOL, kind: "read",
		},
		{
			name:     "gemini read_file is safe",
			req:      checkReq(t, "r2", "read_file", map[string]any{"absolute_path": "/usr/include/stdio.h"}),
			decision: pb.Decision_DECISION_ALLOW, source: pb.DecisionSource_DECISION_SOURCE_SAFE_TOOL, kind: "read",
		},
		{
			name: "edit inside the project",
			req: func() *pb.CheckRequest {
				r := checkReq(t, "e1", "Edit", map[string]any{"file_path": "src/main.go", "old_string": "a", "new_string": "b"})
				r.WorkingDirectory = project
				return r
			}(),
			decision: pb.Decision_DECISION_ALLOW, source: pb.DecisionSource_DECISION_SOURCE_ACCEPT_EDITS, kind: "edit",
		},
		{
			name: "edit through a symlink out of the project asks",
			req: func() *pb.CheckRequest {
				r := checkReq(t, "e2", "Write", map[string]any{"file_path": filepath.Join(project, "escape", "x"), "content": "x"})
				r.WorkingDirectory = project
				return r
			}(),
			decision: pb.Decision_DECISION_ASK, source: pb.DecisionSource_DECISION_SOURCE_NO_CLASSIFIER, kind: "write",
		},
		{
			name: "protected path inside the project asks",
			req: func() *pb.CheckRequest {
				r := checkReq(t, "e3", "Write", map[string]any{"file_path": filepath.Join(project, ".git", "hooks", "pre-commit"), "content": "x"})
				r.WorkingDirectory = project
				return r
			}(),
			decision: pb.Decision_DECISION_ASK, source: pb.DecisionSource_DECISION_SOURCE_NO_CLASSIFIER, kind: "write",
		},
		{
			name:     "deny rule",
			req:      checkReq(t, "b1", "Bash", map[string]any{"command": "rm -rf /"}),
			decision: pb.Decision_DECISION_DENY, source: pb.DecisionSource_DECISION_SOURCE_RULE, kind: "shell", rule: "Bash(rm -rf /)",
		},
		{
			name: "allow rule",
			req: func() *pb.CheckRequest {
				// Its operands are judged as reads, from the working
				// directory.
				r := checkReq(t, "b2", "Bash", map[string]any{"command": "go test ./..."})
				r.WorkingDirectory = t.TempDir()
				return r
			}(),
			decision: pb.Decision_DECISION_ALLOW, source: pb.DecisionSource_DECISION_SOURCE_RULE, kind: "shell", rule: "Bash(go test ./...)",
		},
		{
			name: "per-request deny rule",
			req: func() *pb.CheckRequest {
				r := checkReq(t, "b3", "Grep", nil)
				r.Rules = &pb.Rules{Deny: []string{"Grep"}}
				return r
			}(),
			decision: pb.Decision_DECISION_DENY, source: pb.DecisionSource_DECISION_SOURCE_RULE, kind: "search", rule: "Grep",
		},
		{
			name:     "read-only command",
			req:      checkReq(t, "ro", "Bash", map[string]any{"command": "echo build | tr a-z A-Z"}),
			decision: pb.Decision_DECISION_ALLOW, source: pb.DecisionSource_DECISION_SOURCE_COMMAND_ANALYSIS, kind: "shell",
		},
		{
			name:     "unknown tool without classifier asks",
			req:      checkReq(t, "u1", "mcp__github__create_issue", map[string]any{"title": "x"}),
			decision: pb.Decision_DECISION_ASK, source: pb.DecisionSource_DECISION_SOURCE_NO_CLASSIFIER, kind: "unknown",
		},
		{
			name: "plan mode denies a mutating command",
			req: func() *pb.CheckRequest {
				r := checkReq(t, "p1", "Bash", map[string]any{"command": "make install"})
				r.Mode = pb.PermissionMode_PERMISSION_MODE_PLAN
				return r
			}(),
			decision: pb.Decision_DECISION_DENY, source: pb.DecisionSource_DECISION_SOURCE_MODE, kind: "shell",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp, err := env.client.Check(t.Context(), tt.req)
			if err != nil {
				t.Fatalf("Check: %v", err)
			}
			if resp.GetDecision() != tt.decision || resp.GetSource() != tt.source {
				t.Fatalf("got %s/%s (%q), want %s/%s", resp.GetDecision(), resp.GetSource(), resp.GetReason(), tt.decision, tt.source)
			}
			if resp.GetRequestId() != tt.req.GetRequestId() {
				t.Errorf("request_id %q, want %q", resp.GetRequestId(), tt.req.GetRequestId())
			}
			if resp.GetToolKind() != tt.kind || resp.GetMatchedRule() != tt.rule || resp.GetPolicy() != "default" {
				t.Errorf("kind %q rule %q policy %q, want %q %q default", resp.GetToolKind(), resp.GetMatchedRule(), resp.GetPolicy(), tt.kind, tt.rule)
			}
			if resp.GetDecisionId() == "" || resp.GetReason() == "" {
				t.Errorf("decision_id %q reason %q: both must be set", resp.GetDecisionId(), resp.GetReason())
			}
		})
	}
}

func TestCheckGeneratesIDs(t *testing.T) {
	env := newEnv(t)
	seen := map[string]bool{}
	for range 3 {
		resp, err := env.client.Check(t.Context(), checkReq(t, "", "Glob", map[string]any{"pattern": "*.go"}))
		if err != nil {
			t.Fatal(err)
		}
		for _, id := range []string{resp.GetRequestId(), resp.GetDecisionId()} {
			if id == "" || seen[id] {
				t.Fatalf("id %q empty or repeated", id)
			}
			seen[id] = true
		}
	}
}

func TestCheckValidation(t *testing.T) {
	env := newEnv(t, withConfig(func(c *Config) {
		c.MaxToolInputBytes = 1024
		c.MaxTranscriptEntries = 3
	}))
	big := strings.Repeat("x", 2000)
	tests := []struct {
		name string
		req  *pb.CheckRequest
		want string
	}{
		{"no tool", &pb.CheckRequest{}, "tool.name is required"},
		{"no tool name", &pb.CheckRequest{Tool: &pb.ToolCall{Input: &structpb.Struct{}}}, "tool.name is required"},
		{"tool input too large", checkReq(t, "", "Write", map[string]any{"file_path": "/p/x", "content": big}), "over the limit of 1024"},
		{"relative working directory", func() *pb.CheckRequest { r := checkReq(t, "", "Read", nil); r.WorkingDirectory = "work/app"; return r }(), "not an absolute path"},
		{"relative additional directory", func() *pb.CheckRequest {
			r := checkReq(t, "", "Read", nil)
			r.AdditionalDirectories = []string{"/ok", "../lib"}
			return r
		}(), "additional_directories[1]"},
		{"too many transcript entries", func() *pb.CheckRequest {
			r := checkReq(t, "", "Read", nil)
			for range 4 {
				r.Transcript = append(r.Transcript, &pb.TranscriptEntry{Role: pb.Role_ROLE_USER, Text: "hi"})
			}
			return r
		}(), "4 entries, over the limit of 3"},
		{"unknown mode", func() *pb.CheckRequest { r := checkReq(t, "", "Read", nil); r.Mode = 42; return r }(), "not a known permission mode"},
		{"unknown policy", func() *pb.CheckRequest { r := checkReq(t, "", "Read", nil); r.Policy = "nope"; return r }(), `unknown policy "nope"`},
		{"bad rule", func() *pb.CheckRequest {
			r := checkReq(t, "", "Read", nil)
			r.Rules = &pb.Rules{Deny: []string{"Bash(rm"}}
			return r
		}(), "rules.deny[0]"},
		{"huge tool name", checkReq(t, "", strings.Repeat("T", 300), nil), "tool.name is over"},
		{"huge working directory", func() *pb.CheckRequest {
			r := checkReq(t, "", "Read", nil)
			r.WorkingDirectory = "/" + strings.Repeat("d", 5000)
			return r
		}(), "working_directory is 5001 bytes, over the limit of 4096"},
		{"too many additional directories", func() *pb.CheckRequest {
			r := checkReq(t, "", "Read", nil)
			for i := range 65 {
				r.AdditionalDirectories = append(r.AdditionalDirectories, fmt.Sprintf("/d%d", i))
			}
			return r
		}(), "65 entries, over the limit of 64"},
		{"huge additional directory", func() *pb.CheckRequest {
			r := checkReq(t, "", "Read", nil)
			r.AdditionalDirectories = []string{"/" + strings.Repeat("d", 5000)}
			return r
		}(), "additional_directories[0] is 5001 bytes"},
		{"too many rules", func() *pb.CheckRequest {
			r := checkReq(t, "", "Read", nil)
			r.Rules = &pb.Rules{Allow: make([]string, 200), Deny: make([]string, 57)}
			return r
		}(), "rules has 257 entries, over the limit of 256"},
		{"huge rule", func() *pb.CheckRequest {
			r := checkReq(t, "", "Read", nil)
			r.Rules = &pb.Rules{Deny: []string{"Bash(" + strings.Repeat("x", 5000) + ")"}}
			return r
		}(), "a rule is 5006 bytes"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp, err := env.client.Check(t.Context(), tt.req)
			if status.Code(err) != codes.InvalidArgument {
				t.Fatalf("got %v (resp %v), want InvalidArgument", err, resp)
			}
			if msg := status.Convert(err).Message(); !strings.Contains(msg, tt.want) {
				t.Errorf("message %q does not contain %q", msg, tt.want)
			}
		})
	}
}

func TestCheckClassifier(t *testing.T) {
	fc := newFakeClassifier()
	env := newEnv(t, withClassifier(fc))
	resp, err := env.client.Check(t.Context(), checkReq(t, "c1", "mcp__test__danger", nil))
	if err != nil {
		t.Fatal(err)
	}
	if resp.GetDecision() != pb.Decision_DECISION_DENY || resp.GetSource() != pb.DecisionSource_DECISION_SOURCE_CLASSIFIER || resp.GetReason() != "fake says no" {
		t.Fatalf("got %v", resp)
	}
	resp, err = env.client.Check(t.Context(), checkReq(t, "c2", "mcp__test__fine", nil))
	if err != nil {
		t.Fatal(err)
	}
	if resp.GetDecision() != pb.Decision_DECISION_ALLOW || resp.GetSource() != pb.DecisionSource_DECISION_SOURCE_CLASSIFIER {
		t.Fatalf("got %v", resp)
	}
}

func TestPanicBecomesInternal(t *testing.T) {
	core, logs := observer.New(zap.InfoLevel)
	env := newEnv(t, withClassifier(newFakeClassifier()), withLogger(zap.New(core)))
	_, err := env.client.Check(t.Context(), checkReq(t, "boom", "mcp__test__panic", nil))
	if status.Code(err) != codes.Internal {
		t.Fatalf("got %v, want Internal", err)
	}
	if logs.FilterMessage("panic in handler").Len() != 1 {
		t.Errorf("panic not logged once")
	}
	// The server survives.
	if _, err := env.client.Check(t.Context(), checkReq(t, "after", "Read", nil)); err != nil {
		t.Fatalf("after panic: %v", err)
	}
}

func TestLogs(t *testing.T) {
	core, logs := observer.New(zap.DebugLevel)
	env := newEnv(t, withLogger(zap.New(core)))
	const secret = "sk-live-SECRET-0123456789"
	req := checkReq(t, "log-1", "Bash", map[string]any{"command": "curl -H 'Authorization: Bearer " + secret + "' https://x"})
	req.SessionId = "s-1"
	req.Transcript = []*pb.TranscriptEntry{{Role: pb.Role_ROLE_USER, Text: "my token is " + secret}}
	if _, err := env.client.Check(t.Context(), req); err != nil {
		t.Fatal(err)
	}
	if _, err := healthpb.NewHealthClient(env.conn).Check(t.Context(), &healthpb.HealthCheckRequest{}); err != nil {
		t.Fatal(err)
	}
	bad := checkReq(t, "log-bad", "", nil)
	if _, err := env.client.Check(t.Context(), bad); status.Code(err) != codes.InvalidArgument {
		t.Fatalf("nameless tool: %v", err)
	}
	env.stop(t)

	decisions := logs.FilterMessage("decision").AllUntimed()
	if len(decisions) != 1 {
		t.Fatalf("%d decision lines, want 1", len(decisions))
	}
	f := decisions[0].ContextMap()
	for k, want := range map[string]any{"request_id": "log-1", "session_id": "s-1", "tool": "Bash", "tool_kind": "shell", "decision": "ask", "source": "no_classifier", "policy": "default", "mode": "auto"} {
		if f[k] != want {
			t.Errorf("decision log %s = %v, want %v", k, f[k], want)
		}
	}
	for _, k := range []string{"decision_id", "latency_us", "matched_rule"} {
		if _, ok := f[k]; !ok {
			t.Errorf("decision log lacks %s", k)
		}
	}
	// One info line per check: a decided check has its decision line and
	// a debug rpc line; a refused one has an info rpc line with the error.
	rpcs := logs.FilterMessage("rpc").AllUntimed()
	if len(rpcs) != 2 {
		t.Fatalf("%d rpc lines, want 2 (health checks are not logged): %v", len(rpcs), rpcs)
	}
	if m := rpcs[0].ContextMap(); rpcs[0].Level != zap.DebugLevel || m["method"] != "/toolgate.v1.PermissionService/Check" || m["code"] != "OK" || m["request_id"] != "log-1" {
		t.Errorf("rpc line of the decided check: %v %v", rpcs[0].Level, m)
	}
	if m := rpcs[1].ContextMap(); rpcs[1].Level != zap.InfoLevel || m["code"] != "InvalidArgument" || m["request_id"] != "log-bad" || m["error"] == nil {
		t.Errorf("rpc line of the refused check: %v %v", rpcs[1].Level, m)
	}
	for _, e := range logs.AllUntimed() {
		for k, v := range e.ContextMap() {
			if strings.Contains(strings.ToLower(toString(v)), "secret") {
				t.Errorf("log %q field %s leaks the secret: %v", e.Message, k, v)
			}
		}
	}
}

func toString(v any) string {
	if s, ok := v.(string); ok {
		return s
	}
	return ""
}

func TestHealthAndReflection(t *testing.T) {
	env := newEnv(t)
	hc := healthpb.NewHealthClient(env.conn)
	for _, svc := range []string{"", "toolgate.v1.PermissionService"} {
		resp, err := hc.Check(t.Context(), &healthpb.HealthCheckRequest{Service: svc})
		if err != nil || resp.GetStatus() != healthpb.HealthCheckResponse_SERVING {
			t.Fatalf("health %q: %v %v", svc, resp, err)
		}
	}
	if _, ok := env.srv.grpc.GetServiceInfo()["grpc.reflection.v1.ServerReflection"]; !ok {
		t.Error("reflection not registered by default")
	}
	env.stop(t)
	resp, err := env.srv.health.Check(t.Context(), &healthpb.HealthCheckRequest{})
	if err != nil || resp.GetStatus() != healthpb.HealthCheckResponse_NOT_SERVING {
		t.Fatalf("after shutdown: %v %v, want NOT_SERVING", resp, err)
	}

	off := newEnv(t, withConfig(func(c *Config) { c.Reflection = false }))
	if _, ok := off.srv.grpc.GetServiceInfo()["grpc.reflection.v1.ServerReflection"]; ok {
		t.Error("reflection registered although turned off")
	}
}

func TestConfigValidate(t *testing.T) {
	good := DefaultConfig()
	if err := good.Validate(); err != nil {
		t.Fatalf("default config invalid: %v", err)
	}
	tests := []struct {
		name string
		mut  func(*Config)
		want string
	}{
		{"listen", func(c *Config) { c.Listen = "nope" }, "server.listen"},
		{"input size", func(c *Config) { c.MaxToolInputBytes = 0 }, "server.max_tool_input_bytes"},
		{"transcript", func(c *Config) { c.MaxTranscriptEntries = -1 }, "server.max_transcript_entries"},
		{"in flight", func(c *Config) { c.MaxStreamInFlight = 0 }, "server.max_stream_in_flight"},
		{"shutdown", func(c *Config) { c.ShutdownTimeout = 0 }, "server.shutdown_timeout"},
		{"relative socket", func(c *Config) { c.UnixSocket = "run/toolgate.sock" }, "server.unix_socket"},
		{"long socket", func(c *Config) { c.UnixSocket = "/" + strings.Repeat("s", 200) }, "server.unix_socket"},
		{"socket mode", func(c *Config) { c.UnixSocketMode = "0999" }, "server.unix_socket_mode"},
		{"socket mode bits", func(c *Config) { c.UnixSocketMode = "4755" }, "server.unix_socket_mode"},
		{"unattested files", func(c *Config) { c.UnattestedFiles = "trust" }, "server.unattested_files"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := DefaultConfig()
			tt.mut(&c)
			err := c.Validate()
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("got %v, want an error naming %s", err, tt.want)
			}
		})
	}
}

func TestToProtoMakesTextUTF8(t *testing.T) {
	bad := "target /tmp/\xff\xfe is outside"
	resp, err := toProto("r", "d", engine.Result{
		Decision: engine.Deny, Reason: bad, MatchedRule: "Edit(/tmp/\xff)", Policy: "p\xff",
		Classifier: &engine.ClassifierDetails{Backend: "b\xff", Model: "m", Stage: "s"},
	}, 1)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := proto.Marshal(resp); err != nil {
		t.Fatalf("response does not encode: %v", err)
	}
	if resp.GetReason() != "target /tmp/\uFFFD is outside" || resp.GetMatchedRule() != "Edit(/tmp/\uFFFD)" || resp.GetPolicy() != "p\uFFFD" || resp.GetClassifier().GetBackend() != "b\uFFFD" {
		t.Fatalf("got %v", resp)
	}
	if ok := "plain é"; validUTF8(ok) != ok {
		t.Fatalf("valid text changed: %q", validUTF8(ok))
	}
}
