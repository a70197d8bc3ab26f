package config

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestReadFileRefusesWhatCouldWedgeOrBloat: a FIFO (which would block
// the reader for ever), a link to a device that reads without end, a
// directory and a file past the size bound are refused at once; a regular
// file, also through a link, is read.
func TestReadFileRefusesWhatCouldWedgeOrBloat(t *testing.T) {
	dir := t.TempDir()
	regular := filepath.Join(dir, "config.yaml")
	if err := os.WriteFile(regular, []byte("policies: {}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link.yaml")
	if err := os.Symlink(regular, link); err != nil {
		t.Fatal(err)
	}
	fifo := filepath.Join(dir, "fifo.yaml")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	zero := filepath.Join(dir, "zero.yaml")
	if err := os.Symlink("/dev/zero", zero); err != nil {
		t.Fatal(err)
	}
	huge := filepath.Join(dir, "huge.yaml")
	if err := os.WriteFile(huge, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(huge, 1<<40); err != nil { // sparse: no disk used
		t.Fatal(err)
	}
	atLimit := filepath.Join(dir, "limit.yaml")
	if err := os.WriteFile(atLimit, []byte(strings.Repeat("#", MaxFileBytes)), 0o644); err != nil {
		t.Fatal(err)
	}

	for _, p := range []string{regular, link, atLimit} {
		if _, err := ReadFile(p); err != nil {
			t.Errorf("ReadFile(%s): %v", filepath.Base(p), err)
		}
	}
	for _, tc := range []struct {
		path string
		want string
	}{
		{fifo, "not a regular file"},
		{zero, "not a regular file"},
		{dir, "not a regular file"},
		{huge, "more than the"},
		{filepath.Join(dir, "missing.yaml"), "no such file"},
	} {
		_, err := ReadFile(tc.path)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("ReadFile(%s) = %v, want an error containing %q", filepath.Base(tc.path), err, tc.want)
		}
	}
	if _, err := ReadFile(fifo); !errors.Is(err, ErrNotRegular) {
		t.Errorf("ReadFile(fifo) = %v, want ErrNotRegular", err)
	}
}
