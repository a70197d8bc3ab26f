package main

import (
	"bytes"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestQuickstart does what README.md tells a new user to do, on a fresh
// build: its Install commands (make install, into a GOBIN of the test's),
// then the "In front of your agent" section's console blocks with the installed
// binaries first on PATH, then the offline classifier demo of
// docs/classifier.md. Each "$ command" must print exactly the lines shown
// under it, where "…" stands for any text within a line. The documented
// servers are started as shown, on free ports when the documented ones
// may be taken (every 127.0.0.1:PORT of a page is mapped to a free port,
// and the clients are pointed at the mapped defaults through
// TOOLGATE_ADDR and TOOLGATE_HOOK_ADDR).
func TestQuickstart(t *testing.T) {
	if os.Getenv("TOOLGATE_E2E") == "" {
		t.Skip("builds and installs the binaries and runs them: make test-e2e runs it (TOOLGATE_E2E=1)")
	}
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	readme := readDoc(t, root, "README.md")
	gobin := filepath.Join(t.TempDir(), "bin")

	// Install: each sh block, as written, from the clone's root.
	install := markdownSection(t, readme, "## Install")
	shBlocks := fencedBlocks(install, "sh")
	if len(shBlocks) == 0 {
		t.Fatal("README's Install section has no sh block")
	}
	for _, b := range shBlocks {
		cmd := exec.CommandContext(t.Context(), "bash", "-euo", "pipefail", "-c", b)
		cmd.Dir = root
		cmd.Env = append(cleanEnv(), "GOBIN="+gobin)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("%s: %v\n%s", b, err, out)
		}
	}
	for _, name := range []string{"toolgate", "toolgate-hook"} {
		if _, err := os.Stat(filepath.Join(gobin, name)); err != nil {
			t.Fatalf("the Install commands did not put %s in GOBIN: %v", name, err)
		}
	}

	// The defaults the README names are the server's.
	help, _ := exec.CommandContext(t.Context(), filepath.Join(gobin, "toolgate"), "serve", "-h").CombinedOutput()
	for _, addr := range []string{"127.0.0.1:50051", "127.0.0.1:9464"} {
		if !strings.Contains(string(help), "default from config: "+addr) {
			t.Errorf("serve's default listener is not %s, as the README says:\n%s", addr, help)
		}
		if !strings.Contains(install+markdownSection(t, readme, "## In front of your agent"), "`"+addr+"`") {
			t.Errorf("the README no longer names %s: update this test", addr)
		}
	}

	start := markdownSection(t, readme, "## In front of your agent")
	classifierPage := readDoc(t, root, filepath.Join("docs", "classifier.md"))
	// One run for both pages: the README's server keeps running through
	// the classifier demo, as it would for a user who follows both, and
	// the demo's server must not want its ports.
	d := newDocRun(t, gobin, start+classifierPage)
	d.run(t, t.TempDir(), fencedBlocks(start, "console"))
	demo := fencedBlocks(classifierPage, "console")
	if len(demo) != 3 {
		t.Fatalf("want docs/classifier.md's fake model, server and checks as three console blocks, found %d", len(demo))
	}
	d.run(t, root, demo)

	t.Run("the hook settings are the tested ones", func(t *testing.T) {
		hooks := readDoc(t, root, filepath.Join("docs", "hooks.md"))
		shown := fencedBlocks(start, "json")
		want := fencedBlocks(markdownSection(t, hooks, "## Claude Code"), "json")
		if len(shown) != 1 || len(want) == 0 || shown[0] != want[0] {
			t.Errorf("the README's Claude Code settings are not the first json block of docs/hooks.md's ## Claude Code (TestHookReadmeSnippets runs that one):\n%s", strings.Join(shown, "\n"))
		}
		for agent, heading := range map[string]string{"claude-code": "## Claude Code", "gemini-cli": "## Gemini CLI", "codex": "## Codex"} {
			hook := "toolgate-hook " + agent
			if !strings.Contains(start, "`"+hook+"`") {
				t.Errorf("the README does not name %q", hook)
			}
			if b := fencedBlocks(markdownSection(t, hooks, heading), "json"); len(b) == 0 || !strings.Contains(b[0], `"command": "`+hook+`"`) {
				t.Errorf("docs/hooks.md's %s settings do not run %q, which the README names", heading, hook)
			}
		}
	})

	t.Run("exit codes", func(t *testing.T) {
		prose := strings.Join(strings.Fields(start), " ")
		for _, said := range []string{
			"exit code is the decision: 0 allow, 1 deny, 2 ask, 3 when it got no decision",
			"Through `go run ./cmd/toolgate check`, every non-zero code becomes 1",
		} {
			if !strings.Contains(prose, said) {
				t.Fatalf("the README no longer says %q: update this test", said)
			}
		}
		server := d.ports["127.0.0.1:50051"]
		exitCode := func(cmd *exec.Cmd) (int, string) {
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			err := cmd.Run()
			if ee, ok := err.(*exec.ExitError); ok {
				return ee.ExitCode(), stderr.String()
			}
			if err != nil {
				t.Fatal(err)
			}
			return 0, stderr.String()
		}
		dir := t.TempDir()
		for _, c := range []struct {
			addr, tool, input string
			want              int
		}{
			{server, "Edit", `{"file_path":"main.go"}`, 0},
			{server, "Bash", `{"command":"rm -rf /"}`, 1},
			{server, "Bash", `{"command":"terraform apply"}`, 2},
			{deadAddr(t), "Read", `{"file_path":"main.go"}`, 3},
		} {
			cmd := exec.CommandContext(t.Context(), filepath.Join(gobin, "toolgate"), "check", "--addr", c.addr, "--tool", c.tool, "--input", c.input)
			cmd.Dir = dir
			cmd.Env = cleanEnv()
			if got, stderr := exitCode(cmd); got != c.want {
				t.Errorf("toolgate check --tool %s --input %s: exit %d, want %d (%s)", c.tool, c.input, got, c.want, stderr)
			}
		}
		// go run reports the program's status on stderr and exits 1.
		cmd := exec.CommandContext(t.Context(), "go", "run", "./cmd/toolgate", "check", "--addr", server, "--tool", "Bash", "--input", `{"command":"terraform apply"}`)
		cmd.Dir = root
		cmd.Env = cleanEnv()
		if got, stderr := exitCode(cmd); got != 1 || !strings.Contains(stderr, "exit status 2") {
			t.Errorf("go run ./cmd/toolgate check on an ask: exit %d, stderr %q; the README says 1 (go run's own)", got, stderr)
		}
	})

	t.Run("the config example validates", func(t *testing.T) {
		yamls := fencedBlocks(start, "yaml")
		if len(yamls) != 1 {
			t.Fatalf("want one yaml block, found %d", len(yamls))
		}
		path := filepath.Join(t.TempDir(), "toolgate.yaml")
		if err := os.WriteFile(path, []byte(yamls[0]), 0o600); err != nil {
			t.Fatal(err)
		}
		out, err := exec.CommandContext(t.Context(), filepath.Join(gobin, "toolgate"), "validate", path).CombinedOutput()
		if got, want := string(out), path+": ok (policies: default)\n"; err != nil || got != want {
			t.Errorf("validate: %v\n%s\nwant %q", err, got, want)
		}
	})
}

