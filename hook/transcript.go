package hook

import (
	"bytes"
	"encoding/json"
	"io"
	"strings"
	"unicode/utf8"

	toolgatev1 "github.com/toolgate/toolgate/gen/toolgate/v1"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"
)

// readTail returns the last maxBytes of the regular file at path, starting
// at a line boundary: when the window starts inside a line, that partial
// line is dropped. Errors and non-regular files give nil. The file is opened
// non-blocking, as opening a FIFO for reading would otherwise wait for a
// writer before the check below could refuse it.
func readTail(open Opener, path string, maxBytes int64) []byte {
	f, err := open(path)
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
	Type string `json:"type"`
	// Lines Claude Code writes with the user's role that the user did not
	// type: meta lines (a skill's instructions, caveats), a compaction's
	// summary, prompts from the system (scheduled tasks, notifications),
	// and a subagent's own conversation.
	IsMeta           bool   `json:"isMeta"`
	IsCompactSummary bool   `json:"isCompactSummary"`
	IsSidechain      bool   `json:"isSidechain"`
	PromptSource     string `json:"promptSource"`
	Message          *struct {
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
func readClaudeTranscript(open Opener, path string, n int, maxBytes int64) []*toolgatev1.TranscriptEntry {
	data := readTail(open, path, maxBytes)
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
	if l.IsSidechain {
		return nil
	}
	var textRole toolgatev1.Role
	switch kind {
	case "user":
		textRole = toolgatev1.Role_ROLE_USER
		if l.IsMeta || l.IsCompactSummary || l.PromptSource == "system" {
			// Text the classifier must not take for the user's words;
			// what it says can come from the repository.
			textRole = toolgatev1.Role_ROLE_UNSPECIFIED
		}
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
		if json.Unmarshal(content, &s) != nil {
			return nil
		}
		if e := claudeText(textRole, s); e != nil {
			return []*toolgatev1.TranscriptEntry{e}
		}
		return nil
	}
	var blocks []claudeBlock
	if json.Unmarshal(content, &blocks) != nil {
		return nil
	}
	var out []*toolgatev1.TranscriptEntry
	for _, b := range blocks {
		switch b.Type {
		case "text":
			if e := claudeText(textRole, b.Text); e != nil {
				out = append(out, e)
			}
		case "tool_use":
			if b.Name == "" {
				continue
			}
			call := &toolgatev1.ToolCall{Name: b.Name, Input: callInput(b.Input)}
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

// claudeText is the entry for a text block, or nil. In a user message,
// what Claude Code adds itself is not the user's words: system reminders
// inside the text are dropped, and the output of a command the user ran
// locally (! or a slash command) is a tool result, data rather than a
// request.
func claudeText(role toolgatev1.Role, s string) *toolgatev1.TranscriptEntry {
	switch role {
	case toolgatev1.Role_ROLE_UNSPECIFIED:
		return nil
	case toolgatev1.Role_ROLE_USER:
		s = stripTagged(s, "system-reminder")
		t := strings.TrimSpace(s)
		for _, tag := range []string{"<local-command-stdout>", "<local-command-stderr>", "<bash-stdout>", "<bash-stderr>", "<task-notification>"} {
			if strings.HasPrefix(t, tag) {
				role = toolgatev1.Role_ROLE_TOOL_RESULT
				break
			}
		}
	}
	if strings.TrimSpace(s) == "" {
		return nil
	}
	return &toolgatev1.TranscriptEntry{Role: role, Text: clip(s)}
}

// stripTagged removes every <tag>...</tag> span from s; an unclosed one
// runs to the end.
func stripTagged(s, tag string) string {
	open, end := "<"+tag+">", "</"+tag+">"
	for {
		i := strings.Index(s, open)
		if i < 0 {
			return s
		}
		j := strings.Index(s[i:], end)
		if j < 0 {
			return s[:i]
		}
		s = s[:i] + s[i+j+len(end):]
	}
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
func clip(s string) string { return clipTo(s, MaxEntryText) }

// clipTo cuts s to at most n bytes (plus a marker) on a rune boundary.
func clipTo(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + clipMarker
}

// codexLine is one line of a Codex rollout file (JSON lines of
// {"timestamp", "type", "payload"}; RolloutLine in codex-rs/protocol).
type codexLine struct {
	Type    string          `json:"type"`
	Payload json.RawMessage `json:"payload"`
}

// codexPayload holds the fields of the payloads readCodexTranscript uses.
// Fields whose type differs between payload kinds stay raw.
type codexPayload struct {
	Type      string          `json:"type"`
	Role      string          `json:"role"`
	Content   json.RawMessage `json:"content"`
	Message   json.RawMessage `json:"message"`
	Name      string          `json:"name"`
	Arguments json.RawMessage `json:"arguments"`
	Input     json.RawMessage `json:"input"`
	Output    json.RawMessage `json:"output"`
	Action    json.RawMessage `json:"action"`
	Item      json.RawMessage `json:"item"`
}

// readCodexTranscript returns the last n entries of the Codex rollout file
// at path, oldest first, reading at most maxBytes from the end of the file.
//
// What the user typed comes from event_msg lines only ("user_message", or
// in current rollouts "item_completed" with a "UserMessage" item): the
// user-role response items also carry text Codex injects (AGENTS.md files
// of the repository, environment context), which must not pass for the
// user's words. Assistant text, tool calls (function_call, custom_tool_call,
// local_shell_call) and tool outputs come from response_item lines; a
// custom_tool_call's text becomes {"input": ...}, apply_patch's own
// argument. Everything else (reasoning, developer messages, session and turn
// metadata, other events) is skipped, as are lines that do not parse.
func readCodexTranscript(open Opener, path string, n int, maxBytes int64) []*toolgatev1.TranscriptEntry {
	data := readTail(open, path, maxBytes)
	var out []*toolgatev1.TranscriptEntry
	for line := range bytes.SplitSeq(data, []byte{'\n'}) {
		line = bytes.TrimSpace(line)
		if e := codexEntry(line); e != nil {
			// A rollout written across versions may say the prompt both
			// ways (user_message, then a UserMessage item): once is enough.
			if k := len(out); k > 0 && e.GetRole() == toolgatev1.Role_ROLE_USER && proto.Equal(out[k-1], e) {
				continue
			}
			out = append(out, e)
		}
	}
	if len(out) > n {
		out = out[len(out)-n:]
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// codexCall is what a rollout says about one tool call: the cwd of its
// turn, and the call as the model made it.
type codexCall struct {
	// turnCwd is payload.cwd of the turn's last turn_context line, when
	// absolute.
	turnCwd string
	// calls counts the call lines with the call's id in the turn (one,
	// when the rollout is sound).
	calls int
	// typ is the call line's payload type (function_call,
	// custom_tool_call or local_shell_call), payload its members.
	typ     string
	payload map[string]json.RawMessage
}

// maxRolloutScan bounds how far back from the end of a rollout the turn
// and the call are looked for: a turn's turn_context line is written when
// the turn starts, and a long turn's tool outputs can be megabytes.
const maxRolloutScan = 64 << 20

// readCodexCall reads the rollout at path backwards from its end, up to
// maxRolloutScan bytes, for the call callID of the turn turnID: the call
// line and the turn's turn_context line, which precedes it. Keys are
// matched exactly (exactObject); a line that does not parse is skipped.
func readCodexCall(open Opener, path, turnID, callID string) codexCall {
	if turnID == "" || callID == "" {
		return codexCall{}
	}
	quotedID, _ := json.Marshal(callID)
	return scanCodexTurn(open, path, turnID, quotedID, func(_ string, p map[string]json.RawMessage) bool {
		return jsonString(p["call_id"]) == callID
	})
}

// readCodexShellCall is readCodexCall for a hook input that names no call
// (Codex's PermissionRequest has no tool_use_id): the turn's shell calls
// whose command, as the hook gets it, is command. A call whose command
// cannot be compared (a list of words) counts as one too, so that the call
// is known only when exactly one could be it.
func readCodexShellCall(open Opener, path, turnID string, command any) codexCall {
	cmd, ok := command.(string)
	if turnID == "" || !ok {
		return codexCall{}
	}
	return scanCodexTurn(open, path, turnID, []byte(`"response_item"`), func(typ string, p map[string]json.RawMessage) bool {
		switch key := codexShellFunctions[jsonString(p["name"])]; {
		case typ == "local_shell_call", typ == "function_call" && key == "-":
			return true
		case typ == "function_call" && key != "":
			args, err := exactObject([]byte(jsonString(p["arguments"])))
			return err != nil || jsonString(args[key]) == cmd
		}
		return false
	})
}

// scanCodexTurn reads the rollout at path backwards from its end, up to
// maxRolloutScan bytes, for the turn turnID's turn_context line and its
// call lines (those holding quick) that match: the last one read, which
// is the turn's first, and how many there are. Keys are matched exactly
// (exactObject); a line that does not parse is skipped.
func scanCodexTurn(open Opener, path, turnID string, quick []byte, match func(typ string, payload map[string]json.RawMessage) bool) codexCall {
	var c codexCall
	scanLinesBackward(open, path, maxRolloutScan, func(line []byte) bool {
		if bytes.Contains(line, []byte(`"turn_context"`)) {
			if p, ok := rolloutPayload(line, "turn_context"); ok && jsonString(p["turn_id"]) == turnID {
				c.turnCwd = absOrEmpty(jsonString(p["cwd"]))
				return true // the turn starts here: its calls are all behind
			}
		}
		if !bytes.Contains(line, quick) {
			return false
		}
		p, ok := rolloutPayload(line, "response_item")
		if !ok {
			return false
		}
		switch typ := jsonString(p["type"]); typ {
		case "function_call", "custom_tool_call", "local_shell_call":
			if match(typ, p) {
				c.calls++
				c.typ, c.payload = typ, p
			}
		}
		return false
	})
	if c.turnCwd == "" {
		// The call's turn was not found: neither is the call known to be
		// of it.
		return codexCall{}
	}
	return c
}

// rolloutPayload returns the payload members of a rollout line of type
// typ.
func rolloutPayload(line []byte, typ string) (map[string]json.RawMessage, bool) {
	l, err := exactObject(line)
	if err != nil || jsonString(l["type"]) != typ {
		return nil, false
	}
	p, err := exactObject(l["payload"])
	return p, err == nil
}

// scanLinesBackward calls fn with the lines of the regular file at path,
// last first, until fn returns true or maxBytes from the end have been
// read; a line that starts before that point is not passed.
func scanLinesBackward(open Opener, path string, maxBytes int64, fn func(line []byte) bool) {
	f, err := open(path)
	if err != nil {
		return
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil || !st.Mode().IsRegular() {
		return
	}
	const chunk = 1 << 20
	size := st.Size()
	end := size
	var carry []byte // the start of the part already read: a line cut by that read
	for end > 0 && size-end < maxBytes {
		start := max(end-chunk, 0)
		buf := make([]byte, end-start, end-start+int64(len(carry)))
		if _, err := f.ReadAt(buf, start); err != nil && err != io.EOF {
			return
		}
		buf = append(buf, carry...)
		for {
			i := bytes.LastIndexByte(buf, '\n')
			if i < 0 {
				break
			}
			if line := bytes.TrimSpace(buf[i+1:]); len(line) > 0 && fn(line) {
				return
			}
			buf = buf[:i]
		}
		if start == 0 {
			if line := bytes.TrimSpace(buf); len(line) > 0 {
				fn(line)
			}
			return
		}
		carry, end = buf, start
	}
}

// codexEntry converts one rollout line into an entry, or nil.
func codexEntry(line []byte) *toolgatev1.TranscriptEntry {
	var l codexLine
	if len(line) == 0 || json.Unmarshal(line, &l) != nil {
		return nil
	}
	var p codexPayload
	if json.Unmarshal(l.Payload, &p) != nil {
		return nil
	}
	switch {
	case l.Type == "event_msg" && p.Type == "user_message":
		return textEntry(toolgatev1.Role_ROLE_USER, jsonString(p.Message))
	case l.Type == "event_msg" && p.Type == "item_completed":
		// Current rollouts: the typed prompt as a completed UserMessage
		// item, whose content is a list of {"type": "text", "text": ...}.
		var item struct {
			Type    string          `json:"type"`
			Content json.RawMessage `json:"content"`
		}
		if json.Unmarshal(p.Item, &item) != nil || item.Type != "UserMessage" {
			return nil
		}
		return textEntry(toolgatev1.Role_ROLE_USER, codexText(item.Content))
	case l.Type != "response_item":
		return nil
	}
	switch p.Type {
	case "message":
		if p.Role != "assistant" {
			return nil
		}
		return textEntry(toolgatev1.Role_ROLE_ASSISTANT, codexText(p.Content))
	case "function_call":
		var args map[string]any
		if s := jsonString(p.Arguments); s != "" {
			_ = json.Unmarshal([]byte(s), &args) // not an object: name only
		}
		return callEntry(p.Name, args)
	case "custom_tool_call":
		return callEntry(p.Name, map[string]any{"input": jsonString(p.Input)})
	case "local_shell_call":
		var action map[string]any
		_ = json.Unmarshal(p.Action, &action)
		return callEntry("local_shell", action)
	case "function_call_output", "custom_tool_call_output":
		return &toolgatev1.TranscriptEntry{Role: toolgatev1.Role_ROLE_TOOL_RESULT, Text: clip(codexText(p.Output))}
	}
	return nil
}

func textEntry(role toolgatev1.Role, text string) *toolgatev1.TranscriptEntry {
	if strings.TrimSpace(text) == "" {
		return nil
	}
	return &toolgatev1.TranscriptEntry{Role: role, Text: clip(text)}
}

func callEntry(name string, input map[string]any) *toolgatev1.TranscriptEntry {
	if name == "" {
		return nil
	}
	call := &toolgatev1.ToolCall{Name: name, Input: callInput(input)}
	return &toolgatev1.TranscriptEntry{Role: toolgatev1.Role_ROLE_ASSISTANT, ToolCall: call}
}

// maxCallString caps each string in a transcript tool call's input.
const maxCallString = 2 << 10

// callInput converts a transcript tool call's input within MaxEntryText:
// long strings (a written file's content, a patch) are cut and marked, and
// an input still over the limit after that is left out; the tool's name
// stays. The server refuses a transcript entry over its own limit, so one
// large write in the session would otherwise fail every check after it.
func callInput(input map[string]any) *structpb.Struct {
	if input == nil {
		return nil
	}
	s, err := structpb.NewStruct(clipStrings(input).(map[string]any))
	if err != nil || proto.Size(s) > MaxEntryText {
		return nil
	}
	return s
}

// clipStrings returns v with every string longer than maxCallString cut
// on a character boundary and marked; maps and lists are copied.
func clipStrings(v any) any {
	switch v := v.(type) {
	case string:
		return clipTo(v, maxCallString)
	case map[string]any:
		m := make(map[string]any, len(v))
		for k, e := range v {
			m[k] = clipStrings(e)
		}
		return m
	case []any:
		l := make([]any, len(v))
		for i, e := range v {
			l[i] = clipStrings(e)
		}
		return l
	}
	return v
}

// jsonString returns raw as a string when it is a JSON string, else "".
func jsonString(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) != nil {
		return ""
	}
	return s
}

// codexText flattens message content or a tool output: a string, a list of
// content items whose text fields are joined by newlines (images and others
// are dropped), or an object with such a "content".
func codexText(raw json.RawMessage) string {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return ""
	}
	switch raw[0] {
	case '"':
		return jsonString(raw)
	case '{':
		var o struct {
			Content json.RawMessage `json:"content"`
		}
		if json.Unmarshal(raw, &o) != nil || len(o.Content) == 0 || o.Content[0] == '{' {
			return ""
		}
		return codexText(o.Content)
	}
	var items []struct {
		Text string `json:"text"`
	}
	if json.Unmarshal(raw, &items) != nil {
		return ""
	}
	var parts []string
	for _, it := range items {
		if it.Text != "" {
			parts = append(parts, it.Text)
		}
	}
	return strings.Join(parts, "\n")
}

// maxSessionHeadBytes bounds what is read from the start of a transcript
// to find where its session started.
const maxSessionHeadBytes = 1 << 20

// readHead returns the first max bytes of the regular file at path (all of
// it when shorter); errors and non-regular files give nil.
func readHead(open Opener, path string, max int64) []byte {
	f, err := open(path)
	if err != nil {
		return nil
	}
	defer f.Close()
	if st, err := f.Stat(); err != nil || !st.Mode().IsRegular() {
		return nil
	}
	b, err := io.ReadAll(io.LimitReader(f, max))
	if err != nil {
		return nil
	}
	return b
}
