package hook

import (
	"bytes"
	"encoding/json"
	"io"
	"os"
	"strings"
	"unicode/utf8"

	toolgatev1 "github.com/toolgate/toolgate/gen/toolgate/v1"
	"google.golang.org/protobuf/types/known/structpb"
)

// readTail returns the last maxBytes of the regular file at path, starting
// at a line boundary: when the window starts inside a line, that partial
// line is dropped. Errors and non-regular files (a FIFO would block) give
// nil.
func readTail(path string, maxBytes int64) []byte {
	f, err := os.Open(path)
	if err != nil {
		return nil
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil || !st.Mode().IsRegular() {
		return nil
	}
	size := st.Size()
	start := max(size-maxBytes, 0)
	buf := make([]byte, size-start)
	n, err := f.ReadAt(buf, start)
	if err != nil && err != io.EOF {
		return nil
	}
	buf = buf[:n]
	if start > 0 {
		var prev [1]byte
		if _, err := f.ReadAt(prev[:], start-1); err != nil {
			return nil
		}
		if prev[0] != '\n' {
			// The window starts mid-line: skip the cut line.
			i := bytes.IndexByte(buf, '\n')
			if i < 0 {
				return nil
			}
			buf = buf[i+1:]
		}
	}
	return buf
}

// claudeLine is one line of a Claude Code transcript (JSON lines).
type claudeLine struct {
	Type    string `json:"type"`
	Message *struct {
		Role    string          `json:"role"`
		Content json.RawMessage `json:"content"`
	} `json:"message"`
}

type claudeBlock struct {
	Type    string          `json:"type"`
	Text    string          `json:"text"`
	Name    string          `json:"name"`
	Input   map[string]any  `json:"input"`
	Content json.RawMessage `json:"content"`
}

// readClaudeTranscript returns the last n entries of the Claude Code
// transcript at path, oldest first, reading at most maxBytes from the end of
// the file. Lines that do not parse (including a line cut by the window) are
// skipped.
func readClaudeTranscript(path string, n int, maxBytes int64) []*toolgatev1.TranscriptEntry {
	data := readTail(path, maxBytes)
	var out []*toolgatev1.TranscriptEntry
	for line := range bytes.SplitSeq(data, []byte{'\n'}) {
		line = bytes.TrimSpace(line)
		if len(line) == 0 {
			continue
		}
		out = append(out, claudeEntries(line)...)
	}
	if len(out) > n {
		out = out[len(out)-n:]
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// claudeEntries converts one transcript line into zero or more entries.
func claudeEntries(line []byte) []*toolgatev1.TranscriptEntry {
	var l claudeLine
	if err := json.Unmarshal(line, &l); err != nil || l.Message == nil {
		return nil
	}
	kind := l.Type
	if kind != "user" && kind != "assistant" {
		if l.Type != "" {
			return nil // summary, system, file-history-snapshot, ...
		}
		kind = l.Message.Role
	}
	var textRole toolgatev1.Role
	switch kind {
	case "user":
		textRole = toolgatev1.Role_ROLE_USER
	case "assistant":
		textRole = toolgatev1.Role_ROLE_ASSISTANT
	default:
		return nil
	}
	content := bytes.TrimSpace(l.Message.Content)
	if len(content) == 0 {
		return nil
	}
	if content[0] == '"' {
		var s string
		if json.Unmarshal(content, &s) != nil || strings.TrimSpace(s) == "" {
			return nil
		}
		return []*toolgatev1.TranscriptEntry{{Role: textRole, Text: clip(s)}}
	}
	var blocks []claudeBlock
	if json.Unmarshal(content, &blocks) != nil {
		return nil
	}
	var out []*toolgatev1.TranscriptEntry
	for _, b := range blocks {
		switch b.Type {
		case "text":
			if strings.TrimSpace(b.Text) != "" {
				out = append(out, &toolgatev1.TranscriptEntry{Role: textRole, Text: clip(b.Text)})
			}
		case "tool_use":
			if b.Name == "" {
				continue
			}
			call := &toolgatev1.ToolCall{Name: b.Name}
			if in, err := structpb.NewStruct(b.Input); err == nil {
				call.Input = in
			}
			out = append(out, &toolgatev1.TranscriptEntry{Role: toolgatev1.Role_ROLE_ASSISTANT, ToolCall: call})
		case "tool_result":
			out = append(out, &toolgatev1.TranscriptEntry{
				Role: toolgatev1.Role_ROLE_TOOL_RESULT,
				Text: clip(resultText(b.Content)),
			})
		}
	}
	return out
}

// resultText flattens tool_result content: a string, or a list of blocks
// whose text blocks are joined by newlines (images and others are dropped).
func resultText(raw json.RawMessage) string {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return ""
	}
	if raw[0] == '"' {
		var s string
		_ = json.Unmarshal(raw, &s)
		return s
	}
	var blocks []claudeBlock
	if json.Unmarshal(raw, &blocks) != nil {
		return ""
	}
	var parts []string
	for _, b := range blocks {
		if b.Type == "text" && b.Text != "" {
			parts = append(parts, b.Text)
		}
	}
	return strings.Join(parts, "\n")
}

const clipMarker = " …[truncated]"

// clip cuts s to at most MaxEntryText bytes (plus a marker) on a rune
// boundary.
func clip(s string) string {
	if len(s) <= MaxEntryText {
		return s
	}
	cut := MaxEntryText
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + clipMarker
}
