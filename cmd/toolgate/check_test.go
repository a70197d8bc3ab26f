package main

import (
	"testing"

	pb "github.com/toolgate/toolgate/gen/toolgate/v1"
)

// TestStableJSON: check prints encoding/json's spacing, whatever spacing
// protojson picks for this build (it varies it on purpose), so that the
// documented output is what every build prints.
func TestStableJSON(t *testing.T) {
	resp := &pb.CheckResponse{RequestId: "r1", Decision: pb.Decision_DECISION_DENY, Reason: "denied by rule Bash(rm -rf /)"}
	for _, c := range []struct {
		multiline bool
		want      string
	}{
		{true, "{\n  \"requestId\": \"r1\",\n  \"decision\": \"DECISION_DENY\",\n  \"reason\": \"denied by rule Bash(rm -rf /)\"\n}"},
		{false, `{"requestId":"r1","decision":"DECISION_DENY","reason":"denied by rule Bash(rm -rf /)"}`},
	} {
		got, err := stableJSON(resp, c.multiline)
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != c.want {
			t.Errorf("multiline %v: got\n%s\nwant\n%s", c.multiline, got, c.want)
		}
	}
}
