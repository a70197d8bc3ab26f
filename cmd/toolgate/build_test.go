package main

import (
	"bufio"
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime/debug"
	"slices"
	"strings"
	"testing"
)

// repoRoot is the module's root, where the Makefile and Dockerfile are.
const repoRoot = "../.."

// goBuild builds pkg (relative to the module root) into a temporary
// directory with the given go build flags and environment, and returns
// the binary's path.
func goBuild(t *testing.T, pkg string, env []string, flags ...string) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), filepath.Base(pkg))
	cmd := exec.Command("go", slices.Concat([]string{"build"}, flags, []string{"-o", bin, pkg})...)
	cmd.Dir = repoRoot
	cmd.Env = append(os.Environ(), env...)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build %s: %v\n%s", pkg, err, out)
	}
	return bin
}

// TestVersionFromBuildInfo builds the binary as go build and go install
// do and checks that toolgate version prints what the toolchain stamped
// into it (go version -m shows the same build info): the module version,
// and in a git checkout the revision and whether the tree was modified.
func TestVersionFromBuildInfo(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the toolgate binary")
	}
	// -buildvcs=true: a GOFLAGS that turns VCS stamping off (go env -w)
	// would hide what a user's build gets.
	bin := goBuild(t, "./cmd/toolgate", []string{"GOFLAGS=-buildvcs=true"})
	m, err := exec.Command("go", "version", "-m", bin).Output()
	if err != nil {
		t.Fatal(err)
	}
	// go version -m prints "PATH: goVERSION", then the build info indented.
	var b strings.Builder
	for i, line := range strings.Split(strings.TrimSpace(string(m)), "\n") {
		if i == 0 {
			_, gov, _ := strings.Cut(line, ": ")
			b.WriteString("go\t" + gov + "\n")
			continue
		}
		b.WriteString(strings.TrimPrefix(line, "\t") + "\n")
	}
	bi, err := debug.ParseBuildInfo(b.String())
	if err != nil {
		t.Fatalf("parsing go version -m: %v\n%s", err, m)
	}
	out, err := exec.Command(bin, "version").Output()
	if err != nil {
		t.Fatalf("toolgate version: %v", err)
	}
	got := string(out)
	settings := map[string]string{}
	for _, s := range bi.Settings {
		settings[s.Key] = s.Value
	}
	want := "toolgate " + bi.Main.Version + "\n"
	if bi.Main.Version == "(devel)" {
		want = "toolgate dev\n"
	}
	if !strings.HasPrefix(got, want) {
		t.Errorf("toolgate version printed\n%s\nwant it to start %q (go version -m:\n%s)", got, want, m)
	}
	if rev := settings["vcs.revision"]; rev != "" {
		line := "revision: " + rev
		if settings["vcs.modified"] == "true" {
			line += " (modified"
		}
		if !strings.Contains(got, line) {
			t.Errorf("toolgate version printed\n%s\nwant %q", got, line)
		}
	} else if regularGitClone(t) {
		// Go stamps a git checkout whose .git is a directory; a git
		// worktree (.git a file) it leaves unstamped.
		t.Errorf("built in a git clone, the binary has no vcs.revision:\n%s", m)
	} else {
		t.Logf("not a plain git clone: go build recorded no revision; toolgate version says:\n%s", got)
	}
}

// regularGitClone reports whether the module root is a git clone with a
// .git directory (not a worktree, not an export).
func regularGitClone(t *testing.T) bool {
	fi, err := os.Stat(filepath.Join(repoRoot, ".git"))
	if err != nil || !fi.IsDir() {
		return false
	}
	_, err = exec.LookPath("git")
	return err == nil
}

// dockerBuildCommands returns the go build commands of the Dockerfile's
// RUN instructions, each as its words (environment assignments first),
// with the build arguments substituted.
func dockerBuildCommands(t *testing.T, dockerfile string, args map[string]string) [][]string {
	t.Helper()
	// Join continuation lines, then take each RUN's && steps.
	joined := strings.ReplaceAll(dockerfile, "\\\n", " ")
	var cmds [][]string
	for line := range strings.SplitSeq(joined, "\n") {
		rest, ok := strings.CutPrefix(strings.TrimSpace(line), "RUN ")
		if !ok {
			continue
		}
		for step := range strings.SplitSeq(rest, "&&") {
			words := dockerWords(t, os.Expand(step, func(k string) string { return args[k] }))
			if i := slices.Index(words, "go"); i >= 0 && i+1 < len(words) && words[i+1] == "build" {
				cmds = append(cmds, words)
			}
		}
	}
	return cmds
}

