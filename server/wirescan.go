package server

import (
	"google.golang.org/protobuf/encoding/protowire"
)

// The wire scan reads a request's bytes before they are decoded and tells
// what decoding them would cost. A request is small on the wire and large
// once decoded when it is made of many tiny values: an empty
// google.protobuf.Value is two bytes on the wire and about 90 once decoded
// and converted for the engine, an empty object about 190 (measured:
// TestDecodedCostCovers). Limits checked on the decoded request (the tool
// input's encoded size, the transcript's length) come too late for those:
// the memory is taken by then. So the scan bounds the structure first (the
// nesting of Struct/Value/ListValue, the number of items) and estimates the
// whole message's cost for the decode budget; a request past a bound is
// refused without being decoded. It is one pass over the bytes, allocation
// free, recursing only as deep as the nesting it allows.

// scanLimits are the per-message bounds of the scan.
type scanLimits struct {
	// maxItems bounds what decoding allocates one by one: every
	// Struct/ListValue value, every Struct field, every transcript entry,
	// every element of a repeated string.
	maxItems int
	// maxDepth bounds the nesting of Struct and ListValue values.
	maxDepth int
}

// scanVerdict is what the scan found.
type scanVerdict int

const (
	scanOK        scanVerdict = iota
	scanTooMany               // past maxItems
	scanTooDeep               // past maxDepth
	scanMalformed             // not valid wire data; protobuf will say why
)

// wireScan is the result of one scan: the verdict, the items counted (up to
// the point where the scan stopped), the deepest nesting seen and the
// estimated cost in bytes of the message once decoded and converted.
type wireScan struct {
	verdict scanVerdict
	items   int
	depth   int
	cost    int64
}

// Estimated decoded cost, in bytes, of each thing the scan counts: the Go
// structs protobuf allocates (a Value and its oneof wrapper, a Struct and
// its map, a ListValue and its slice) and what the engine's conversion
// (structpb AsMap: map[string]any, []any) allocates again. Each is rounded
// up from TestDecodedCostCovers's measurements, which hold the sum to
// cover the real cost of every shape it tries.
const (
	costPerField   = 16       // any field occurrence: a string header, a slice slot
	costPerItem    = 112      // a Value (protobuf's and its conversion), a repeated element
	costPerStruct  = 128      // a Struct with no fields
	costPerMap     = 640      // a Struct's first field: both maps' first groups
	costPerEntry   = 96       // each further field: map slots in both maps
	costPerList    = 112      // a ListValue and its []any
	costPerMessage = 160      // a transcript entry, a tool call: their structs
	costWireFactor = 2        // the wire bytes while decoding, and the strings copied out of them
	largeAlloc     = 32 << 10 // the Go allocator's largest size class
	pageSize       = 8 << 10  // what it rounds larger allocations up to
)

// message kinds the scan knows; everything else is skipped as bytes.
type wireKind uint8

const (
	kindCheckStreamRequest wireKind = iota
	kindCheckRequest
	kindSessionContext
	kindTranscriptAppend
	kindTranscriptEntry
	kindToolCall
	kindRules
	kindStruct
	kindStructEntry
	kindValue
	kindListValue
	// kindClassifyRequest is a local server's forwarded check.
	kindClassifyRequest
)

type scanner struct {
	lim   scanLimits
	items int
	depth int // the deepest Struct/List nesting seen
	cost  int64
	stop  scanVerdict
}

// scanCheckRequest scans a CheckRequest.
func scanCheckRequest(b []byte, lim scanLimits) wireScan {
	return runScan(b, kindCheckRequest, lim)
}

// scanClassifyRequest scans an UpstreamService ClassifyRequest: the check
// it carries is bounded as any check is.
func scanClassifyRequest(b []byte, lim scanLimits) wireScan {
	return runScan(b, kindClassifyRequest, lim)
}

// scanCheckStreamRequest scans a CheckStreamRequest.
func scanCheckStreamRequest(b []byte, lim scanLimits) wireScan {
	return runScan(b, kindCheckStreamRequest, lim)
}

func runScan(b []byte, kind wireKind, lim scanLimits) wireScan {
	s := scanner{lim: lim}
	s.message(b, kind, 0)
	return wireScan{verdict: s.stop, items: s.items, depth: s.depth, cost: s.cost + int64(len(b))*costWireFactor}
}

