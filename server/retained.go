package server

import "github.com/toolgate/toolgate/engine"

// retainedSize estimates the memory a converted transcript entry keeps: the
// entry, its text, and its tool call's input as Go maps and slices, which
// is what a stream holds for each entry until it ends. The encoded size
// understates it up to twenty times (a map entry for a two-byte field), so
// max_held_transcript_bytes counts this. The constants follow Go's
// layouts, rounded up (TestRetainedSizeCovers measures them).
func retainedSize(e engine.TranscriptEntry) int {
	n := 48 + len(e.Text) // the entry in its slice, its text
	if tc := e.ToolCall; tc != nil {
		n += 48 + len(tc.Name) + mapSize(tc.Input)
	}
	// Allocations are rounded up to size classes (up to 12.5% more).
	return n + n/8
}

func mapSize(m map[string]any) int {
	// A map's header; its first group of eight slots (a key and a value
	// each, and control bytes) once it has an entry; past eight entries
	// about 48 bytes each (slots at most 7/8 full).
	n := 64
	if len(m) > 0 {
		n += 8*32 + 24
	}
	if len(m) > 8 {
		n += (len(m) - 8) * 48
	}
	for k, v := range m {
		n += len(k) + anySize(v)
	}
	return n
}

// anySize is what v keeps beyond the interface slot holding it.
func anySize(v any) int {
	switch v := v.(type) {
	case string:
		return 16 + len(v) // the boxed header
	case float64:
		return 16 // 8, in a 16-byte block when the tiny allocator is off (-race)
	case map[string]any:
		return mapSize(v)
	case []any:
		n := 24 + 16*cap(v)
		for _, x := range v {
			n += anySize(x)
		}
		return n
	}
	return 0 // nil and bool need no allocation
}
