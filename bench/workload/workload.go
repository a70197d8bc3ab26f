// Package workload defines the tool calls toolgate is measured with: a mix
// of calls decided locally (safe tools, in-project edits, read-only shell)
// and calls that reach the classifier. make bench, make soak, the Go
// benchmarks of the server and the resilience tests all use it, so their
// figures speak of the same work.
package workload

import (
	"fmt"
	"os"
	"path/filepath"

	"google.golang.org/protobuf/types/known/structpb"

	pb "github.com/toolgate/toolgate/gen/toolgate/v1"
)

// Call is one tool call of a mix and the answer toolgate must give it with
// the embedded default policy in auto mode.
type Call struct {
	Name   string
	Req    *pb.CheckRequest
	Want   pb.Decision
	Source pb.DecisionSource
}

// NewProject creates a small project under dir (files the mix reads and
// edits) and returns its absolute path.
func NewProject(dir string) (string, error) {
	root, err := filepath.Abs(filepath.Join(dir, "project"))
	if err != nil {
		return "", err
	}
	for name, body := range map[string]string{
		"main.go":        "package main\n\nfunc main() {}\n",
		"src/handler.go": "package src\n\n// TODO: handle errors\n",
		"README.md":      "# project\n",
	} {
		p := filepath.Join(root, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return "", err
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			return "", err
		}
	}
	return root, nil
}

func input(m map[string]any) *structpb.Struct {
	s, err := structpb.NewStruct(m)
	if err != nil {
		panic(err) // the literals below are all valid
	}
	return s
}

func check(project, tool string, in map[string]any) *pb.CheckRequest {
	return &pb.CheckRequest{Tool: &pb.ToolCall{Name: tool, Input: input(in)}, WorkingDirectory: project}
}

// Local is the locally decided mix, every call ALLOW: two safe tools, two
// in-project edits, three read-only shell commands (short, piped, a long
// compound one), in the proportions of a coding session where reads and
// commands dominate.
func Local(project string) []Call {
	allow := pb.Decision_DECISION_ALLOW
	safe := pb.DecisionSource_DECISION_SOURCE_SAFE_TOOL
	edits := pb.DecisionSource_DECISION_SOURCE_ACCEPT_EDITS
	shell := pb.DecisionSource_DECISION_SOURCE_COMMAND_ANALYSIS
	return []Call{
		{"read", check(project, "Read", map[string]any{"file_path": filepath.Join(project, "main.go")}), allow, safe},
		{"grep", check(project, "Grep", map[string]any{"pattern": "TODO", "path": "src"}), allow, safe},
		{"edit", check(project, "Edit", map[string]any{"file_path": "src/handler.go", "old_string": "TODO", "new_string": "DONE"}), allow, edits},
		{"write", check(project, "Write", map[string]any{"file_path": filepath.Join(project, "src/new.go"), "content": "package src\n"}), allow, edits},
		{"git_status", check(project, "Bash", map[string]any{"command": "git status"}), allow, shell},
		{"ls_pipe", check(project, "Bash", map[string]any{"command": "ls -la src | head -20"}), allow, shell},
		{"compound", check(project, "Bash", map[string]any{"command": "find . -name '*.go' -type f -print0 | xargs -0 grep -n TODO | sort | uniq -c | head -50 && git log --oneline -5 2>/dev/null"}), allow, shell},
	}
}

// Classified returns the n-th call of a series that reaches the classifier:
// each installs a differently named package, so that neither the cache nor
// coalescing answers it. The decision is the classifier's.
func Classified(project string, n int) Call {
	return Call{
		Name:   "classified",
		Req:    check(project, "Bash", map[string]any{"command": fmt.Sprintf("npm install left-pad-%d", n)}),
		Want:   pb.Decision_DECISION_ALLOW,
		Source: pb.DecisionSource_DECISION_SOURCE_CLASSIFIER,
	}
}

// ClassifiedTemplate is Classified as ghz call data: ghz replaces the
// template with its request number, so every call of a run is different;
// run tells runs apart (ghz counts from 0 each time), so that one run's
// calls are not cached answers to another's.
func ClassifiedTemplate(project, run string) *pb.CheckRequest {
	return check(project, "Bash", map[string]any{"command": "npm install left-pad-" + run + "-{{.RequestNumber}}"})
}
