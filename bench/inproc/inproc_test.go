package inproc

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/structpb"

	pb "github.com/toolgate/toolgate/gen/toolgate/v1"
)

// The stack is toolgate serve's: it decides, logs JSON lines, and stops.
func TestStartServesAndStops(t *testing.T) {
	var logs bytes.Buffer
	st, err := Start(Options{Log: &logs})
	if err != nil {
		t.Fatal(err)
	}
	conn, client, err := Dial(st.Addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if err := WaitReady(t.Context(), client, 10*time.Second); err != nil {
		t.Fatal(err)
	}
	in, _ := structpb.NewStruct(map[string]any{"command": "rm -rf /"})
	resp, err := client.Check(t.Context(), &pb.CheckRequest{Tool: &pb.ToolCall{Name: "Bash", Input: in}})
	if err != nil || resp.GetDecision() != pb.Decision_DECISION_DENY {
		t.Fatalf("rm -rf /: %v %v", resp, err)
	}
	if err := st.Stop(); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"msg":"serving"`, `"msg":"stopped"`} {
		if !strings.Contains(logs.String(), want) {
			t.Errorf("log lacks %s:\n%s", want, logs.String())
		}
	}
}
