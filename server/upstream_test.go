package server

import (
	"strings"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	pb "github.com/toolgate/toolgate/gen/toolgate/v1"
)

// TestUpstreamClassify: the centre classifies a forwarded check with its
// classifier, given what the local stages found and no session (the
// local server counts the session's blocks); a check that a Check would
// refuse is refused, and so are over-long notes; the wire scan bounds the
// check's nesting as it does a Check's.
func TestUpstreamClassify(t *testing.T) {
	fc := newFakeClassifier()
	env := newEnv(t, withClassifier(fc), withConfig(func(c *Config) { c.MaxValueDepth = 8 }))
	client := pb.NewUpstreamServiceClient(env.conn)
	check := checkReq(t, "r1", "mcp__test__danger", map[string]any{"x": "y"})
	check.SessionId = "s1"
	resp, err := client.Classify(t.Context(), &pb.ClassifyRequest{Check: check, ToolKind: "mcp", Notes: []string{"not on the safe list"}, PolicyVersion: "sha256:00"})
	if err != nil {
		t.Fatal(err)
	}
	if resp.GetDecision() != pb.Decision_DECISION_DENY || resp.GetSource() != pb.DecisionSource_DECISION_SOURCE_CLASSIFIER || resp.GetReason() != "fake says no" {
		t.Fatalf("answer %v", resp)
	}
	seen := fc.inputs()
	if len(seen) != 1 || seen[0].Request.SessionID != "" || seen[0].Notes[0] != "not on the safe list" || seen[0].Kind != "mcp" || seen[0].PolicyVersion != "sha256:00" {
		t.Fatalf("classifier saw %+v %+v", seen, seen[0].Request)
	}

	deep := map[string]any{"v": "x"}
	for range 20 {
		deep = map[string]any{"v": deep}
	}
	for name, req := range map[string]*pb.ClassifyRequest{
		"no check":       {},
		"relative cwd":   {Check: &pb.CheckRequest{Tool: &pb.ToolCall{Name: "Bash"}, WorkingDirectory: "rel"}},
		"long note":      {Check: checkReq(t, "r", "Bash", nil), Notes: []string{strings.Repeat("n", maxNoteBytes+1)}},
		"too many notes": {Check: checkReq(t, "r", "Bash", nil), Notes: make([]string, maxNotes+1)},
		"unknown policy": {Check: checkReq(t, "r", "Bash", nil), Policy: "nope"},
		"too deep":       {Check: checkReq(t, "r", "Bash", deep)},
	} {
		if _, err := client.Classify(t.Context(), req); status.Code(err) != codes.InvalidArgument {
			t.Errorf("%s: %v", name, err)
		}
	}
	if n := len(fc.inputs()); n != 1 {
		t.Errorf("refused requests reached the classifier (%d calls)", n)
	}
}