// dockerWords splits s into words as sh does for the Dockerfile's simple
// commands: blanks separate, double quotes group.
func dockerWords(t *testing.T, s string) []string {
	var words []string
	var w strings.Builder
	in, inQuote := false, false
	for _, r := range s {
		switch {
		case r == '"':
			inQuote, in = !inQuote, true
		case (r == ' ' || r == '\t') && !inQuote:
			if in {
				words, in = append(words, w.String()), false
				w.Reset()
			}
		default:
			w.WriteRune(r)
			in = true
		}
	}
	if inQuote {
		t.Fatalf("unbalanced quote in %q", s)
	}
	if in {
		words = append(words, w.String())
	}
	return words
}

// dockerignored reports whether rel (slash-separated, relative to the
// build context) is left out by .dockerignore's patterns, which Docker
// anchors at the context's root: a pattern matches the path or one of
// its parent directories.
func dockerignored(patterns []string, rel string) bool {
	parts := strings.Split(rel, "/")
	for _, p := range patterns {
		p = strings.TrimPrefix(p, "/")
		for i := 1; i <= len(parts); i++ {
			if ok, _ := filepath.Match(p, strings.Join(parts[:i], "/")); ok {
				return true
			}
		}
	}
	return false
}

// TestDockerfileBuilds runs the Dockerfile's go build steps here, as the
// image's build stage would, with make image's build arguments: no
// container runtime is needed to find that a step names a package or a
// file the build context lacks, or sets (-X) a variable the binary does
// not have (the linker ignores those silently).
func TestDockerfileBuilds(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the toolgate binaries")
	}
	data, err := os.ReadFile(filepath.Join(repoRoot, "Dockerfile"))
	if err != nil {
		t.Fatal(err)
	}
	ignore, err := os.ReadFile(filepath.Join(repoRoot, ".dockerignore"))
	if err != nil {
		t.Fatal(err)
	}
	var patterns []string
	for line := range strings.SplitSeq(string(ignore), "\n") {
		if line = strings.TrimSpace(line); line != "" && !strings.HasPrefix(line, "#") {
			patterns = append(patterns, line)
		}
	}

	// Every ARG the image target passes is declared, and every file a
	// COPY from the context names exists and is in the context.
	sc := bufio.NewScanner(bytes.NewReader(data))
	args := map[string]bool{}
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) == 0 {
			continue
		}
		switch f[0] {
		case "ARG":
			name, _, _ := strings.Cut(f[1], "=")
			args[name] = true
		case "COPY":
			if strings.HasPrefix(f[1], "--from") {
				continue
			}
			for _, src := range f[1 : len(f)-1] {
				if _, err := os.Stat(filepath.Join(repoRoot, src)); err != nil {
					t.Errorf("COPY %s: %v", src, err)
				}
				if src != "." && dockerignored(patterns, src) {
					t.Errorf("COPY %s: .dockerignore leaves it out of the context", src)
				}
			}
		}
	}
	for _, a := range []string{"VERSION", "REVISION"} {
		if !args[a] {
			t.Errorf("make image passes --build-arg %s; the Dockerfile declares no ARG %s", a, a)
		}
	}

	cmds := dockerBuildCommands(t, string(data), map[string]string{"VERSION": "v9.8.7-test", "REVISION": "0123456789abcdef-test"})
	var pkgs []string
	for _, words := range cmds {
		// Only -ldflags is replayed: it decides what the binary says;
		// CGO_ENABLED=0 and -trimpath (TestDockerfile in deploy checks
		// them) would rebuild the whole tree outside the build cache.
		rest := words[slices.Index(words, "go")+2:]
		pkg := rest[len(rest)-1]
		var flags []string
		for _, w := range rest {
			if strings.HasPrefix(w, "-ldflags=") {
				flags = append(flags, w)
			}
		}
		pkgs = append(pkgs, pkg)
		bin := goBuild(t, pkg, nil, flags...)
		arg := "version"
		if filepath.Base(pkg) == "toolgate-hook" {
			arg = "--version"
		}
		// toolgate-hook says it on stderr, exiting 2 (no decision).
		out, err := exec.Command(bin, arg).CombinedOutput()
		if ee, ok := err.(*exec.ExitError); ok && arg == "--version" && ee.ExitCode() == 2 {
			err = nil
		}
		if err != nil {
			t.Errorf("%s %s: %v", pkg, arg, err)
			continue
		}
		for _, want := range []string{" v9.8.7-test\n", "revision: 0123456789abcdef-test\n"} {
			if !strings.Contains(string(out), want) {
				t.Errorf("%s built as the Dockerfile builds it: %s %s printed\n%s\nwant %q", pkg, filepath.Base(pkg), arg, out, want)
			}
		}
	}
	if !slices.Equal(pkgs, []string{"./cmd/toolgate", "./cmd/toolgate-hook"}) {
		t.Errorf("the Dockerfile builds %q, want both binaries", pkgs)
	}

	// Nothing the binaries are built from is left out of the context.
	list := exec.Command("go", slices.Concat([]string{"list", "-deps", "-f", `{{if not .Standard}}{{$d := .Dir}}{{range .GoFiles}}{{$d}}/{{.}}{{"\n"}}{{end}}{{range .EmbedFiles}}{{$d}}/{{.}}{{"\n"}}{{end}}{{end}}`}, pkgs)...)
	list.Dir = repoRoot
	out, err := list.Output()
	if err != nil {
		t.Fatal(err)
	}
	root, err := filepath.Abs(repoRoot)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for f := range strings.SplitSeq(strings.TrimSpace(string(out)), "\n") {
		rel, err := filepath.Rel(root, f)
		if err != nil || strings.HasPrefix(rel, "..") {
			continue // a dependency's, from the module cache
		}
		n++
		if dockerignored(patterns, filepath.ToSlash(rel)) {
			t.Errorf("%s is needed by the build, and .dockerignore leaves it out", rel)
		}
	}
	if n == 0 {
		t.Error("go list found no file of the module in the binaries")
	}
}

