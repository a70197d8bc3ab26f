package engine

import (
	"errors"
	"slices"
	"strings"
	"testing"
)

func TestShellCommand(t *testing.T) {
	tests := []struct {
		name   string
		input  map[string]any
		want   string
		wantOK bool
	}{
		{"string", map[string]any{"command": "ls -la"}, "ls -la", true},
		{"empty string", map[string]any{"command": ""}, "", true},
		{"argv", map[string]any{"command": []any{"ls", "-la", "/tmp"}}, "ls -la /tmp", true},
		{"single argv", map[string]any{"command": []any{"make"}}, "make", true},
		{"bash -lc script", map[string]any{"command": []any{"bash", "-lc", "rm -rf /"}}, "rm -rf /", true},
		{"bash -c script", map[string]any{"command": []any{"bash", "-c", "git status; rm x"}}, "git status; rm x", true},
		// sh and zsh keep their wrapper: their payload rules are stricter
		// (zsh reads *(e:'cmd':) as a glob qualifier that runs cmd).
		{"sh -c script", map[string]any{"command": []any{"sh", "-c", "echo hi"}}, "sh -c 'echo hi'", true},
		{"/bin/zsh -lc script", map[string]any{"command": []any{"/bin/zsh", "-lc", "echo hi"}}, "/bin/zsh -lc 'echo hi'", true},
		{"shell with extra args is not reduced", map[string]any{"command": []any{"bash", "-lc", "echo $0", "x"}}, "bash -lc 'echo $0' x", true},
		{"other flag is not reduced", map[string]any{"command": []any{"bash", "-x", "script.sh"}}, "bash -x script.sh", true},
		{"non-shell -c is not reduced", map[string]any{"command": []any{"python", "-c", "print(1)"}}, "python -c 'print(1)'", true},
		// argv runs without a shell: shell syntax in an element is one word.
		{"comment sign in argv", map[string]any{"command": []any{"rg", "x", ".", "#", "--pre=./evil.sh"}}, "rg x . '#' '--pre=./evil.sh'", true},
		{"quote in argv", map[string]any{"command": []any{"find", ".", "-name", "'", "-delete", "'"}}, `find . -name "'" -delete "'"`, true},
		{"non-string element", map[string]any{"command": []any{"rm", 1.0, "/"}}, "", false},
		{"nil element", map[string]any{"command": []any{"bash", "-lc", nil}}, "", false},
		{"empty argv", map[string]any{"command": []any{}}, "", false},
		{"number", map[string]any{"command": 3.0}, "", false},
		{"object", map[string]any{"command": map[string]any{"run": "ls"}}, "", false},
		{"missing", map[string]any{"cmd_line": "ls"}, "", false},
		{"nil input", nil, "", false},
		// Codex exec_command spells the field cmd.
		{"cmd string", map[string]any{"cmd": "rm -rf /"}, "rm -rf /", true},
		{"cmd argv", map[string]any{"cmd": []any{"bash", "-lc", "rm x"}}, "rm x", true},
		{"cmd number", map[string]any{"cmd": 1.0}, "", false},
		// Two command fields: which one runs is up to the tool, so neither is trusted.
		{"command and cmd", map[string]any{"command": "ls", "cmd": "rm -rf /"}, "", false},
	}
	// Ambiguous inputs still show every string to deny rules.
	if _, ok, raw := shellCommand(map[string]any{"command": "ls", "cmd": "rm -rf ~"}); ok || !slices.Contains(raw, "rm -rf ~") {
		t.Errorf("ambiguous input: ok %v raw %q", ok, raw)
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok, _ := shellCommand(tt.input)
			if got != tt.want || ok != tt.wantOK {
				t.Fatalf("shellCommand(%v) = %q, %v; want %q, %v", tt.input, got, ok, tt.want, tt.wantOK)
			}
		})
	}
}

