package config

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/toolgate/toolgate/engine/rules"
)

// claudeDefaults is autoMode's placeholder for Claude Code's built-in
// entries of a list.
const claudeDefaults = "$defaults"

// importClaudeSettings adds each policy's imported Claude Code settings to
// its lists; r reads each file once, however many policies import it, and
// records it. Relative paths resolve against dir.
func (c *Config) importClaudeSettings(dir string, r *reader) error {
	for _, name := range c.PolicyNames() {
		p := c.Policies[name]
		if p.ClaudeSettings == "" {
			continue
		}
		path, err := resolvePath(p.ClaudeSettings, dir)
		if err != nil {
			return fmt.Errorf("policies.%s.claude_settings: %w", name, err)
		}
		data, err := r.read(path)
		if err != nil {
			return fmt.Errorf("policies.%s.claude_settings: %w", name, err)
		}
		perms, auto, err := parseClaudeSettings(path, data)
		if err != nil {
			return fmt.Errorf("policies.%s.claude_settings: %w", name, err)
		}
		// Added after the policy's own rules; Clip so that the appends
		// never write into an array another policy shares (YAML aliases).
		imported := Policy{Permissions: perms, AutoMode: auto}
		for _, f := range layeredLists {
			add := *f.list(&imported)
			*f.list(&p) = append(slices.Clip(*f.list(&p)), add...)
			c.layers[name].add(f.path, path, len(add))
		}
		p.ClaudeSettings = path
		c.Policies[name] = p
	}
	return nil
}

// resolvePath makes a claude_settings path absolute: "~/..." is under the
// home directory, a relative path under dir.
func resolvePath(p, dir string) (string, error) {
	if p == "~" || strings.HasPrefix(p, "~/") {
		home, err := os.UserHomeDir()
		if err != nil {
			return "", fmt.Errorf("%s: %w", p, err)
		}
		p = filepath.Join(home, p[1:])
	} else if !filepath.IsAbs(p) {
		p = filepath.Join(dir, p)
	}
	return filepath.Abs(p)
}

// parseClaudeSettings reads the permissions and autoMode lists of a Claude
// Code settings.json read from path. Keys match exactly, as Claude Code
// reads them (Go's json would also take "Allow" for "allow"); other keys
// are ignored.
func parseClaudeSettings(path string, data []byte) (Permissions, AutoMode, error) {
	var perms Permissions
	var auto AutoMode
	fail := func(err error) (Permissions, AutoMode, error) {
		return Permissions{}, AutoMode{}, fmt.Errorf("%s: %w", path, err)
	}
	if err := json.Unmarshal(data, new(any)); err != nil {
		var syn *json.SyntaxError
		if errors.As(err, &syn) {
			line, col := position(data, syn.Offset)
			return fail(fmt.Errorf("line %d, column %d: malformed JSON: %w", line, col, err))
		}
		return fail(fmt.Errorf("malformed JSON: %w", err))
	}
	top, err := object(data, "(top level)")
	if err != nil {
		return fail(err)
	}
	if top == nil {
		return fail(errors.New("(top level): want an object, got null"))
	}
	// A misspelt key would import no rules without a word: keys that
	// differ from the ones read only in case are refused, and so is a file
	// that has neither.
	for k := range top {
		for _, want := range []string{"permissions", "autoMode"} {
			if k != want && strings.EqualFold(k, want) {
				return fail(fmt.Errorf("%s: not a key Claude Code reads; did you mean %s?", k, want))
			}
		}
	}
	if _, ok := top["permissions"]; !ok {
		if _, ok := top["autoMode"]; !ok {
			return fail(errors.New("neither permissions nor autoMode is set: nothing to import"))
		}
	}
	if raw, ok := top["permissions"]; ok {
		lists, err := object(raw, "permissions")
		if err != nil {
			return fail(err)
		}
		if err := knownKeys(lists, "permissions", claudePermissionKeys); err != nil {
			return fail(err)
		}
		for _, l := range []struct {
			key string
			out *[]string
		}{{"allow", &perms.Allow}, {"ask", &perms.Ask}, {"deny", &perms.Deny}} {
			field := "permissions." + l.key
			if *l.out, err = stringList(lists[l.key], field); err != nil {
				return fail(err)
			}
			for i, r := range *l.out {
				if _, err := rules.Parse(r); err != nil {
					return fail(fmt.Errorf("%s[%d]: %w", field, i, err))
				}
			}
		}
	}
	if raw, ok := top["autoMode"]; ok {
		lists, err := object(raw, "autoMode")
		if err != nil {
			return fail(err)
		}
		if err := knownKeys(lists, "autoMode", claudeAutoModeKeys); err != nil {
			return fail(err)
		}
		for _, l := range []struct {
			key string
			out *[]string
		}{{"allow", &auto.Allow}, {"soft_deny", &auto.SoftDeny}, {"hard_deny", &auto.HardDeny}, {"environment", &auto.Environment}} {
			list, err := stringList(lists[l.key], "autoMode."+l.key)
			if err != nil {
				return fail(err)
			}
			*l.out = slices.DeleteFunc(list, func(s string) bool { return s == claudeDefaults })
		}
	}
	return perms, auto, nil
}

