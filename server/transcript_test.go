package server

import (
	"strings"
	"testing"

	"google.golang.org/grpc/codes"

	pb "github.com/toolgate/toolgate/gen/toolgate/v1"
)

func appendTranscript(t *testing.T, s pb.PermissionService_CheckStreamClient, entries ...*pb.TranscriptEntry) {
	t.Helper()
	if err := s.Send(&pb.CheckStreamRequest{Kind: &pb.CheckStreamRequest_Transcript{Transcript: &pb.TranscriptAppend{Entries: entries}}}); err != nil {
		t.Fatal(err)
	}
}

func textEntries(n, size int) []*pb.TranscriptEntry {
	out := make([]*pb.TranscriptEntry, n)
	for i := range out {
		out[i] = &pb.TranscriptEntry{Role: pb.Role_ROLE_USER, Text: strings.Repeat("x", size)}
	}
	return out
}

// TestStreamTranscriptConvertedOnce: a stream's transcript is converted
// when it arrives; every later check shares that one copy, and a check
// sees the transcript as it was when the check arrived.
func TestStreamTranscriptConvertedOnce(t *testing.T) {
	fc := newFakeClassifier()
	env := newEnv(t, withClassifier(fc))
	s := openStream(t, env)
	appendTranscript(t, s, textEntries(3, 100)...)
	for _, id := range []string{"a", "b"} {
		sendCheck(t, s, checkReq(t, id, "mcp__x__y", nil))
		if m := recv(t, s); m.GetResponse() == nil {
			t.Fatalf("%s: %v", id, m)
		}
	}
	appendTranscript(t, s, &pb.TranscriptEntry{Role: pb.Role_ROLE_USER, Text: "later"})
	sendCheck(t, s, checkReq(t, "c", "mcp__x__y", nil))
	if m := recv(t, s); m.GetResponse() == nil {
		t.Fatalf("c: %v", m)
	}
	in := fc.inputs()
	a, b, c := in[0].Request.Transcript, in[1].Request.Transcript, in[2].Request.Transcript
	if len(a) != 3 || len(b) != 3 || len(c) != 4 || c[3].Text != "later" {
		t.Fatalf("transcripts of %d, %d, %d entries", len(a), len(b), len(c))
	}
	if &a[0] != &b[0] {
		t.Error("two checks got two conversions of the same transcript")
	}
}

// TestStreamTranscriptServerWideCap: the transcripts all streams hold are
// bounded together; a transcript past the bound is refused with
// RESOURCE_EXHAUSTED and the stream goes on; a stream that ends gives its
// share back.
func TestStreamTranscriptServerWideCap(t *testing.T) {
	fc := newFakeClassifier()
	env := newEnv(t, withClassifier(fc), withConfig(func(c *Config) { c.MaxHeldTranscriptBytes = 10_000 }))
	first := openStream(t, env)
	appendTranscript(t, first, textEntries(6, 1000)...)
	sendCheck(t, first, checkReq(t, "first", "mcp__x__y", nil))
	if m := recv(t, first); m.GetResponse() == nil {
		t.Fatalf("first: %v", m)
	}
	second := openStream(t, env)
	appendTranscript(t, second, textEntries(6, 1000)...)
	if m := recv(t, second); m.GetError().GetCode() != int32(codes.ResourceExhausted) {
		t.Fatalf("second stream's transcript: %v, want RESOURCE_EXHAUSTED", m)
	}
	// The stream goes on, without the refused transcript.
	sendCheck(t, second, checkReq(t, "second", "mcp__x__y", nil))
	if m := recv(t, second); m.GetResponse() == nil {
		t.Fatalf("second: %v", m)
	}
	if in := fc.inputs(); len(in[len(in)-1].Request.Transcript) != 0 {
		t.Fatalf("a refused transcript reached the classifier")
	}
	if err := first.CloseSend(); err != nil {
		t.Fatal(err)
	}
	if _, err := first.Recv(); err == nil {
		t.Fatal("first stream did not end")
	}
	// The handler gave the first stream's share back before the client
	// saw its end.
	if held := env.srv.svc.transcriptHeld.Load(); held != 0 {
		t.Fatalf("%d bytes still held after the stream ended", held)
	}
	appendTranscript(t, second, textEntries(6, 1000)...)
	sendCheck(t, second, checkReq(t, "again", "mcp__x__y", nil))
	if m := recv(t, second); m.GetResponse() == nil {
		t.Fatalf("after the first stream ended: %v", m)
	}
	if in := fc.inputs(); len(in[len(in)-1].Request.Transcript) != 6 {
		t.Fatalf("transcript of %d entries, want 6", len(in[len(in)-1].Request.Transcript))
	}
}

// TestStreamTranscriptKeepsTheNewest: past max_transcript_entries the
// oldest entries go, and their bytes are no longer counted as held.
func TestStreamTranscriptKeepsTheNewest(t *testing.T) {
	fc := newFakeClassifier()
	env := newEnv(t, withClassifier(fc), withConfig(func(c *Config) { c.MaxTranscriptEntries = 4 }))
	s := openStream(t, env)
	appendTranscript(t, s, textEntries(3, 10)...)
	appendTranscript(t, s, textEntries(3, 100)...)
	appendTranscript(t, s, textEntries(6, 1000)[:1]...)
	sendCheck(t, s, checkReq(t, "a", "mcp__x__y", nil))
	if m := recv(t, s); m.GetResponse() == nil {
		t.Fatalf("a: %v", m)
	}
	tr := fc.inputs()[0].Request.Transcript
	if len(tr) != 4 || len(tr[0].Text) != 100 || len(tr[3].Text) != 1000 {
		t.Fatalf("kept %d entries", len(tr))
	}
	// Each entry counts its text and the entry itself, and an eighth for
	// size classes (retainedSize).
	if held, want := env.srv.svc.transcriptHeld.Load(), int64(3*(148+148/8)+1048+1048/8); held != want {
		t.Errorf("held %d bytes, want %d", held, want)
	}
}
