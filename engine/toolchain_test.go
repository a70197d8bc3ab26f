package engine

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestToolchainFiles: a program whose files where it runs can name a
// toolchain to fetch and run (go.mod's toolchain line, rust-toolchain.toml,
// a version manager's file) is local only when no such file asks for one,
// in the directory it runs in or above.
func TestToolchainFiles(t *testing.T) {
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	e, err := New(Config{Home: filepath.Join(root, "home")})
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name    string
		files   map[string]string // relative to the project; "../x" is above it
		command string
		allow   bool
	}{
		{"go version without go.mod", nil, "go version", true},
		{"go env in an old module", map[string]string{"go.mod": "module x\n\ngo 1.20\n"}, "go env GOPATH", true},
		{"go 1.21.0 switches nothing", map[string]string{"go.mod": "module x\ngo 1.21.0\n"}, "go version", true},
		{"toolchain default", map[string]string{"go.mod": "module x\ngo 1.99\ntoolchain default\n"}, "go version", true},
		{"require block words", map[string]string{"go.mod": "module x\ngo 1.18\nrequire (\n\tgolang.org/x/mod v0.1.0\n\tgopkg.in/yaml.v3 v3.0.0\n)\n"}, "go help", true},
		{"go line newer", map[string]string{"go.mod": "module x\n\ngo 1.22\n"}, "go version", false},
		{"toolchain line", map[string]string{"go.mod": "module x\ngo 1.20\ntoolchain go1.99.1\n"}, "go version", false},
		{"toolchain with a custom name", map[string]string{"go.mod": "module x\ngo 1.20\ntoolchain evil-go1.99\n"}, "go env", false},
		{"tab after go", map[string]string{"go.mod": "module x\ngo\t1.30rc1 // x\n"}, "go version", false},
		{"go line in a block", map[string]string{"go.mod": "module x\nrequire (\n go 1.40\n)\n"}, "go version", false},
		{"go.work above the project", map[string]string{"../go.work": "go 1.23\nuse ./proj\n"}, "go version", false},
		{"go.mod in the cd target", map[string]string{"sub/go.mod": "module y\ngo 1.25.0\n"}, "cd sub && go version", false},
		{"go.mod elsewhere in the tree", map[string]string{"sub/go.mod": "module y\ngo 1.25.0\n"}, "go version", true},
		{"unreadable go.mod", map[string]string{"go.mod/x": "a directory"}, "go version", false},
		{"rust-toolchain.toml", map[string]string{"rust-toolchain.toml": "[toolchain]\npath = \"/tmp/x\"\n"}, "cargo --version", false},
		{"rust-toolchain above", map[string]string{"../rust-toolchain": "nightly\n"}, "rustc -V", false},
		{"cargo without toolchain files", nil, "cargo --version", true},
		{".tool-versions for node", map[string]string{".tool-versions": "nodejs 99.0.0\n"}, "node --version", false},
		{"mise config", map[string]string{"mise.toml": "[tools]\npython = '3.99'\n"}, "python3 --version", false},
		{".python-version", map[string]string{".python-version": "3.99.0\n"}, "python --version", false},
		{".nvmrc", map[string]string{".nvmrc": "99\n"}, "node -v", false},
		{"volta in package.json", map[string]string{"package.json": `{"name":"x","volta":{"node":"99.0.0"}}`}, "npm ls", false},
		{"packageManager", map[string]string{"package.json": `{"name":"x","packageManager":"npm@99.0.0"}`}, "npm --version", false},
		{"package.json that does not parse", map[string]string{"package.json": `{"name":`}, "npm ls", false},
		{"project .npmrc", map[string]string{".npmrc": "registry=https://attacker.example/\n"}, "npm ls --depth=0", false},
		{"plain package.json", map[string]string{"package.json": `{"name":"x","dependencies":{"a":"1"}}`}, "npm ls --depth=0", true},
		{"node without files", nil, "node --version", true},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			base := filepath.Join(root, "c"+strings.Repeat("x", i))
			proj := filepath.Join(base, "proj")
			if err := os.MkdirAll(filepath.Join(proj, "sub"), 0o755); err != nil {
				t.Fatal(err)
			}
			for name, text := range tc.files {
				p := filepath.Join(proj, name)
				if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			res := mustCheck(t, e, &Request{Tool: tool("Bash", map[string]any{"command": tc.command}), WorkingDirectory: proj, Mode: ModeAuto})
			if got := res.Decision == Allow; got != tc.allow {
				t.Errorf("%s: %s by %s (%s), want allow=%v", tc.command, res.Decision, res.Source, res.Reason, tc.allow)
			}
		})
	}
}

