package server

import (
	"runtime"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/types/known/structpb"

	pb "github.com/toolgate/toolgate/gen/toolgate/v1"
)

// liveHeap is the heap in use after a full collection.
func liveHeap() uint64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// heapPerCopy measures what each of copies values made by mk keeps on the
// heap. Enough copies are made to keep at least 16 MiB, so that what other
// goroutines free or allocate meanwhile (servers of earlier tests winding
// down) is small beside it.
func heapPerCopy(estimate int, mk func() any) float64 {
	copies := max(20, (16<<20)/max(estimate, 1))
	kept := make([]any, copies)
	before := liveHeap()
	for i := range kept {
		kept[i] = mk()
	}
	measured := float64(liveHeap()-before) / float64(copies)
	runtime.KeepAlive(kept)
	return measured
}

// within retries a heap measurement that misses its bounds: noise from
// other goroutines passes, an estimate that is wrong fails every attempt.
func within(attempts int, measure func() (ok bool)) bool {
	for range attempts {
		if measure() {
			return true
		}
	}
	return false
}

// toolEntry is a transcript entry whose tool call's input holds n values
// made by mk.
func toolEntry(n int, mk func(i int) *structpb.Value) *pb.TranscriptEntry {
	l := make([]*structpb.Value, n)
	for i := range l {
		l[i] = mk(i)
	}
	in := &structpb.Struct{Fields: map[string]*structpb.Value{"edits": structpb.NewListValue(&structpb.ListValue{Values: l})}}
	return &pb.TranscriptEntry{Role: pb.Role_ROLE_ASSISTANT, ToolCall: &pb.ToolCall{Name: "MultiEdit", Input: in}}
}

// retainedShapes are transcript entries of the shapes a client can send.
var retainedShapes = map[string]func() *pb.TranscriptEntry{
	"text": func() *pb.TranscriptEntry {
		return &pb.TranscriptEntry{Role: pb.Role_ROLE_USER, Text: strings.Repeat("x", 5000)}
	},
	"empty objects": func() *pb.TranscriptEntry {
		return toolEntry(2000, func(int) *structpb.Value { return structpb.NewStructValue(&structpb.Struct{}) })
	},
	"one-key objects": func() *pb.TranscriptEntry {
		return toolEntry(2000, func(int) *structpb.Value {
			return structpb.NewStructValue(&structpb.Struct{Fields: map[string]*structpb.Value{"a": structpb.NewNullValue()}})
		})
	},
	"edits": func() *pb.TranscriptEntry {
		return toolEntry(200, func(i int) *structpb.Value {
			return structpb.NewStructValue(&structpb.Struct{Fields: map[string]*structpb.Value{
				"old_string": structpb.NewStringValue(strings.Repeat("o", i%50)), "new_string": structpb.NewStringValue("n"), "replace_all": structpb.NewBoolValue(false),
			}})
		})
	},
	"numbers and empty lists": func() *pb.TranscriptEntry {
		return toolEntry(4000, func(i int) *structpb.Value {
			if i%2 == 0 {
				return structpb.NewNumberValue(float64(i))
			}
			return structpb.NewListValue(&structpb.ListValue{})
		})
	},
	"many keys": func() *pb.TranscriptEntry {
		m := map[string]*structpb.Value{}
		for i := range 3000 {
			m[strings.Repeat("k", i%7)+string(rune('a'+i%26))+strings.Repeat("z", i/26)] = structpb.NewStringValue("")
		}
		return &pb.TranscriptEntry{ToolCall: &pb.ToolCall{Name: "mcp__db__q", Input: &structpb.Struct{Fields: m}}}
	},
}

// TestRetainedSizeCovers: what a converted transcript entry keeps on the
// heap is at most its retainedSize (and not far below it, or the cap would
// refuse transcripts that fit).
func TestRetainedSizeCovers(t *testing.T) {
	for name, mk := range retainedShapes {
		est := float64(retainedSize(transcriptToEngine(mk())))
		ok := within(3, func() bool {
			// The decoded message goes, as it does in a stream.
			measured := heapPerCopy(int(est), func() any { return transcriptToEngine(mk()) })
			t.Logf("%-24s measured %9.0f estimated %9.0f (%.2f)", name, measured, est, est/measured)
			return est >= measured && est <= 2.5*measured
		})
		if !ok {
			t.Errorf("%s: retainedSize %.0f is not between the bytes kept and 2.5 times them", name, est)
		}
	}
}

// TestHeldTranscriptCountsRetainedSize: a transcript of tool calls whose
// inputs are many tiny values is small on the wire and large as maps; the
// held cap counts it as held, so two such streams cannot hold past it.
func TestHeldTranscriptCountsRetainedSize(t *testing.T) {
	fc := newFakeClassifier()
	env := newEnv(t, withClassifier(fc), withConfig(func(c *Config) { c.MaxHeldTranscriptBytes = 1 << 20 }))
	entry := retainedShapes["one-key objects"]() // about 25 KB encoded
	first := openStream(t, env)
	var entries []*pb.TranscriptEntry
	for range 3 {
		entries = append(entries, entry)
	}
	appendTranscript(t, first, entries...)
	sendCheck(t, first, checkReq(t, "first", "mcp__x__y", nil))
	m := recv(t, first)
	if m.GetError().GetCode() != int32(codes.ResourceExhausted) {
		t.Fatalf("3 entries of 2,000 one-key objects (75 KB encoded, over 2 MB as maps) under a 1 MiB cap: %v, want RESOURCE_EXHAUSTED", m)
	}
	if held := env.srv.svc.transcriptHeld.Load(); held != 0 {
		t.Errorf("%d bytes held after the refusal", held)
	}
}
