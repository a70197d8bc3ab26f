package server

import (
	"math/rand/v2"
	"strings"
	"testing"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"
)

// randomValue builds a Value of every kind, nested up to depth, with
// strings long enough for multi-byte length prefixes and, now and then,
// unknown fields.
func randomValue(r *rand.Rand, depth int) *structpb.Value {
	kinds := 6
	if depth == 0 {
		kinds = 4
	}
	var v *structpb.Value
	switch r.IntN(kinds) {
	case 0:
		v = structpb.NewNullValue()
	case 1:
		v = structpb.NewNumberValue(r.NormFloat64())
	case 2:
		v = structpb.NewStringValue(strings.Repeat("x", []int{0, 1, 127, 128, 20000}[r.IntN(5)]))
	case 3:
		v = structpb.NewBoolValue(r.IntN(2) == 0)
	case 4:
		v = structpb.NewStructValue(randomStruct(r, depth-1))
	case 5:
		l := &structpb.ListValue{}
		for range r.IntN(4) {
			l.Values = append(l.Values, randomValue(r, depth-1))
		}
		v = structpb.NewListValue(l)
	}
	addUnknown(r, v)
	return v
}

func randomStruct(r *rand.Rand, depth int) *structpb.Struct {
	s := &structpb.Struct{Fields: map[string]*structpb.Value{}}
	for i := range r.IntN(5) {
		s.Fields[strings.Repeat("k", i*70)] = randomValue(r, depth)
	}
	addUnknown(r, s)
	return s
}

func addUnknown(r *rand.Rand, m proto.Message) {
	if r.IntN(4) == 0 {
		b := protowire.AppendTag(nil, 99, protowire.BytesType)
		m.ProtoReflect().SetUnknown(protowire.AppendBytes(b, make([]byte, r.IntN(300))))
	}
}

func TestStructSizeMatchesProto(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for i := range 2000 {
		s := randomStruct(r, 3)
		if got, want := structSize(s), proto.Size(s); got != want {
			t.Fatalf("case %d: structSize %d, proto.Size %d: %v", i, got, want, s)
		}
	}
	// Edges the generator does not make: nil messages inside a Value, a
	// Value with no kind, nil entries in maps and lists.
	edges := []*structpb.Struct{
		nil,
		{},
		{Fields: map[string]*structpb.Value{"": {}}},
		{Fields: map[string]*structpb.Value{"a": nil}},
		{Fields: map[string]*structpb.Value{"s": {Kind: &structpb.Value_StructValue{}}}},
		{Fields: map[string]*structpb.Value{"l": {Kind: &structpb.Value_ListValue{}}}},
		{Fields: map[string]*structpb.Value{"l": structpb.NewListValue(&structpb.ListValue{Values: []*structpb.Value{{}}})}},
	}
	for i, s := range edges {
		if got, want := structSize(s), proto.Size(s); got != want {
			t.Errorf("edge %d: structSize %d, proto.Size %d: %v", i, got, want, s)
		}
	}
}

// FuzzStructSize compares with proto.Size on whatever a client could send.
func FuzzStructSize(f *testing.F) {
	r := rand.New(rand.NewPCG(3, 4))
	for range 8 {
		b, err := proto.Marshal(randomStruct(r, 3))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var s structpb.Struct
		if proto.Unmarshal(b, &s) != nil {
			return
		}
		if got, want := structSize(&s), proto.Size(&s); got != want {
			t.Fatalf("structSize %d, proto.Size %d", got, want)
		}
	})
}

func BenchmarkStructSize(b *testing.B) {
	in, err := structpb.NewStruct(map[string]any{
		"file_path":  "/home/dev/project/src/main.go",
		"old_string": strings.Repeat("a", 200),
		"new_string": strings.Repeat("b", 220),
		"replace":    false,
	})
	if err != nil {
		b.Fatal(err)
	}
	b.Run("structSize", func(b *testing.B) {
		for b.Loop() {
			structSize(in)
		}
	})
	b.Run("proto.Size", func(b *testing.B) {
		for b.Loop() {
			proto.Size(in)
		}
	})
}
