package main

import (
	"bufio"
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/toolgate/toolgate/classifier/policy"
	"github.com/toolgate/toolgate/config"
)

// TestExplainDocs runs what docs/explain.md shows (runDocPage).
func TestExplainDocs(t *testing.T) { runDocPage(t, "explain.md", 3) }

// runDocPage runs what a page of docs/ shows: its YAML block is written as
// toolgate.yaml, and each "$ toolgate ..." block is run in that directory.
// A block's output must be printed exactly, or, when the block elides
// lines with "...", each line it shows must be printed, in order. The page
// must show at least minCommands commands.
func runDocPage(t *testing.T, page string, minCommands int) {
	t.Helper()
	doc, err := os.ReadFile(filepath.Join("..", "..", "docs", page))
	if err != nil {
		t.Fatal(err)
	}
	blocks := regexp.MustCompile("(?ms)^```(\\w*)\n(.*?)^```").FindAllStringSubmatch(string(doc), -1)
	var yamlBody string
	var commands [][]string
	for _, b := range blocks {
		switch {
		case b[1] == "yaml":
			yamlBody = b[2]
		case strings.HasPrefix(b[2], "$ toolgate ") && !strings.Contains(strings.SplitN(b[2], "\n", 2)[0], "http://127.0.0.1:"):
			// A command that names a server is run by the test that
			// starts one (TestPolicyDocsCost).
			commands = append(commands, strings.Split(strings.TrimSuffix(b[2], "\n"), "\n"))
		}
	}
	if yamlBody == "" || len(commands) < minCommands {
		t.Fatalf("docs/%s: want a yaml block and at least %d commands, found %d commands", page, minCommands, len(commands))
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "toolgate.yaml"), []byte(yamlBody), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Chdir(dir)
	for _, c := range commands {
		args := shellWords(t, strings.TrimPrefix(c[0], "$ toolgate "))
		var out, errOut bytes.Buffer
		if code := run(t.Context(), args, &out, &errOut); code == exitError || errOut.Len() > 0 {
			t.Fatalf("%s: exit %d: %s", c[0], code, errOut.String())
		}
		checkShown(t, c[0], out.String(), c[1:])
	}
}

// checkShown holds a command's output to what the documentation shows
// under it: exactly, or, when it elides lines with "...", each line it
// shows, in order.
func checkShown(t *testing.T, cmd, printed string, shown []string) {
	t.Helper()
	got := strings.Split(strings.TrimSuffix(printed, "\n"), "\n")
	elided := false
	for _, l := range shown {
		elided = elided || l == "..."
	}
	if !elided {
		if strings.Join(got, "\n") != strings.Join(shown, "\n") {
			t.Errorf("%s printed\n%s\nthe documentation shows\n%s", cmd, printed, strings.Join(shown, "\n"))
		}
		return
	}
	i := 0
	for _, line := range got {
		for i < len(shown) && shown[i] == "..." {
			i++
		}
		if i < len(shown) && line == shown[i] {
			i++
		}
	}
	for i < len(shown) && shown[i] == "..." {
		i++
	}
	if i < len(shown) {
		t.Errorf("%s: the documentation's line %q is not printed (in that order):\n%s", cmd, shown[i], printed)
	}
}

// shellWords splits a command line as a POSIX shell would for the quoting
// the documentation uses: blanks separate words, single quotes keep
// everything up to the next single quote.
func shellWords(t *testing.T, s string) []string {
	t.Helper()
	var words []string
	var cur strings.Builder
	in, quoted := false, false
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case quoted:
			if c == '\'' {
				quoted = false
			} else {
				cur.WriteByte(c)
			}
		case c == '\'':
			quoted, in = true, true
		case c == ' ' || c == '\t':
			if in {
				words = append(words, cur.String())
				cur.Reset()
				in = false
			}
		case c == '"' || c == '\\' || c == '$' || c == '`':
			t.Fatalf("%q: quoting the test does not read (%q)", s, c)
		default:
			cur.WriteByte(c)
			in = true
		}
	}
	if quoted {
		t.Fatalf("%q: unclosed quote", s)
	}
	if in {
		words = append(words, cur.String())
	}
	return words
}

// TestPolicyDocs runs what docs/policy.md shows (runDocPage).
func TestPolicyDocs(t *testing.T) { runDocPage(t, "policy.md", 2) }

