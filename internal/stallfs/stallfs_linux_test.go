//go:build linux

package stallfs

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// A stat under the mount blocks until Close, then fails with ENOTCONN.
func TestStallBlocksUntilClose(t *testing.T) {
	if err := Available(); err != nil {
		t.Skipf("no stalled FUSE mount: %v", err)
	}
	dir := t.TempDir()
	s, err := New(dir)
	if err != nil {
		t.Skipf("no stalled FUSE mount: %v", err)
	}
	defer s.Close()
	if n, err := s.Waiting(); err != nil || n != 0 {
		t.Fatalf("before any call: %d waiting (%v), want 0", n, err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := os.Stat(filepath.Join(dir, "x"))
		done <- err
	}()
	// The kernel counts the blocked request: proof that the stat waits on
	// the mount, not merely that it has not run yet.
	for {
		n, err := s.Waiting()
		if err != nil {
			t.Fatal(err)
		}
		if n == 1 {
			break
		}
		select {
		case err := <-done:
			t.Fatalf("stat on the stalled mount returned %v before Close", err)
		case <-time.After(5 * time.Millisecond):
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if !errors.Is(err, unix.ENOTCONN) {
			t.Fatalf("stat after Close: %v, want ENOTCONN", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("stat still blocked 10s after Close")
	}
}
