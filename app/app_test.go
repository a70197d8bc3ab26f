package app

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"google.golang.org/grpc/metadata"

	"github.com/toolgate/toolgate/fakellm"
	pb "github.com/toolgate/toolgate/gen/toolgate/v1"
)

// logged returns the values of field in the log lines with message msg,
// in order.
func logged(logs, msg, field string) []string {
	var out []string
	for line := range strings.Lines(logs) {
		var m map[string]any
		if json.Unmarshal([]byte(line), &m) == nil && m["msg"] == msg {
			s, _ := m[field].(string)
			out = append(out, s)
		}
	}
	return out
}

// TestRunServesAndStops: an App built from a config file serves checks,
// local and classified, and its metrics; when its context ends, Run stops
// it and releases what New built in reverse order, and nothing answers
// any more.
func TestRunServesAndStops(t *testing.T) {
	fake := fakellm.Start(t, nil)
	dir := t.TempDir()
	path := configFile(t, dir, "server:\n  listen: 127.0.0.1:0\n  metrics_listen: 127.0.0.1:0\n"+
		"classifier:\n  backends:\n    - {name: fake, base_url: \""+fake.URL()+"\", model: m}\n"+policyNoRules)
	r := start(t, loadConfig(t, path))
	if r.app.Classifier() == nil {
		t.Fatal("no classifier built")
	}
	if res := r.check(t, t.Context(), "Read", map[string]any{"file_path": "/usr/include/stdio.h"}, dir, pb.PermissionMode_PERMISSION_MODE_AUTO); res.GetDecision() != pb.Decision_DECISION_ALLOW {
		t.Errorf("safe read: %v", res)
	}
	if res := r.check(t, t.Context(), "Bash", map[string]any{"command": "make build"}, dir, pb.PermissionMode_PERMISSION_MODE_AUTO); res.GetSource() != pb.DecisionSource_DECISION_SOURCE_CLASSIFIER {
		t.Errorf("classified call: %v", res)
	}
	metrics := "http://" + r.app.MetricsAddr().String() + "/metrics"
	resp, err := http.Get(metrics)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("metrics: %s", resp.Status)
	}
	waitFor(t, "the serving line", func() bool { return len(logged(r.logs.String(), "serving", "addr")) == 1 })

	if err := r.stop(); err != nil {
		t.Fatalf("Run: %v", err)
	}
	want := []string{"grpc server", "grpc listener", "metrics listener", "config watch", "classifiers", "file-system workers"}
	if got := logged(r.logs.String(), "closed", "part"); !slices.Equal(got, want) {
		t.Errorf("closed %q, want %q", got, want)
	}
	if msgs := logged(r.logs.String(), "stopped", "msg"); len(msgs) != 1 || !strings.HasSuffix(strings.TrimSpace(r.logs.String()), `"msg":"stopped"}`) {
		t.Errorf("no stopped line at the end:\n%s", r.logs.String())
	}
	if _, err := http.Get(metrics); err == nil {
		t.Error("the metrics listener still answers")
	}
	if _, err := r.client.Check(t.Context(), &pb.CheckRequest{Tool: &pb.ToolCall{Name: "Read"}}); err == nil {
		t.Error("the gRPC server still answers")
	}
}

// When New fails halfway, what it built is released, in reverse order, and
// its listener's port is free again.
func TestNewReleasesWhatItBuiltOnError(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	dir := t.TempDir()
	path := configFile(t, dir, "server:\n  listen: "+addr+"\n  metrics_listen: \"\"\n"+
		"  tls: {cert_file: "+filepath.Join(dir, "missing.crt")+", key_file: "+filepath.Join(dir, "missing.key")+"}\n"+policyNoRules)
	logs := &logBuffer{}
	cfg := loadConfig(t, path)
	_, err = New(cfg, WithLogger(debugLogger(logs)))
	if err == nil || !strings.Contains(err.Error(), "missing.crt") {
		t.Fatalf("New: %v, want an error naming the certificate", err)
	}
	want := []string{"grpc listener", "metrics listener", "config watch", "classifiers", "file-system workers"}
	if got := logged(logs.String(), "closed", "part"); !slices.Equal(got, want) {
		t.Errorf("closed %q, want %q", got, want)
	}
	l, err = net.Listen("tcp", addr)
	if err != nil {
		t.Fatalf("the listener was left open: %v", err)
	}
	l.Close()
}

// A "/path" rule in a config file is relative to the file's directory.
// TestSlashPathIsTheWorkingDirectory: a "/path" rule in the config is
// anchored at the request's working directory, as a project's own rules
// are, never at the config file's directory, where a deny rule written for
// projects would protect nothing.
func TestSlashPathIsTheWorkingDirectory(t *testing.T) {
	dir, project := t.TempDir(), t.TempDir()
	path := configFile(t, dir, "policies:\n  default:\n    permissions:\n      deny: [\"Edit(/secret-notes/**)\"]\n")
	r := start(t, loadConfig(t, path))
	edit := func(file string) *pb.CheckResponse {
		return r.check(t, t.Context(), "Edit", map[string]any{"file_path": file, "old_string": "a", "new_string": "b"}, project, pb.PermissionMode_PERMISSION_MODE_ACCEPT_EDITS)
	}
	if res := edit(filepath.Join(project, "secret-notes", "k")); res.GetDecision() != pb.Decision_DECISION_DENY || res.GetSource() != pb.DecisionSource_DECISION_SOURCE_RULE {
		t.Errorf("under the working directory: %v", res)
	}
	if res := edit(filepath.Join(project, "notes", "k")); res.GetDecision() != pb.Decision_DECISION_ALLOW {
		t.Errorf("elsewhere in the project: %v", res)
	}
	if res := edit(filepath.Join(dir, "secret-notes", "k")); res.GetSource() == pb.DecisionSource_DECISION_SOURCE_RULE {
		t.Errorf("under the config's directory, matched as if anchored there: %v", res)
	}
}