// TestMakeImage checks the image target's command line: the runtime, the
// Dockerfile, the tag and the build arguments the Dockerfile declares.
func TestMakeImage(t *testing.T) {
	if _, err := exec.LookPath("make"); err != nil {
		t.Skip("no make")
	}
	for _, tool := range []string{"docker", "podman"} {
		cmd := exec.Command("make", "--no-print-directory", "-n", "image", "CONTAINER_TOOL="+tool, "IMAGE=toolgate:t", "IMAGE_VERSION=v1.2.3", "IMAGE_REVISION=abc")
		cmd.Dir = repoRoot
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("make -n image: %v\n%s", err, out)
		}
		want := tool + " build -f Dockerfile -t toolgate:t --build-arg VERSION=v1.2.3 --build-arg REVISION=abc .\n"
		if string(out) != want {
			t.Errorf("make -n image printed %q, want %q", out, want)
		}
	}
	// By default: the version from git, the tag from the version, and
	// docker or podman, whichever is installed.
	cmd := exec.Command("make", "--no-print-directory", "-n", "image")
	cmd.Dir = repoRoot
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("make -n image: %v\n%s", err, out)
	}
	if !regexp.MustCompile(`^\S*(docker|podman) build -f Dockerfile -t toolgate:(\S+) --build-arg VERSION=(\S+) --build-arg REVISION=\S* \.\n$`).Match(out) {
		t.Errorf("make -n image printed %q", out)
	}
}

// TestMakeHelpListsEveryTarget checks that make help, the default goal,
// lists every phony target (names with digits included: e2e-agents).
func TestMakeHelpListsEveryTarget(t *testing.T) {
	if _, err := exec.LookPath("make"); err != nil {
		t.Skip("no make")
	}
	data, err := os.ReadFile(filepath.Join(repoRoot, "Makefile"))
	if err != nil {
		t.Fatal(err)
	}
	var targets []string
	for line := range strings.SplitSeq(string(data), "\n") {
		if rest, ok := strings.CutPrefix(line, ".PHONY:"); ok {
			targets = append(targets, strings.Fields(rest)...)
		}
	}
	if len(targets) < 10 {
		t.Fatalf("found only %d phony targets: %q", len(targets), targets)
	}
	cmd := exec.Command("make", "--no-print-directory")
	cmd.Dir = repoRoot
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("make: %v\n%s", err, out)
	}
	listed := map[string]bool{}
	for line := range strings.SplitSeq(string(out), "\n") {
		if f := strings.Fields(line); len(f) > 1 {
			listed[f[0]] = true
		}
	}
	for _, target := range targets {
		if !listed[target] {
			t.Errorf("make help does not list %s:\n%s", target, out)
		}
	}
}
