package config

import (
	"errors"
	"fmt"
	"io"
	"os"
	"syscall"
	"time"
)

// Bounds on reading a config file or a settings file it imports. Agents
// may be able to replace these files (an imported settings file in a
// project, say): a FIFO, a device or a huge file must not wedge or bloat
// the server that reads it.
const (
	// MaxFileBytes is the largest file read.
	MaxFileBytes = 4 << 20
	// ReadTimeout bounds reading one file.
	ReadTimeout = 5 * time.Second
)

// ErrNotRegular is returned for a path that is not a regular file once
// links are followed: a FIFO, a socket or a device.
var ErrNotRegular = errors.New("not a regular file")

// ReadFile reads a config or settings file safely: a regular file only
// (opened without blocking, so that a FIFO is refused rather than waited
// on), at most MaxFileBytes, within ReadTimeout. It is the one way this
// package and the reloader read files.
func ReadFile(path string) ([]byte, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK|syscall.O_NOCTTY, 0)
	if err != nil {
		return nil, err
	}
	fi, err := f.Stat()
	switch {
	case err != nil:
		f.Close()
		return nil, err
	case !fi.Mode().IsRegular():
		f.Close()
		return nil, fmt.Errorf("%s: %w (%s)", path, ErrNotRegular, fi.Mode().Type())
	case fi.Size() > MaxFileBytes:
		f.Close()
		return nil, fmt.Errorf("%s: %d bytes, more than the %d a config file may have", path, fi.Size(), MaxFileBytes)
	}
	type result struct {
		data []byte
		err  error
	}
	done := make(chan result, 1)
	go func() {
		// A regular file's read ends; a network or FUSE mount may stall
		// it, and then the caller stops waiting and this goroutine ends
		// with the read.
		defer f.Close()
		data, err := io.ReadAll(io.LimitReader(f, MaxFileBytes+1))
		done <- result{data, err}
	}()
	timer := time.NewTimer(ReadTimeout)
	defer timer.Stop()
	select {
	case r := <-done:
		if r.err != nil {
			return nil, r.err
		}
		if len(r.data) > MaxFileBytes {
			return nil, fmt.Errorf("%s: grew past the %d bytes a config file may have while being read", path, MaxFileBytes)
		}
		return r.data, nil
	case <-timer.C:
		return nil, fmt.Errorf("%s: not read within %s", path, ReadTimeout)
	}
}