// The agents toolgate guards may not edit its config (hot reload would
// apply the edit) nor read its token file, by any tool, in any mode.
func TestSelfProtection(t *testing.T) {
	dir, project := t.TempDir(), t.TempDir()
	target := filepath.Join(dir, "real.yaml")
	writeAtomically(t, target, localOnly+policyNoRules)
	path := filepath.Join(dir, "toolgate.yaml")
	if err := os.Symlink(target, path); err != nil {
		t.Fatal(err)
	}
	tokens := filepath.Join(dir, "tokens")
	if err := os.WriteFile(tokens, []byte("ci tok-0123456789abcdef\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	r := start(t, loadConfig(t, path), WithOverrides(func(c *Config) error {
		c.Server.TokenFile = tokens
		return nil
	}))
	ctx := metadata.AppendToOutgoingContext(t.Context(), "authorization", "Bearer tok-0123456789abcdef")
	for _, tt := range []struct {
		tool  string
		input map[string]any
	}{
		{"Write", map[string]any{"file_path": path, "content": "policies: {default: {}}"}},
		{"Edit", map[string]any{"file_path": target, "old_string": "a", "new_string": "b"}},
		{"Bash", map[string]any{"command": "echo 'policies: {}' > " + path}},
		{"Read", map[string]any{"file_path": tokens}},
		{"Bash", map[string]any{"command": "cat " + tokens}},
		{"Bash", map[string]any{"command": "ln -sf /dev/zero " + target}},
		{"Bash", map[string]any{"command": "rm " + path + " && mkfifo " + path}},
		{"Bash", map[string]any{"command": "mv /tmp/evil.yaml " + target}},
		{"Bash", map[string]any{"command": "cp /tmp/t " + tokens}},
	} {
		if res := r.check(t, ctx, tt.tool, tt.input, project, pb.PermissionMode_PERMISSION_MODE_BYPASS); res.GetDecision() != pb.Decision_DECISION_DENY {
			t.Errorf("%s %v: %v", tt.tool, tt.input, res)
		}
	}
}

func TestRunTwice(t *testing.T) {
	r := start(t, loadConfig(t, configFile(t, t.TempDir(), policyNoRules)))
	waitFor(t, "the serving line", func() bool { return len(logged(r.logs.String(), "serving", "addr")) == 1 })
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if err := r.app.Run(ctx); err == nil {
		t.Error("a second Run was accepted")
	}
}

// TestTracingOneProvider: with server.tracing on, the RPC, the check under
// it and the classifier's call under that reach the collector, flushed
// after the server stops (the tracing closer runs after the server's).
func TestTracingOneProvider(t *testing.T) {
	var mu sync.Mutex
	var bodies [][]byte
	collector := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		bodies = append(bodies, b)
		mu.Unlock()
		w.Header().Set("Content-Type", "application/x-protobuf")
	}))
	defer collector.Close()
	fake := fakellm.Start(t, nil)
	dir := t.TempDir()
	path := configFile(t, dir, "server:\n  listen: 127.0.0.1:0\n  metrics_listen: \"\"\n  tracing: {otlp_endpoint: \""+collector.URL+"\"}\n"+
		"classifier:\n  backends:\n    - {name: fake, base_url: \""+fake.URL()+"\", model: m}\n"+policyNoRules)
	r := start(t, loadConfig(t, path))
	if res := r.check(t, t.Context(), "Bash", map[string]any{"command": "make build"}, dir, pb.PermissionMode_PERMISSION_MODE_AUTO); res.GetSource() != pb.DecisionSource_DECISION_SOURCE_CLASSIFIER {
		t.Fatalf("classified call: %v", res)
	}
	if err := r.stop(); err != nil {
		t.Fatalf("Run: %v", err)
	}
	got := logged(r.logs.String(), "closed", "part")
	if i, j := slices.Index(got, "grpc server"), slices.Index(got, "tracing"); i < 0 || j < i {
		t.Errorf("closed %q: tracing must close after the grpc server", got)
	}
	mu.Lock()
	all := bytes.Join(bodies, nil)
	mu.Unlock()
	// OTLP/HTTP protobuf carries span names as plain strings.
	for _, name := range []string{"toolgate.v1.PermissionService/Check", "toolgate.check", "toolgate.classifier.call"} {
		if !bytes.Contains(all, []byte(name)) {
			t.Errorf("no %s span reached the collector (%d posts)", name, len(bodies))
		}
	}
}