func TestEditTargets(t *testing.T) {
	tests := []struct {
		name    string
		kind    Kind
		input   map[string]any
		want    []string
		wantErr string
	}{
		{"file_path", KindEdit, map[string]any{"file_path": "a.go", "old_string": "x"}, []string{"a.go"}, ""},
		{"notebook_path", KindNotebookEdit, map[string]any{"notebook_path": "/p/nb.ipynb"}, []string{"/p/nb.ipynb"}, ""},
		{"path", KindEdit, map[string]any{"path": "a.go"}, []string{"a.go"}, ""},
		{"absolute_path", KindWrite, map[string]any{"absolute_path": "/p/a.go"}, []string{"/p/a.go"}, ""},
		{"every field is a target", KindEdit, map[string]any{"file_path": "a", "path": "b", "notebook_path": "c", "absolute_path": "d"}, []string{"a", "c", "b", "d"}, ""},
		{"missing", KindWrite, map[string]any{"content": "x"}, nil, "no target path"},
		{"nil input", KindWrite, nil, nil, "no target path"},
		{"empty", KindEdit, map[string]any{"file_path": ""}, nil, "not a non-empty string"},
		{"non-string", KindEdit, map[string]any{"file_path": 1.0}, nil, "not a non-empty string"},
		{"null", KindEdit, map[string]any{"file_path": nil}, nil, "not a non-empty string"},
		{"one bad of two", KindEdit, map[string]any{"file_path": "a", "path": false}, nil, `"path"`},
		{"patch", KindPatch, map[string]any{"input": patch("*** Add File: a", "+x")}, []string{"a"}, ""},
		{"patch field", KindPatch, map[string]any{"patch": patch("*** Delete File: a")}, []string{"a"}, ""},
		{"patch ignores path fields", KindPatch, map[string]any{"file_path": "x"}, nil, "no patch"},
		{"patch not a string", KindPatch, map[string]any{"input": 1.0}, nil, "not a string"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := editTargets(tt.kind, tt.input)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("editTargets = %q, %v; want error containing %q", got, err, tt.wantErr)
				}
				if got != nil {
					t.Errorf("targets %q returned with an error", got)
				}
				return
			}
			if err != nil || !slices.Equal(got, tt.want) {
				t.Fatalf("editTargets = %q, %v; want %q", got, err, tt.want)
			}
		})
	}
}

func TestReadTargets(t *testing.T) {
	tests := []struct {
		name   string
		input  map[string]any
		want   []string
		wantOK bool
	}{
		{"file_path", map[string]any{"file_path": "/etc/passwd", "offset": 1.0}, []string{"/etc/passwd"}, true},
		{"path", map[string]any{"pattern": "x", "path": "src"}, []string{"src"}, true},
		{"absolute_path", map[string]any{"absolute_path": "/a"}, []string{"/a"}, true},
		{"notebook_path", map[string]any{"notebook_path": "/nb.ipynb"}, []string{"/nb.ipynb"}, true},
		{"dir_path", map[string]any{"dir_path": "/etc"}, []string{"/etc"}, true},
		{"paths", map[string]any{"paths": []any{"/etc/passwd", "", "b"}}, []string{"/etc/passwd", "b"}, true},
		{"several", map[string]any{"file_path": "a", "path": "b"}, []string{"a", "b"}, true},
		{"none", map[string]any{"pattern": "/etc/*"}, nil, true},
		{"empty and null fields", map[string]any{"path": "", "dir_path": nil}, nil, true},
		{"nil input", nil, nil, true},
		// A target that cannot be read is unknown, not absent.
		{"number path", map[string]any{"file_path": 1.0}, nil, false},
		{"object path", map[string]any{"file_path": map[string]any{"p": "/home/u/.ssh/id_rsa"}}, nil, false},
		{"list with a non-string", map[string]any{"paths": []any{"/etc/passwd", 3.0}}, []string{"/etc/passwd"}, false},
	}
	for _, tt := range tests {
		got, ok := readTargets(tt.input)
		if !slices.Equal(got, tt.want) || ok != tt.wantOK {
			t.Errorf("%s: readTargets = %q, %v; want %q, %v", tt.name, got, ok, tt.want, tt.wantOK)
		}
	}
}

func TestBroadSearchIsNotSafe(t *testing.T) {
	e := newEngine(t, nil, nil)
	for _, tc := range []struct {
		tool  ToolCall
		local bool
	}{
		{tool("Grep", map[string]any{"pattern": "PRIVATE KEY", "path": "/home/dev"}), false},
		{tool("Grep", map[string]any{"pattern": "x", "path": "/"}), false},
		{tool("Glob", map[string]any{"pattern": "**/id_*", "path": "/home"}), false},
		{tool("Read", map[string]any{"file_path": map[string]any{"p": "/home/dev/.ssh/id_rsa"}}), false},
		{tool("Grep", map[string]any{"pattern": "x", "path": "/home/dev/project/src"}), true},
		{tool("Grep", map[string]any{"pattern": "x"}), true},
	} {
		res := mustCheck(t, e, &Request{Tool: tc.tool, WorkingDirectory: "/home/dev/project"})
		if (res.Source == SourceSafeTool) != tc.local {
			t.Errorf("%v: %s/%s (%s), want safe-tool path %v", tc.tool.Input, res.Decision, res.Source, res.Reason, tc.local)
		}
	}
}

