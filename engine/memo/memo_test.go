package memo

import (
	"fmt"
	"sync"
	"testing"
)

func TestTableKeepsAnswers(t *testing.T) {
	tb := New[string, int](4)
	if _, ok := tb.Get("a"); ok {
		t.Fatal("an empty table answered")
	}
	tb.Put("a", 1)
	tb.Put("b", 2)
	for k, want := range map[string]int{"a": 1, "b": 2} {
		if got, ok := tb.Get(k); !ok || got != want {
			t.Errorf("Get(%q) = %d, %v; want %d", k, got, ok, want)
		}
	}
}

// A full generation is dropped whole: the table never holds more than its
// bound, however many different keys arrive.
func TestTableIsBounded(t *testing.T) {
	const n = 8
	tb := New[string, int](n)
	for i := range 10 * n {
		tb.Put(fmt.Sprint(i), i)
		held := 0
		for j := range i + 1 {
			if _, ok := tb.Get(fmt.Sprint(j)); ok {
				held++
			}
		}
		if held > n {
			t.Fatalf("after %d puts the table holds %d entries, more than %d", i+1, held, n)
		}
	}
	// The newest generation keeps answering.
	tb.Put("last", -1)
	if v, ok := tb.Get("last"); !ok || v != -1 {
		t.Fatalf("Get(last) = %d, %v after a new generation started", v, ok)
	}
}

func TestTableConcurrent(t *testing.T) {
	tb := New[int, int](64)
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			for i := range 1000 {
				k := (i*7 + g) % 200
				if v, ok := tb.Get(k); ok && v != k*k {
					t.Errorf("Get(%d) = %d, want %d", k, v, k*k)
					return
				}
				tb.Put(k, k*k)
			}
		})
	}
	wg.Wait()
}
