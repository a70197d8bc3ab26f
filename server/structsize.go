package server

import (
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/types/known/structpb"
)

// structSize is proto.Size(s) computed directly. proto.Size walks Struct's
// map by reflection (BenchmarkStructSize, an Edit's input: 0.5 µs and four
// allocations, against 0.07 µs and none here) for a size that only guards
// a limit. structsize_test.go compares the two on random values, unknown
// fields included, and FuzzStructSize on whatever decodes as a Struct.
func structSize(s *structpb.Struct) int {
	if s == nil {
		return 0
	}
	n := len(s.ProtoReflect().GetUnknown())
	for k, v := range s.GetFields() {
		// A map entry is a message of key (field 1) and value (field 2);
		// both are always written.
		entry := 1 + protowire.SizeBytes(len(k)) + 1 + protowire.SizeBytes(valueSize(v))
		n += 1 + protowire.SizeBytes(entry)
	}
	return n
}

func listSize(l *structpb.ListValue) int {
	if l == nil {
		return 0
	}
	n := len(l.ProtoReflect().GetUnknown())
	for _, v := range l.GetValues() {
		n += 1 + protowire.SizeBytes(valueSize(v))
	}
	return n
}

// valueSize sizes a Value: its one set field (a oneof member is written
// even when zero) and any unknown fields.
func valueSize(v *structpb.Value) int {
	if v == nil {
		return 0
	}
	n := len(v.ProtoReflect().GetUnknown())
	switch k := v.GetKind().(type) {
	case *structpb.Value_NullValue:
		n += 1 + protowire.SizeVarint(uint64(k.NullValue))
	case *structpb.Value_NumberValue:
		n += 1 + protowire.SizeFixed64()
	case *structpb.Value_StringValue:
		n += 1 + protowire.SizeBytes(len(k.StringValue))
	case *structpb.Value_BoolValue:
		n += 1 + 1
	case *structpb.Value_StructValue:
		n += 1 + protowire.SizeBytes(structSize(k.StructValue))
	case *structpb.Value_ListValue:
		n += 1 + protowire.SizeBytes(listSize(k.ListValue))
	}
	return n
}