func TestPatchTargets(t *testing.T) {
	tests := []struct {
		name    string
		patch   string
		want    []string
		wantErr string
	}{
		{"all headers", patch(
			"*** Add File: a.txt",
			"+hello",
			"*** Update File: b.txt",
			"*** Move to: c.txt",
			"@@ ctx",
			" same",
			"-old",
			"+new",
			"*** End of File",
			"*** Delete File: d.txt",
		), []string{"a.txt", "b.txt", "c.txt", "d.txt"}, ""},
		{"paths trimmed", patch("*** Add File:  a b.txt  "), []string{"a b.txt"}, ""},
		{"CRLF", "*** Begin Patch\r\n*** Add File: a\r\n+x\r\n*** End Patch\r\n", []string{"a"}, ""},
		{"surrounding blank lines", "\n\n*** Begin Patch\n*** Delete File: a\n*** End Patch\n\n", []string{"a"}, ""},
		{"added lines starting with stars are content", patch("*** Add File: a", "+*** Move to: /etc/x", "+ *** Delete File: /etc/y"), []string{"a"}, ""},
		// Codex trims a line before reading it as a hunk header: an indented
		// header after an added file is one.
		{"indented header", patch("*** Add File: ok.txt", "+hi", " *** Add File: .git/hooks/pre-commit", "+pwned"), []string{"ok.txt", ".git/hooks/pre-commit"}, ""},
		{"tab-indented header", patch("*** Delete File: a", "\t*** Add File: ../../evil.sh", "+x"), []string{"a", "../../evil.sh"}, ""},
		{"indented unknown header", patch("*** Add File: a", "+x", "  *** Copy File: b"), nil, "unrecognised header"},
		{"no envelope", "*** Add File: a\n+x\n", nil, "not enclosed"},
		{"no end", "*** Begin Patch\n*** Add File: a\n", nil, "not enclosed"},
		{"no begin", "*** Add File: a\n*** End Patch", nil, "not enclosed"},
		{"empty", "", nil, "not enclosed"},
		{"envelope only", "*** Begin Patch\n*** End Patch", nil, "no target path"},
		{"unknown header", patch("*** Add File: a", "*** Foo: b"), nil, "unrecognised header"},
		{"header without space", patch("*** Add File:a"), nil, "unrecognised header"},
		{"lowercase header", patch("*** add file: a"), nil, "unrecognised header"},
		{"nested begin", patch("*** Begin Patch", "*** Add File: a"), nil, "unrecognised header"},
		{"empty path", patch("*** Add File: "), nil, "empty path"},
		{"blank move target", patch("*** Update File: a", "*** Move to:   "), nil, "empty path"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := patchTargets(tt.patch)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("patchTargets = %q, %v; want error containing %q", got, err, tt.wantErr)
				}
				return
			}
			if err != nil || !slices.Equal(got, tt.want) {
				t.Fatalf("patchTargets = %q, %v; want %q", got, err, tt.want)
			}
		})
	}
	if _, err := patchTargets("*** Begin Patch\n*** End Patch"); !errors.Is(err, errNoTargets) {
		t.Errorf("envelope only: err = %v, want errNoTargets", err)
	}
}

func TestTruncate(t *testing.T) {
	tests := []struct {
		s    string
		n    int
		want string
	}{
		{"short", 10, "short"},
		{"exactly", 7, "exactly"},
		{"abcdef", 3, "abc…"},
		{"héllo", 2, "h…"}, // never splits the two-byte é
		{"日本語", 4, "日…"},
	}
	for _, tt := range tests {
		if got := truncate(tt.s, tt.n); got != tt.want {
			t.Errorf("truncate(%q, %d) = %q, want %q", tt.s, tt.n, got, tt.want)
		}
	}
}