// TestPolicyDocsListsBuiltinCategories: docs/policy.md names every
// built-in category under its kind, and no other.
func TestPolicyDocsListsBuiltinCategories(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join("..", "..", "docs", "policy.md"))
	if err != nil {
		t.Fatal(err)
	}
	section := string(doc)
	if i := strings.Index(section, "## The built-in categories"); i >= 0 {
		section = section[i:]
	}
	if i := strings.Index(section[3:], "\n## "); i >= 0 {
		section = section[:i+3]
	}
	p, err := config.BuiltinPolicy()
	if err != nil {
		t.Fatal(err)
	}
	for kind, heading := range map[policy.Kind]string{policy.HardDeny: "Hard deny:", policy.SoftDeny: "Soft deny:", policy.Allow: "Allow:"} {
		i := strings.Index(section, "\n"+heading+"\n")
		if i < 0 {
			t.Fatalf("docs/policy.md has no %q paragraph", heading)
		}
		para := section[i+len(heading)+2:]
		if j := strings.Index(para, "\n\n"); j >= 0 {
			para = para[:j]
		}
		var shown []string
		for _, m := range regexp.MustCompile("`([a-z_]+)`").FindAllStringSubmatch(para, -1) {
			shown = append(shown, m[1])
		}
		var want []string
		for _, c := range p.AutoMode.Categories {
			if c.Kind == kind {
				want = append(want, c.Name)
			}
		}
		if strings.Join(shown, " ") != strings.Join(want, " ") {
			t.Errorf("docs/policy.md lists under %q:\n%q\nthe built-in policy has:\n%q", heading, shown, want)
		}
	}
}

// TestPolicyDocsCost runs docs/policy.md's eval against the fake model
// started as the page starts it (its "$ go run ./cmd/fakellm" line, on a
// free port): from the clone's root, on its classifier corpus, with the
// page's prices. The figures it shows are the ones printed: a change of
// the policy or the corpus changes them, and the page with them.
func TestPolicyDocsCost(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join("..", "..", "docs", "policy.md"))
	if err != nil {
		t.Fatal(err)
	}
	var eval, fake []string
	for _, b := range regexp.MustCompile("(?ms)^```console\n(.*?)^```").FindAllStringSubmatch(string(doc), -1) {
		switch {
		case strings.HasPrefix(b[1], "$ toolgate eval "):
			eval = strings.Split(strings.TrimSuffix(b[1], "\n"), "\n")
		case strings.HasPrefix(b[1], "$ go run ./cmd/fakellm "):
			fake = shellWords(t, strings.TrimSpace(strings.TrimPrefix(b[1], "$ go run ./cmd/fakellm ")))
		}
	}
	if eval == nil || fake == nil {
		t.Fatal("docs/policy.md should show the fake model's command and a toolgate eval")
	}
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(t.TempDir(), "fakellm")
	build := exec.CommandContext(t.Context(), "go", "build", "-o", bin, "./cmd/fakellm")
	build.Dir = root
	build.Env = append(os.Environ(), "GOPROXY=off") // the modules are in the cache the test itself was built from
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build ./cmd/fakellm: %v\n%s", err, out)
	}
	for i, a := range fake {
		if a == "127.0.0.1:8081" {
			fake[i] = "127.0.0.1:0"
		}
	}
	cmd := exec.CommandContext(t.Context(), bin, fake...)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	url, err := bufio.NewReader(stdout).ReadString('\n') // the base URL, http://127.0.0.1:PORT/v1
	if err != nil {
		t.Fatalf("the fake printed no URL: %v", err)
	}
	line := strings.ReplaceAll(eval[0], "http://127.0.0.1:8081", strings.TrimSuffix(strings.TrimSpace(url), "/v1"))
	args := shellWords(t, strings.TrimPrefix(line, "$ toolgate "))
	t.Setenv("ANTHROPIC_API_KEY", "")
	t.Chdir(root)
	var out, errOut bytes.Buffer
	// Exit 1: the fake allows what the corpus labels block.
	if code := run(t.Context(), args, &out, &errOut); code != 1 || out.Len() == 0 {
		t.Fatalf("%s: exit %d, want 1 (the fake's false allows): %s", eval[0], code, errOut.String())
	}
	checkShown(t, eval[0], out.String(), eval[1:])
}
