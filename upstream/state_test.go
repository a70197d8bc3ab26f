package upstream

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"

	pb "github.com/toolgate/toolgate/gen/toolgate/v1"
)

// TestState: the kept set round-trips, is 0600 in a 0700 directory made
// for it, leaves no temporary file, and a copy whose document no longer
// matches its version is refused.
func TestState(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "state")
	if _, err := LoadState(dir); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("nothing kept: %v", err)
	}
	doc := "policies:\n  default: {}\n"
	s := &Saved{Version: Version([]byte(doc)), Upstream: "centre:7000", Received: time.Unix(1, 0).UTC(), Document: doc}
	if err := SaveState(dir, s); err != nil {
		t.Fatal(err)
	}
	got, err := LoadState(dir)
	if err != nil || *got != *s {
		t.Fatalf("loaded %+v, %v", got, err)
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Errorf("left %d files", len(entries))
	}
	fi, _ := os.Stat(filepath.Join(dir, StateFile))
	di, _ := os.Stat(dir)
	if fi.Mode().Perm() != 0o600 || di.Mode().Perm() != 0o700 {
		t.Errorf("modes %v %v", fi.Mode(), di.Mode())
	}
	path := filepath.Join(dir, StateFile)
	data, _ := os.ReadFile(path)
	if err := os.WriteFile(path, []byte(strings.Replace(string(data), "default", "defaulx", 1)), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadState(dir); err == nil || !strings.Contains(err.Error(), "not the version it names") {
		t.Fatalf("tampered copy: %v", err)
	}
	// A file far bigger than any set kept is refused, not read whole.
	if err := os.WriteFile(path, make([]byte, 8*MaxDocumentBytes), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadState(dir); err == nil || !strings.Contains(err.Error(), "more than a policy set this server keeps") {
		t.Fatalf("oversized copy: %v", err)
	}
}

// TestWatcherRefuses: a set whose document does not hash to its version,
// or that does not apply, is refused and not kept; a sound new one is
// applied and kept; the one in force is not applied again.
func TestWatcherRefuses(t *testing.T) {
	dir := t.TempDir()
	var applied []string
	fail := false
	w := NewWatcher(nil, "centre:7000", dir, func(doc []byte, version, from string) error {
		if fail {
			return errors.New("does not compile")
		}
		applied = append(applied, version)
		return nil
	}, zap.NewNop(), nil)
	good := []byte("policies:\n  default: {}\n")
	w.receive(&pb.PolicySet{Version: Version([]byte("other")), Document: good})
	fail = true
	w.receive(&pb.PolicySet{Version: Version(good), Document: good})
	if len(applied) != 0 {
		t.Fatalf("applied %v", applied)
	}
	if _, err := LoadState(dir); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("a refused set was kept: %v", err)
	}
	fail = false
	w.receive(&pb.PolicySet{Version: Version(good), Document: good})
	w.receive(&pb.PolicySet{Version: Version(good), Document: good})
	if len(applied) != 1 {
		t.Fatalf("applied %v", applied)
	}
	if s, err := LoadState(dir); err != nil || s.Version != Version(good) {
		t.Fatalf("kept %v %v", s, err)
	}
}
