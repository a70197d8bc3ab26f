package app

import (
	"math"
	"runtime/debug"
	"testing"
)

func TestTuneGC(t *testing.T) {
	// Put back what the test process had.
	pct := debug.SetGCPercent(100)
	lim := debug.SetMemoryLimit(math.MaxInt64)
	t.Cleanup(func() {
		debug.SetGCPercent(pct)
		debug.SetMemoryLimit(lim)
	})

	TuneGC(func(string) string { return "" })
	if got := debug.SetGCPercent(100); got != serveGCPercent {
		t.Errorf("GC percent %d with no GOGC, want %d", got, serveGCPercent)
	}
	if got := debug.SetMemoryLimit(math.MaxInt64); got != serveMemoryLimit {
		t.Errorf("memory limit %d with no GOMEMLIMIT, want %d", got, serveMemoryLimit)
	}

	// The environment's own settings stay.
	TuneGC(func(k string) string { return map[string]string{"GOGC": "50", "GOMEMLIMIT": "1GiB"}[k] })
	if got := debug.SetGCPercent(100); got != 100 {
		t.Errorf("GC percent changed to %d although GOGC is set", got)
	}
	if got := debug.SetMemoryLimit(math.MaxInt64); got != math.MaxInt64 {
		t.Errorf("memory limit changed to %d although GOMEMLIMIT is set", got)
	}
}