// child is the kind of the message in field num of a message of kind k
// (given it is length-delimited), and whether each occurrence counts as an
// item (a repeated field's element). ok is false for fields scanned as
// bytes only.
func child(k wireKind, num protowire.Number) (c wireKind, item, ok bool) {
	switch k {
	case kindClassifyRequest:
		if num == 1 {
			return kindCheckRequest, false, true
		}
	case kindCheckStreamRequest:
		switch num {
		case 1:
			return kindSessionContext, false, true
		case 2:
			return kindCheckRequest, false, true
		case 3:
			return kindTranscriptAppend, false, true
		}
	case kindCheckRequest:
		switch num {
		case 3:
			return kindToolCall, false, true
		case 7:
			return kindTranscriptEntry, true, true
		case 9:
			return kindRules, false, true
		}
	case kindSessionContext:
		if num == 6 {
			return kindRules, false, true
		}
	case kindTranscriptAppend:
		if num == 1 {
			return kindTranscriptEntry, true, true
		}
	case kindTranscriptEntry:
		if num == 3 {
			return kindToolCall, false, true
		}
	case kindToolCall:
		if num == 2 {
			return kindStruct, false, true
		}
	case kindStruct:
		if num == 1 {
			return kindStructEntry, true, true
		}
	case kindStructEntry:
		// Counted with the entry: protobuf makes a Value for an entry
		// that has none.
		if num == 2 {
			return kindValue, false, true
		}
	case kindValue:
		switch num {
		case 5:
			return kindStruct, false, true
		case 6:
			return kindListValue, false, true
		}
	case kindListValue:
		if num == 1 {
			return kindValue, true, true
		}
	}
	return 0, false, false
}

// repeatedString reports the repeated string fields of kind k: each element
// is a string header and a slot, allocated one by one.
func repeatedString(k wireKind, num protowire.Number) bool {
	switch k {
	case kindCheckRequest:
		return num == 5 // additional_directories
	case kindSessionContext:
		return num == 3 // additional_directories
	case kindRules:
		return num >= 1 && num <= 3 // allow, ask, deny
	}
	return false
}

// message scans the body b of a message of kind k at Struct/List nesting
// depth. It returns false once the scan has stopped (a bound passed, or
// malformed data).
func (s *scanner) message(b []byte, k wireKind, depth int) bool {
	switch k {
	case kindStruct:
		s.cost += costPerStruct
	case kindListValue:
		s.cost += costPerList
	case kindTranscriptEntry, kindToolCall:
		s.cost += costPerMessage
	}
	if k == kindStruct || k == kindListValue {
		depth++
		if depth > s.depth {
			s.depth = depth
		}
		if depth > s.lim.maxDepth {
			s.stop = scanTooDeep
			return false
		}
	}
	entries := 0
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			s.stop = scanMalformed
			return false
		}
		b = b[n:]
		s.cost += costPerField
		if typ != protowire.BytesType {
			// Scalars, and a known field sent with another wire type,
			// which protobuf keeps as unknown bytes.
			n = protowire.ConsumeFieldValue(num, typ, b)
			if n < 0 {
				s.stop = scanMalformed
				return false
			}
			b = b[n:]
			continue
		}
		v, n := protowire.ConsumeBytes(b)
		if n < 0 {
			s.stop = scanMalformed
			return false
		}
		b = b[n:]
		if len(v) > largeAlloc {
			// A string copied out of it is a large allocation, rounded
			// up to whole pages.
			s.cost += pageSize
		}
		c, item, ok := child(k, num)
		if !ok {
			if repeatedString(k, num) && !s.item() {
				return false
			}
			continue
		}
		if k == kindStruct {
			if !s.item() { // the entry's Value; item below counts the entry
				return false
			}
			entries++
			if entries == 1 {
				s.cost += costPerMap
			} else {
				s.cost += costPerEntry
			}
		}
		if item && !s.item() {
			return false
		}
		if !s.message(v, c, depth) {
			return false
		}
	}
	return true
}

// item counts one item, and reports false past the bound.
func (s *scanner) item() bool {
	s.items++
	s.cost += costPerItem
	if s.items > s.lim.maxItems {
		s.stop = scanTooMany
		return false
	}
	return true
}

// maxRequestCost is the most a request within the bounds can be estimated
// to cost: every byte on the wire and every item at the dearest rate (an
// item in a struct of its own: the value, the struct, its map).
func maxRequestCost(recvBytes, items int) int64 {
	return int64(recvBytes)*costWireFactor + int64(items)*(costPerItem+costPerStruct+costPerMap+costPerField)
}
