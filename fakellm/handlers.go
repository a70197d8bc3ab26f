package fakellm

import (
	"strings"
	"sync/atomic"
)

// BlockMarker is the text that makes DefaultHandler block.
const BlockMarker = "BLOCKME"

// DefaultHandler blocks when the user text contains BlockMarker and allows
// otherwise, with a short reason.
func DefaultHandler(r *Request) Reply {
	if strings.Contains(r.User, BlockMarker) {
		return Reply{
			Block:    true,
			Thinking: "The transcript contains the " + BlockMarker + " marker.",
			Reason:   "fakellm: the request contains " + BlockMarker,
		}
	}
	return Reply{
		Thinking: "No " + BlockMarker + " marker in the transcript.",
		Reason:   "fakellm: nothing to block",
	}
}

// Always answers every request with r.
func Always(r Reply) Handler {
	return func(*Request) Reply { return r }
}

// Sequence answers the i-th call of the handler (counting from 0, in the
// order the handler is called) with replies[i], and every call after the
// last with the last reply. With no replies it always allows.
func Sequence(replies ...Reply) Handler {
	if len(replies) == 0 {
		return Always(Reply{})
	}
	replies = append([]Reply(nil), replies...)
	var calls atomic.Int64
	return func(*Request) Reply {
		i := calls.Add(1) - 1
		if i >= int64(len(replies)) {
			i = int64(len(replies)) - 1
		}
		return replies[i]
	}
}