// The keys Claude Code defines under permissions and autoMode. Only the
// rule lists are imported; the rest are known so that they pass, and any
// other key is refused: "denny" must not drop the deny rules unnoticed.
var (
	claudePermissionKeys = []string{"allow", "ask", "deny", "defaultMode", "additionalDirectories",
		"disableBypassPermissionsMode", "disableAutoMode", "blockReadsOutsideWorkingDirectories",
		"blockWritesOutsideWorkingDirectories", "denyInsteadOfPrompting"}
	claudeAutoModeKeys = []string{"allow", "soft_deny", "hard_deny", "environment", "classify_all_shell", "classifyAllShell"}
)

// knownKeys refuses a key of obj that is not in known, naming it.
func knownKeys(obj map[string]json.RawMessage, field string, known []string) error {
	for _, k := range slices.Sorted(maps.Keys(obj)) {
		if !slices.Contains(known, k) {
			return fmt.Errorf("%s.%s: not a key Claude Code reads (known: %s)", field, k, strings.Join(known, ", "))
		}
	}
	return nil
}

// object decodes a JSON object (null counts as empty).
func object(raw json.RawMessage, field string) (map[string]json.RawMessage, error) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, fmt.Errorf("%s: want an object, got %s", field, kind(raw))
	}
	return m, nil
}

// stringList decodes a JSON list of strings (absent or null: none).
func stringList(raw json.RawMessage, field string) ([]string, error) {
	if raw == nil {
		return nil, nil
	}
	var items []json.RawMessage
	if err := json.Unmarshal(raw, &items); err != nil {
		return nil, fmt.Errorf("%s: want a list of strings, got %s", field, kind(raw))
	}
	out := make([]string, 0, len(items))
	for i, it := range items {
		var s string
		if kind(it) != "a string" || json.Unmarshal(it, &s) != nil {
			return nil, fmt.Errorf("%s[%d]: want a string, got %s", field, i, kind(it))
		}
		out = append(out, s)
	}
	return out, nil
}

// kind names a JSON value's type, for errors (never its content).
func kind(raw json.RawMessage) string {
	b := bytes.TrimSpace(raw)
	if len(b) == 0 {
		return "nothing"
	}
	switch b[0] {
	case '{':
		return "an object"
	case '[':
		return "a list"
	case '"':
		return "a string"
	case 't', 'f':
		return "a boolean"
	case 'n':
		return "null"
	}
	return "a number"
}

// position turns a byte offset into a 1-based line and column.
func position(data []byte, off int64) (line, col int) {
	off = min(max(off, 0), int64(len(data)))
	before := data[:off]
	line = bytes.Count(before, []byte("\n")) + 1
	col = int(off) - (bytes.LastIndexByte(before, '\n') + 1)
	if col == 0 {
		col = 1
	}
	return line, col
}
