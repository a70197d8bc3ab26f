package sessionblocks

import (
	"strings"
	"testing"
)

func TestCounts(t *testing.T) {
	s, err := New(Limits{Consecutive: 2, Total: 3})
	if err != nil {
		t.Fatal(err)
	}
	a := s.Get("a")
	a.Record(true)
	if _, over := a.Over(); over {
		t.Fatal("over after one block")
	}
	a.Record(false) // a verdict that is no block ends the run
	a.Record(true)
	if _, over := s.Get("a").Over(); over {
		t.Fatal("over after a run of one")
	}
	a.Record(true)
	if why, over := s.Get("a").Over(); !over || !strings.Contains(why, "2 calls in a row") {
		t.Fatalf("after two in a row: %q %v", why, over)
	}
	a.Record(false)
	if why, over := a.Over(); !over || !strings.Contains(why, "3 calls in this session") {
		t.Fatalf("after three in all: %q %v", why, over)
	}
	if _, over := s.Get("b").Over(); over {
		t.Fatal("another session counted")
	}
	none := s.Get("")
	none.Record(true)
	none.Record(true)
	if _, over := none.Over(); over || none != nil {
		t.Fatal("a request without a session id is counted")
	}
	if _, err := New(Limits{Consecutive: 0, Total: 1}); err == nil {
		t.Fatal("zero limit accepted")
	}
}