func readDoc(t *testing.T, root, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// fencedBlocks returns the bodies of a section's ```lang blocks.
func fencedBlocks(section, lang string) []string {
	var out []string
	for _, m := range regexp.MustCompile("(?ms)^```"+regexp.QuoteMeta(lang)+"\n(.*?)^```").FindAllStringSubmatch(section, -1) {
		out = append(out, m[1])
	}
	return out
}

// cleanEnv is the test's environment without toolgate's own variables,
// which would point the documented commands elsewhere.
func cleanEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "TOOLGATE_") {
			env = append(env, kv)
		}
	}
	return env
}

// docRun runs a page's console blocks.
type docRun struct {
	ports map[string]string // a documented 127.0.0.1:PORT, the free one used for it
	env   []string
}

var loopbackAddr = regexp.MustCompile(`127\.0\.0\.1:\d+`)

func newDocRun(t *testing.T, gobin, page string) *docRun {
	d := &docRun{ports: map[string]string{}}
	// The defaults the commands reach without naming them.
	for _, a := range append([]string{"127.0.0.1:50051", "127.0.0.1:50052", "127.0.0.1:9464"}, loopbackAddr.FindAllString(page, -1)...) {
		if _, ok := d.ports[a]; !ok {
			d.ports[a] = deadAddr(t)
		}
	}
	d.env = append(cleanEnv(),
		"PATH="+gobin+string(os.PathListSeparator)+os.Getenv("PATH"),
		"TOOLGATE_ADDR="+d.ports["127.0.0.1:50051"],
		"TOOLGATE_HOOK_ADDR="+d.ports["127.0.0.1:50052"])
	return d
}

func (d *docRun) mapPorts(s string) string {
	return loopbackAddr.ReplaceAllStringFunc(s, func(a string) string { return d.ports[a] })
}

// docCommand is a "$ " line and the lines shown after it.
type docCommand struct {
	line string
	want []string
}

