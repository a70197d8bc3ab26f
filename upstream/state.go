package upstream

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"time"
)

// StateFile is the name of the last good policy set in the state
// directory.
const StateFile = "policy.json"

// Saved is a policy set as the state directory keeps it.
type Saved struct {
	// Version is "sha256:" and the hex SHA-256 of Document.
	Version string `json:"version"`
	// Upstream is the address it was received from.
	Upstream string    `json:"upstream"`
	Received time.Time `json:"received"`
	// Document is the served form of the policies.
	Document string `json:"document"`
}

// Version is the version of a served policy document: the same as the
// centre computes (config.Version).
func Version(doc []byte) string {
	sum := sha256.Sum256(doc)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// LoadState reads the policy set kept in dir. It returns an error wrapping
// fs.ErrNotExist when there is none, and refuses a file whose document
// does not match its version (a torn or edited copy).
func LoadState(dir string) (*Saved, error) {
	path := filepath.Join(dir, StateFile)
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("upstream.state_dir: %w", err)
	}
	defer f.Close()
	// The document is at most MaxDocumentBytes; JSON escaping at most
	// sextuples a byte. A bigger file is no copy this server wrote.
	const maxState = 6*MaxDocumentBytes + 64<<10
	data, err := io.ReadAll(io.LimitReader(f, maxState+1))
	switch {
	case err != nil:
		return nil, fmt.Errorf("upstream.state_dir: %w", err)
	case len(data) > maxState:
		return nil, fmt.Errorf("upstream.state_dir: %s is over %d bytes, more than a policy set this server keeps", path, maxState)
	}
	var s Saved
	if err := json.Unmarshal(data, &s); err != nil {
		return nil, fmt.Errorf("upstream.state_dir: %s: %w", path, err)
	}
	if got := Version([]byte(s.Document)); got != s.Version {
		return nil, fmt.Errorf("upstream.state_dir: %s: its document hashes to %s, not the version it names (%s)", path, got, s.Version)
	}
	return &s, nil
}

// SaveState replaces the policy set kept in dir, atomically: a file of
// mode 0600 written and synced beside it, renamed over it, and the
// directory synced, so that a crash leaves the old copy or the new one.
// dir is made (0700) when missing.
func SaveState(dir string, s *Saved) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("upstream.state_dir: %w", err)
	}
	data, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(dir, "."+StateFile+".*")
	if err != nil {
		return fmt.Errorf("upstream.state_dir: %w", err)
	}
	done := false
	defer func() {
		if !done {
			_ = tmp.Close()
			_ = os.Remove(tmp.Name())
		}
	}()
	// CreateTemp makes it 0600; said again, as the copy is policy.
	if err := tmp.Chmod(0o600); err != nil {
		return fmt.Errorf("upstream.state_dir: %w", err)
	}
	if _, err := tmp.Write(data); err != nil {
		return fmt.Errorf("upstream.state_dir: %w", err)
	}
	if err := tmp.Sync(); err != nil {
		return fmt.Errorf("upstream.state_dir: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("upstream.state_dir: %w", err)
	}
	if err := os.Rename(tmp.Name(), filepath.Join(dir, StateFile)); err != nil {
		return fmt.Errorf("upstream.state_dir: %w", err)
	}
	done = true
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("upstream.state_dir: %w", err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil && !errors.Is(err, fs.ErrInvalid) {
		return fmt.Errorf("upstream.state_dir: syncing %s: %w", dir, err)
	}
	return nil
}
