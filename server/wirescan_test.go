package server

import (
	"math"
	"strings"
	"testing"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"

	pb "github.com/toolgate/toolgate/gen/toolgate/v1"
)

var defaultScanLimits = scanLimits{maxItems: DefaultConfig().MaxMessageItems, maxDepth: DefaultConfig().MaxValueDepth}

// listOf is a Value: a list of n values made by mk.
func listOf(n int, mk func(i int) *structpb.Value) *structpb.Value {
	l := make([]*structpb.Value, n)
	for i := range l {
		l[i] = mk(i)
	}
	return structpb.NewListValue(&structpb.ListValue{Values: l})
}

func emptyObject(int) *structpb.Value { return structpb.NewStructValue(&structpb.Struct{}) }

func inputReq(name string, in map[string]*structpb.Value) *pb.CheckRequest {
	return &pb.CheckRequest{RequestId: "r", WorkingDirectory: "/w", Tool: &pb.ToolCall{Name: name, Input: &structpb.Struct{Fields: in}}}
}

func mustMarshal(t testing.TB, m proto.Message) []byte {
	t.Helper()
	b, err := proto.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// realInputs are tool calls as agents send them, at their large end.
func realInputs() map[string]*pb.CheckRequest {
	edits := make([]*structpb.Value, 500)
	for i := range edits {
		edits[i] = structpb.NewStructValue(&structpb.Struct{Fields: map[string]*structpb.Value{
			"old_string": structpb.NewStringValue(strings.Repeat("old line\n", 20)), "new_string": structpb.NewStringValue(strings.Repeat("new line\n", 20)),
			"replace_all": structpb.NewBoolValue(false),
		}})
	}
	cells := make([]*structpb.Value, 5000)
	for i := range cells {
		cells[i] = structpb.NewNumberValue(float64(i))
	}
	args := map[string]*structpb.Value{"query": structpb.NewStringValue("select 1")}
	for i := range 2000 {
		args[strings.Repeat("k", 1+i%9)+string(rune('a'+i%26))+strings.Repeat("z", i/26)] = structpb.NewStructValue(&structpb.Struct{Fields: map[string]*structpb.Value{"v": structpb.NewListValue(&structpb.ListValue{Values: cells[:3]})}})
	}
	deep := structpb.NewStringValue("leaf")
	for range 100 {
		deep = structpb.NewListValue(&structpb.ListValue{Values: []*structpb.Value{deep}})
	}
	withTranscript := inputReq("Bash", map[string]*structpb.Value{"command": structpb.NewStringValue("go test ./...")})
	for i := range 500 {
		withTranscript.Transcript = append(withTranscript.Transcript, &pb.TranscriptEntry{Role: pb.Role_ROLE_ASSISTANT, Text: "running the tests",
			ToolCall: &pb.ToolCall{Name: "Edit", Input: &structpb.Struct{Fields: map[string]*structpb.Value{
				"file_path": structpb.NewStringValue("/w/main.go"), "old_string": structpb.NewStringValue(strings.Repeat("x", i%100)), "new_string": structpb.NewStringValue("y"),
			}}}})
	}
	return map[string]*pb.CheckRequest{
		"Edit": inputReq("Edit", map[string]*structpb.Value{"file_path": structpb.NewStringValue("/w/main.go"),
			"old_string": structpb.NewStringValue("func main() {}"), "new_string": structpb.NewStringValue("func main() { run() }")}),
		"MultiEdit of 500 edits": inputReq("MultiEdit", map[string]*structpb.Value{"file_path": structpb.NewStringValue("/w/main.go"), "edits": structpb.NewListValue(&structpb.ListValue{Values: edits})}),
		"Write of 250 KiB":       inputReq("Write", map[string]*structpb.Value{"file_path": structpb.NewStringValue("/w/big.txt"), "content": structpb.NewStringValue(strings.Repeat("z", 250<<10))}),
		"NotebookEdit": inputReq("NotebookEdit", map[string]*structpb.Value{"notebook_path": structpb.NewStringValue("/w/a.ipynb"), "cell_id": structpb.NewStringValue("c1"),
			"new_source": structpb.NewStringValue("import numpy"), "cell_type": structpb.NewStringValue("code"), "edit_mode": structpb.NewStringValue("replace")}),
		"MCP tool with 5,000 numbers":  inputReq("mcp__plot__draw", map[string]*structpb.Value{"points": structpb.NewListValue(&structpb.ListValue{Values: cells})}),
		"MCP tool with 2,000 fields":   inputReq("mcp__db__query", args),
		"lists nested 100 deep":        inputReq("mcp__x__y", map[string]*structpb.Value{"v": deep}),
		"500 transcript entries":       withTranscript,
		"empty":                        {},
		"a million-value list at 20 k": inputReq("mcp__x__y", map[string]*structpb.Value{"v": listOf(20_000, emptyObject)}),
	}
}

// TestWireScan: real requests pass the default bounds; what is built to
// swell when decoded does not, whether in the tool input, a transcript
// entry's tool call or a stream message.
func TestWireScan(t *testing.T) {
	for name, req := range realInputs() {
		b := mustMarshal(t, req)
		if sc := scanCheckRequest(b, defaultScanLimits); sc.verdict != scanOK {
			t.Errorf("%s: verdict %d after %d items, depth %d", name, sc.verdict, sc.items, sc.depth)
		}
		stream := mustMarshal(t, &pb.CheckStreamRequest{Kind: &pb.CheckStreamRequest_Check{Check: req}})
		if sc := scanCheckStreamRequest(stream, defaultScanLimits); sc.verdict != scanOK {
			t.Errorf("%s on a stream: verdict %d", name, sc.verdict)
		}
	}
	million := inputReq("Bash", map[string]*structpb.Value{"a": listOf(1_000_000, emptyObject)})
	inTranscript := &pb.CheckRequest{Tool: &pb.ToolCall{Name: "Bash"}, Transcript: []*pb.TranscriptEntry{{ToolCall: million.Tool}}}
	deep := structpb.NewNullValue()
	for range 600 {
		deep = structpb.NewStructValue(&structpb.Struct{Fields: map[string]*structpb.Value{"k": deep}})
	}
	manyEntries := &pb.CheckRequest{Tool: &pb.ToolCall{Name: "Bash"}, Transcript: make([]*pb.TranscriptEntry, 200_000)}
	for i := range manyEntries.Transcript {
		manyEntries.Transcript[i] = &pb.TranscriptEntry{}
	}
	manyDirs := &pb.CheckRequest{Tool: &pb.ToolCall{Name: "Bash"}, AdditionalDirectories: make([]string, 200_000)}
	manyRules := &pb.CheckStreamRequest{Kind: &pb.CheckStreamRequest_Session{Session: &pb.SessionContext{Rules: &pb.Rules{Deny: make([]string, 200_000)}}}}
	for _, tc := range []struct {
		name   string
		b      []byte
		stream bool
		want   scanVerdict
	}{
		{"a million empty objects", mustMarshal(t, million), false, scanTooMany},
		{"a million empty objects in a transcript entry's tool call", mustMarshal(t, inTranscript), false, scanTooMany},
		{"the same on a stream", mustMarshal(t, &pb.CheckStreamRequest{Kind: &pb.CheckStreamRequest_Check{Check: inTranscript}}), true, scanTooMany},
		{"in a stream's transcript append", mustMarshal(t, &pb.CheckStreamRequest{Kind: &pb.CheckStreamRequest_Transcript{Transcript: &pb.TranscriptAppend{Entries: inTranscript.Transcript}}}), true, scanTooMany},
		{"200,000 empty transcript entries", mustMarshal(t, manyEntries), false, scanTooMany},
		{"200,000 additional directories", mustMarshal(t, manyDirs), false, scanTooMany},
		{"200,000 session rules", mustMarshal(t, manyRules), true, scanTooMany},
		{"structs nested 600 deep", mustMarshal(t, inputReq("Bash", map[string]*structpb.Value{"a": deep})), false, scanTooDeep},
		{"lists nested 10,001 deep", checkBytes(nestedValue(10_001)), false, scanTooDeep},
		{"truncated", checkBytes(nil)[:7], false, scanMalformed},
		{"a bad varint", []byte{0x1a, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}, false, scanMalformed},
	} {
		scan := scanCheckRequest
		if tc.stream {
			scan = scanCheckStreamRequest
		}
		if sc := scan(tc.b, defaultScanLimits); sc.verdict != tc.want {
			t.Errorf("%s: verdict %d, want %d (items %d, depth %d)", tc.name, sc.verdict, tc.want, sc.items, sc.depth)
		}
	}
}

// TestWireScanStopsEarly: a request past the item bound is refused as soon
// as the count passes it, not after the whole message is read.
func TestWireScanStopsEarly(t *testing.T) {
	b := mustMarshal(t, inputReq("Bash", map[string]*structpb.Value{"a": listOf(1000, emptyObject)}))
	sc := scanCheckRequest(b, scanLimits{maxItems: 10, maxDepth: 10})
	if sc.verdict != scanTooMany || sc.items != 11 {
		t.Fatalf("verdict %d after %d items, want %d after 11", sc.verdict, sc.items, scanTooMany)
	}
}

// TestDecodedCostCovers: the scan's estimate covers what decoding a
// request and converting it for the engine keep on the heap, for shapes
// built to swell and for real requests, and stays within a small factor
// of it for the real ones (the budget should not refuse them early).
func TestDecodedCostCovers(t *testing.T) {
	shapes := realInputs()
	for name, mk := range map[string]func(int) *structpb.Value{
		"empty objects": emptyObject,
		"empty lists":   func(int) *structpb.Value { return structpb.NewListValue(&structpb.ListValue{}) },
		"nulls":         func(int) *structpb.Value { return structpb.NewNullValue() },
		"numbers":       func(i int) *structpb.Value { return structpb.NewNumberValue(float64(i)) },
		"empty strings": func(int) *structpb.Value { return structpb.NewStringValue("") },
		"one-key object": func(int) *structpb.Value {
			return structpb.NewStructValue(&structpb.Struct{Fields: map[string]*structpb.Value{"a": structpb.NewNullValue()}})
		},
	} {
		shapes["50,000 "+name] = inputReq("mcp__x__y", map[string]*structpb.Value{"a": listOf(50_000, mk)})
	}
	delete(shapes, "empty") // not a valid check
	for name, req := range shapes {
		b := mustMarshal(t, req)
		sc := scanCheckRequest(b, scanLimits{maxItems: math.MaxInt, maxDepth: 1000})
		decode := func() any {
			var m pb.CheckRequest
			if err := proto.Unmarshal(b, &m); err != nil {
				t.Fatal(err)
			}
			var svc Service
			svc.cfg = DefaultConfig()
			svc.cfg.MaxToolInputBytes = math.MaxInt
			ereq, err := svc.toEngine(&m)
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			return [2]any{&m, ereq}
		}
		var measured, ratio float64
		ok := within(3, func() bool {
			// The wire bytes are held while decoding too.
			measured = heapPerCopy(int(sc.cost), decode) + float64(len(b))
			ratio = float64(sc.cost) / measured
			t.Logf("%-40s wire %8d items %7d measured %10.0f estimated %10d (%.2f)", name, len(b), sc.items, measured, sc.cost, ratio)
			return ratio >= 1 && (measured <= 1<<20 || ratio <= 6)
		})
		if ok {
			continue
		}
		if ratio < 1 {
			t.Errorf("%s: estimated %d bytes, measured %.0f", name, sc.cost, measured)
		}
		if measured > 1<<20 && ratio > 6 {
			t.Errorf("%s: estimated %d bytes, %.1f times the %.0f measured", name, sc.cost, ratio, measured)
		}
	}
}

// FuzzWireScan: on whatever decodes as a CheckRequest, the scan does not
// call it malformed and, with bounds it does not pass, says OK; what it
// counts bounds what protobuf allocates one by one.
func FuzzWireScan(f *testing.F) {
	for _, req := range realInputs() {
		if b, err := proto.Marshal(req); err == nil && len(b) < 64<<10 {
			f.Add(b)
		}
	}
	f.Add(checkBytes(nestedValue(20)))
	f.Add(checkBytes(protowire.AppendTag(nil, 5, protowire.StartGroupType)))
	f.Fuzz(func(t *testing.T, b []byte) {
		sc := scanCheckRequest(b, scanLimits{maxItems: math.MaxInt, maxDepth: math.MaxInt})
		stream := scanCheckStreamRequest(b, scanLimits{maxItems: math.MaxInt, maxDepth: math.MaxInt})
		var m pb.CheckRequest
		if err := proto.Unmarshal(b, &m); err != nil {
			return
		}
		if sc.verdict != scanOK {
			t.Fatalf("decodes, but the scan says %d", sc.verdict)
		}
		_ = stream // any verdict: the same bytes mean other fields there
		if n := countItems(&m); n > sc.items {
			t.Fatalf("decoded %d items, the scan counted %d", n, sc.items)
		}
		if d := valueDepth(&m); d > sc.depth {
			t.Fatalf("decoded depth %d, the scan saw %d", d, sc.depth)
		}
		// A bound just below what it counted refuses it.
		if sc.items > 0 {
			if v := scanCheckRequest(b, scanLimits{maxItems: sc.items - 1, maxDepth: math.MaxInt}).verdict; v != scanTooMany {
				t.Fatalf("items %d, bound %d: verdict %d", sc.items, sc.items-1, v)
			}
		}
		if sc.depth > 0 {
			if v := scanCheckRequest(b, scanLimits{maxItems: math.MaxInt, maxDepth: sc.depth - 1}).verdict; v != scanTooDeep {
				t.Fatalf("depth %d, bound %d: verdict %d", sc.depth, sc.depth-1, v)
			}
		}
	})
}

// countItems counts what the scan counts, on a decoded request.
func countItems(m *pb.CheckRequest) int {
	n := len(m.GetAdditionalDirectories()) + len(m.GetRules().GetAllow()) + len(m.GetRules().GetAsk()) + len(m.GetRules().GetDeny()) + len(m.GetTranscript())
	n += structItems(m.GetTool().GetInput())
	for _, e := range m.GetTranscript() {
		n += structItems(e.GetToolCall().GetInput())
	}
	return n
}

func structItems(s *structpb.Struct) int {
	n := 0
	for _, v := range s.GetFields() {
		n += 2 + valueItems(v) // the field and its value
	}
	return n
}

func valueItems(v *structpb.Value) int {
	switch k := v.GetKind().(type) {
	case *structpb.Value_StructValue:
		return structItems(k.StructValue)
	case *structpb.Value_ListValue:
		n := 0
		for _, x := range k.ListValue.GetValues() {
			n += 1 + valueItems(x)
		}
		return n
	}
	return 0
}

func valueDepth(m *pb.CheckRequest) int {
	d := structDepth(m.GetTool().GetInput())
	for _, e := range m.GetTranscript() {
		d = max(d, structDepth(e.GetToolCall().GetInput()))
	}
	return d
}

func structDepth(s *structpb.Struct) int {
	if s == nil {
		return 0
	}
	d := 0
	for _, v := range s.GetFields() {
		d = max(d, valDepth(v))
	}
	return 1 + d
}

func valDepth(v *structpb.Value) int {
	switch k := v.GetKind().(type) {
	case *structpb.Value_StructValue:
		return structDepth(k.StructValue)
	case *structpb.Value_ListValue:
		d := 0
		for _, x := range k.ListValue.GetValues() {
			d = max(d, valDepth(x))
		}
		return 1 + d
	}
	return 0
}

// BenchmarkWireScan scans a typical Edit check; BenchmarkDecodeEdit
// decodes it, for scale: the scan runs on every request.
func BenchmarkWireScan(b *testing.B) {
	buf := mustMarshal(b, realInputs()["Edit"])
	b.ReportAllocs()
	for b.Loop() {
		if scanCheckRequest(buf, defaultScanLimits).verdict != scanOK {
			b.Fatal("refused")
		}
	}
}

func BenchmarkDecodeEdit(b *testing.B) {
	buf := mustMarshal(b, realInputs()["Edit"])
	b.ReportAllocs()
	for b.Loop() {
		var m pb.CheckRequest
		if err := proto.Unmarshal(buf, &m); err != nil {
			b.Fatal(err)
		}
	}
}