func parseConsole(t *testing.T, block string) []docCommand {
	t.Helper()
	var out []docCommand
	for _, l := range strings.Split(strings.TrimSuffix(block, "\n"), "\n") {
		if c, ok := strings.CutPrefix(l, "$ "); ok {
			out = append(out, docCommand{line: c})
			continue
		}
		if len(out) == 0 {
			t.Fatalf("console block does not start with a command:\n%s", block)
		}
		out[len(out)-1].want = append(out[len(out)-1].want, l)
	}
	return out
}

// isServer reports whether a documented command runs until stopped.
func isServer(line string) bool {
	return strings.HasPrefix(line, "toolgate serve") || strings.HasPrefix(line, "go run ./cmd/fakellm ")
}

// run runs blocks in order in dir: a block that is one server command is
// started and left running until the test ends; the others run in one
// bash each, so that "$ echo $?" sees the command before it.
func (d *docRun) run(t *testing.T, dir string, blocks []string) {
	t.Helper()
	for _, b := range blocks {
		cmds := parseConsole(t, b)
		if len(cmds) == 1 && isServer(cmds[0].line) {
			if len(cmds[0].want) > 0 {
				t.Fatalf("a server command shown with output: %q", cmds[0].line)
			}
			d.startServer(t, dir, cmds[0].line)
			continue
		}
		d.runScript(t, dir, cmds)
	}
}

var listenFlag = regexp.MustCompile(`--(?:hook-)?listen[ =](127\.0\.0\.1:\d+)`)

func (d *docRun) startServer(t *testing.T, dir, line string) {
	t.Helper()
	line = d.mapPorts(line)
	if strings.HasPrefix(line, "toolgate serve") {
		// What the server listens on by default, on the mapped ports.
		if !strings.Contains(line, "--listen") {
			line += " --listen " + d.ports["127.0.0.1:50051"]
		}
		if !strings.Contains(line, "--metrics-listen") {
			line += " --metrics-listen " + d.ports["127.0.0.1:9464"]
		}
	}
	var logs bytes.Buffer
	cmd := exec.Command("bash", "-c", "exec "+line)
	cmd.Dir = dir
	cmd.Env = d.env
	cmd.Stdout, cmd.Stderr = &logs, &logs
	// A group of its own: go run's child is stopped with it.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(15 * time.Second):
			syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			<-exited
			t.Errorf("%q did not stop on SIGTERM", line)
		}
	})
	addrs := listenFlag.FindAllStringSubmatch(line, -1)
	if len(addrs) == 0 {
		t.Fatalf("%q: no --listen address to wait for", line)
	}
	// go run compiles first: up to a minute.
	for _, a := range addrs {
		deadline := time.Now().Add(time.Minute)
		for {
			c, err := net.DialTimeout("tcp", a[1], time.Second)
			if err == nil {
				c.Close()
				break
			}
			select {
			case <-exited:
				t.Fatalf("%q exited before listening on %s:\n%s", line, a[1], logs.String())
			default:
			}
			if time.Now().After(deadline) {
				t.Fatalf("%q does not listen on %s:\n%s", line, a[1], logs.String())
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
}

const docMarker = "@@doc-command@@"

func (d *docRun) runScript(t *testing.T, dir string, cmds []docCommand) {
	t.Helper()
	var script strings.Builder
	for _, c := range cmds {
		// The marker keeps $? for the command after it ("$ echo $?").
		fmt.Fprintf(&script, "tg_status=$?; echo %s; (exit $tg_status)\n%s\n", docMarker, d.mapPorts(c.line))
	}
	cmd := exec.CommandContext(t.Context(), "bash", "-c", script.String())
	cmd.Dir = dir
	cmd.Env = d.env
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil || stderr.Len() > 0 {
		t.Errorf("%s\n%v, stderr:\n%s", script.String(), err, stderr.String())
	}
	outputs := strings.Split(string(out), docMarker+"\n")[1:]
	if len(outputs) != len(cmds) {
		t.Fatalf("ran %d of %d commands:\n%s", len(outputs), len(cmds), out)
	}
	for i, c := range cmds {
		got := strings.Split(strings.TrimSuffix(outputs[i], "\n"), "\n")
		if outputs[i] == "" {
			got = nil
		}
		if !linesMatch(got, c.want) {
			t.Errorf("$ %s\nprinted\n%s\nthe documentation shows\n%s", c.line, strings.Join(got, "\n"), strings.Join(c.want, "\n"))
		}
	}
}

// linesMatch compares printed lines with the shown ones, "…" in a shown
// line standing for any text.
func linesMatch(got, want []string) bool {
	if len(got) != len(want) {
		return false
	}
	for i, w := range want {
		parts := strings.Split(w, "…")
		for j, p := range parts {
			parts[j] = regexp.QuoteMeta(p)
		}
		if !regexp.MustCompile("^" + strings.Join(parts, ".*") + "$").MatchString(got[i]) {
			return false
		}
	}
	return true
}
