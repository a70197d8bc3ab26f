//go:build unix

package codex

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
)

// recordDir holds the normalised recordings, written with TOOLGATE_RECORD=1.
const recordDir = "testdata/recorded"

// normalizer replaces what changes from run to run (temporary paths, ports,
// ids, times) by placeholders, the same way in every file of one session.
type normalizer struct {
	paths []pair
	ids   map[string]string
}

type pair struct{ from, to string }

func newNormalizer(e *env) *normalizer {
	n := &normalizer{ids: map[string]string{}}
	add := func(from, to string) {
		if from != "" {
			n.paths = append(n.paths, pair{from, to})
		}
	}
	add(e.project, "$CWD")
	add(e.other, "$OTHER")
	add(e.other2, "$OTHER2")
	add(e.outside, "$OUTSIDE")
	add(e.home, "$HOME")
	add(e.binDir, "$TOOLGATE_BIN_DIR")
	add(e.root, "$TMP")
	add(e.fake.hostPort(), "$FAKE_MODEL")
	add(e.addr, "$TOOLGATE_ADDR")
	sort.SliceStable(n.paths, func(i, j int) bool { return len(n.paths[i].from) > len(n.paths[j].from) })
	return n
}

var (
	uuidRE     = regexp.MustCompile(`[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}`)
	rolloutRE  = regexp.MustCompile(`rollout-\d{4}-\d\d-\d\dT\d\d-\d\d-\d\d-`)
	sessionsRE = regexp.MustCompile(`sessions/\d{4}/\d\d/\d\d/`)
	stampRE    = regexp.MustCompile(`\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z`)
	dateRE     = regexp.MustCompile(`\b20\d\d-\d\d-\d\d\b`)
	timeKeyRE  = regexp.MustCompile(`"(started_at|completed_at|started_at_ms|completed_at_ms|create_time|duration_ms|time_to_first_token_ms|turn_started_at_unix_ms)":\s*[0-9.]+`)
	pidRE      = regexp.MustCompile(`"process_id":\s*"\d+"`)
	chunkRE    = regexp.MustCompile(`Chunk ID: [0-9a-f]+`)
	wallRE     = regexp.MustCompile(`Wall time: [0-9.]+ seconds`)
	durRE      = regexp.MustCompile(`"duration":\s*\{"secs":\s*\d+,\s*"nanos":\s*\d+\}`)
)

func (n *normalizer) text(s string) string {
	for _, p := range n.paths {
		s = strings.ReplaceAll(s, p.from, p.to)
	}
	s = uuidRE.ReplaceAllStringFunc(s, func(id string) string {
		if r, ok := n.ids[id]; ok {
			return r
		}
		r := fmt.Sprintf("00000000-0000-0000-0000-%012d", len(n.ids)+1)
		n.ids[id] = r
		return r
	})
	s = rolloutRE.ReplaceAllString(s, "rollout-2000-01-01T00-00-00-")
	s = sessionsRE.ReplaceAllString(s, "sessions/2000/01/01/")
	s = stampRE.ReplaceAllString(s, "2000-01-01T00:00:00.000Z")
	s = dateRE.ReplaceAllString(s, "2000-01-01")
	s = timeKeyRE.ReplaceAllString(s, `"$1":0`)
	s = pidRE.ReplaceAllString(s, `"process_id":"0"`)
	s = chunkRE.ReplaceAllString(s, "Chunk ID: 000000")
	s = wallRE.ReplaceAllString(s, "Wall time: 0.0000 seconds")
	s = durRE.ReplaceAllString(s, `"duration":{"secs":0,"nanos":0}`)
	return s
}

// writeRecordings writes each case's hook input (indented) and the rollout
// file, normalised, under testdata/recorded.
func writeRecordings(t *testing.T, e *env, inputs map[string]json.RawMessage, names map[string]string, rollout string) {
	t.Helper()
	if err := os.MkdirAll(recordDir, 0o755); err != nil {
		t.Fatal(err)
	}
	n := newNormalizer(e)
	for _, c := range cases { // in table order, so that ids number the same way each time
		id := c.call(e).id
		raw, ok := inputs[id]
		if !ok {
			continue
		}
		var buf bytes.Buffer
		if err := json.Indent(&buf, []byte(n.text(string(raw))), "", "  "); err != nil {
			t.Fatalf("normalised hook input of %s: %v", id, err)
		}
		buf.WriteByte('\n')
		path := filepath.Join(recordDir, names[id]+".json")
		if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("recorded %s", path)
	}
	b, err := os.ReadFile(rollout)
	if err != nil {
		t.Fatalf("rollout: %v", err)
	}
	path := filepath.Join(recordDir, "rollout.jsonl")
	if err := os.WriteFile(path, []byte(n.text(string(b))), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("recorded %s", path)
}