func TestJudgeGoMod(t *testing.T) {
	for _, tc := range []struct {
		text string
		ok   bool
	}{
		{"module x\n", true},
		{"go 1.16\n", true},
		{"go 1.21\n", true},
		{"go 1.21.0 // comment\n", true},
		{"go 1.21.1\n", false},
		{"go 1.21rc2\n", false},
		{"go 1.100\n", false},
		{"go 1.021\n", false},
		{"go 2.0\n", false},
		{"go 1.20\ngo 1.30\n", false},
		{"go \"1.30\"\n", false},
		{"\"go\" 1.30\n", false},
		{"go\u00a01.30\n", false},
		{"go 1.20\ntoolchain go1.21.0\n", true},
		{"go 1.20\ntoolchain go1.21.3\n", false},
		{"go 1.30\ntoolchain default\n", true},
		{"go 1.30\ntoolchain default\ntoolchain go1.40.0\n", false},
		{"toolchain (\n", false},
		{"goimports 1.99\ngo-x 1\n", true},
	} {
		if got := judgeGoMod([]byte(tc.text)) == ""; got != tc.ok {
			t.Errorf("judgeGoMod(%q) accepted=%v, want %v", tc.text, got, tc.ok)
		}
	}
}

// TestToolchainFilesInHome: the home directory's own files are the user's
// configuration; a file between the home and the project is not.
func TestToolchainFilesInHome(t *testing.T) {
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	home := filepath.Join(root, "home")
	proj := filepath.Join(home, "src", "proj")
	if err := os.MkdirAll(proj, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(home, ".tool-versions"), []byte("nodejs 22.0.0\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	e, err := New(Config{Home: home})
	if err != nil {
		t.Fatal(err)
	}
	check := func() Result {
		return mustCheck(t, e, &Request{Tool: tool("Bash", map[string]any{"command": "node --version"}), WorkingDirectory: proj, Mode: ModeAuto})
	}
	if res := check(); res.Decision != Allow {
		t.Errorf("with ~/.tool-versions: %s by %s (%s), want allow", res.Decision, res.Source, res.Reason)
	}
	if err := os.WriteFile(filepath.Join(home, "src", ".tool-versions"), []byte("nodejs 99.0.0\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if res := check(); res.Decision == Allow {
		t.Errorf("with ~/src/.tool-versions: allowed by %s, want not", res.Source)
	}
}

// TestToolchainAllowRule: an allow rule over the program does not allow
// it where a file names a toolchain to fetch: the rule vouches for the
// command, not for what the files around it make it run.
func TestToolchainAllowRule(t *testing.T) {
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "go.mod"), []byte("module x\ngo 1.20\ntoolchain go1.99.0\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	e := newEngine(t, policyOf(PolicySpec{Permissions: RuleSet{Allow: []string{"Bash(go version)", "Bash(go version:*)"}}}), nil)
	for _, cmd := range []string{"go version", "go version && go env GOPATH"} {
		res := mustCheck(t, e, &Request{Tool: tool("Bash", map[string]any{"command": cmd}), WorkingDirectory: root, Mode: ModeAuto})
		if res.Decision == Allow {
			t.Errorf("%s with a toolchain line: allowed by %s (%s)", cmd, res.Source, res.Reason)
		}
	}
}
