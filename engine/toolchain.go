package engine

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"unicode"

	"github.com/toolgate/toolgate/engine/shell"
)

// A program the shell analysis found read-only may still fetch and run
// code when files where it runs ask for another toolchain: the go command
// downloads and runs the toolchain a go.mod or go.work names
// (GOTOOLCHAIN=auto, the default), rustup's proxies install and run what
// rust-toolchain.toml names (a path toolchain is any program), and version
// managers' shims (asdf, mise, volta, pyenv, nodenv, corepack) pick, and
// may install, the version a project file names. Such a program is local
// only when every file of its family, from the directory it runs in up to
// the root (both as written and as resolved: the go command walks up its
// logical working directory), is absent or asks for nothing.
//
// What is not proven here: the agent's environment and the user's own
// configuration (GOTOOLCHAIN, GOFLAGS, go env -w's file, RUSTUP_TOOLCHAIN,
// rustup overrides, the user's npmrc): they are the user's, not the
// project's, and changing them is itself a call toolgate judges.

// toolchainFile is a file that can make a program of a family fetch or
// run code; judge says why its content does, or "" (nil: its presence
// alone does).
type toolchainFile struct {
	name  string
	judge func([]byte) string
}

// versionManagerFiles are the files version managers' shims read to pick
// a program's version, for every family: asdf and mise (.tool-versions,
// mise's configuration, which can also set environments and hooks).
var versionManagerFiles = []toolchainFile{
	{name: ".tool-versions"}, {name: ".mise.toml"}, {name: "mise.toml"}, {name: ".mise.local.toml"},
	{name: "mise.local.toml"}, {name: ".mise"}, {name: "mise"}, {name: ".config/mise.toml"}, {name: ".config/mise"},
	{name: ".rtx.toml"},
}

// toolchainFiles lists, per family, the files beyond versionManagerFiles.
var toolchainFiles = map[shell.ToolchainFamily][]toolchainFile{
	// The go command reads go.work, else go.mod, found by walking up;
	// either may be the one it obeys, so both are judged everywhere.
	shell.ToolchainGo: {{name: "go.work", judge: judgeGoMod}, {name: "go.mod", judge: judgeGoMod}, {name: ".go-version"}},
	// rustup reads the nearest rust-toolchain or rust-toolchain.toml.
	shell.ToolchainRust: {{name: "rust-toolchain"}, {name: "rust-toolchain.toml"}},
	// nvm, fnm, nodenv and n read .nvmrc and .node-version; volta and
	// corepack read package.json; npm reads the project's .npmrc (its
	// registry, which npm's update check asks).
	shell.ToolchainNode: {{name: ".nvmrc"}, {name: ".node-version"}, {name: ".npmrc"}, {name: "package.json", judge: judgePackageJSON}},
	// pyenv reads .python-version.
	shell.ToolchainPython: {{name: ".python-version"}},
}

// maxToolchainFile bounds the bytes of a go.mod or package.json read.
const maxToolchainFile = 1 << 20

// judgeToolchain returns why the program t may fetch or run code given the
// files from dir (where the command runs) up to the root, or "".
func (rs *readScope) judgeToolchain(dir string, t shell.Toolchain) string {
	files, ok := toolchainFiles[t.Family]
	if !ok {
		return fmt.Sprintf("%s: no rule for the files it obeys", t.Program)
	}
	files = append(files[:len(files):len(files)], versionManagerFiles...)
	start := t.Dir
	if !filepath.IsAbs(start) {
		if dir == "" {
			return t.Program + ": runs with no working directory, so the files that name its toolchain cannot be read"
		}
		start = filepath.Join(dir, start)
	}
	start = expandHome(start, rs.home)
	if !filepath.IsAbs(start) {
		return t.Program + ": runs in " + truncate(start, 200) + ", whose files cannot be read before it runs"
	}
	// Resolved the kernel's way; a directory that does not exist (cd
	// sub fails) holds no file, and its parents are judged.
	resolved, err := rs.proofs.Resolve("/", start)
	if err != nil {
		return fmt.Sprintf("%s: runs in %s, which cannot be resolved (%v)", t.Program, truncate(start, 200), err)
	}
	chains := []string{filepath.Clean(start)}
	if resolved != chains[0] {
		chains = append(chains, resolved)
	}
	for _, d := range chains {
		for ; ; d = filepath.Dir(d) {
			// The home directory's own files (~/.npmrc, ~/.tool-versions,
			// ~/.config/mise) are the user's configuration, like the
			// environment.
			if rs.home != "" && d != "/" && d == filepath.Clean(rs.home) {
				continue
			}
			for _, f := range files {
				if why := rs.judgeToolchainFile(filepath.Join(d, f.name), f, t.Program); why != "" {
					return why
				}
			}
			if d == "/" || d == "." {
				break
			}
		}
	}
	return rs.spend(0, 0)
}

// judgeToolchainFile judges one candidate file: absent is fine; present,
// it must be a regular file its judge reads and accepts.
func (rs *readScope) judgeToolchainFile(p string, f toolchainFile, program string) string {
	if why := rs.spend(fsCall, len(p)); why != "" {
		return why
	}
	fi, err := rs.proofs.Look().Lstat(p)
	switch {
	case errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR):
		return ""
	case err != nil:
		return fmt.Sprintf("%s: cannot tell whether %s names a toolchain to fetch (%v)", program, truncate(p, 200), err)
	case f.judge == nil:
		return fmt.Sprintf("%s: %s may name a toolchain or version to fetch and run", program, truncate(p, 200))
	case !fi.Mode().IsRegular() || fi.Size() > maxToolchainFile:
		return fmt.Sprintf("%s: %s is not a small regular file, so what toolchain it names cannot be read", program, truncate(p, 200))
	}
	if rs.fsUsed += fsCall * int(fi.Size()>>12); rs.fsUsed > maxCheckFS {
		return rs.spend(0, 0)
	}
	fh, err := rs.proofs.Look().OpenFile(p, syscall.O_NONBLOCK)
	if err != nil {
		return fmt.Sprintf("%s: %s cannot be read (%v)", program, truncate(p, 200), err)
	}
	defer fh.Close()
	b, err := io.ReadAll(io.LimitReader(fh, maxToolchainFile+1))
	if err != nil || len(b) > maxToolchainFile {
		return fmt.Sprintf("%s: %s cannot be read whole", program, truncate(p, 200))
	}
	if why := f.judge(b); why != "" {
		return fmt.Sprintf("%s: %s %s", program, truncate(p, 200), why)
	}
	return ""
}

// judgeGoMod accepts a go.mod or go.work that makes no go command switch
// toolchains whatever its own version. The go command takes the first
// line that starts with "go" or "toolchain" and a blank (in or out of a
// block); with GOTOOLCHAIN=auto it runs the toolchain named when that is
// newer than itself, and "default" names none. Which go runs is not
// known here, and switching began with Go 1.21.0: only lines asking for
// no more than that are accepted, and every line that any reading could
// take for a go or toolchain line is judged.
func judgeGoMod(b []byte) string {
	var gos, tcs []string
	for _, line := range strings.Split(string(b), "\n") {
		line = strings.TrimSpace(line)
		if strings.HasPrefix(line, `"`) {
			return "has a line that starts with a quoted word, which is not read here"
		}
		for _, key := range []string{"go", "toolchain"} {
			rest, ok := strings.CutPrefix(line, key)
			if !ok || rest == "" || wordByte(rest[0]) {
				continue // goimports, golang.org/x/...: another word
			}
			// Any other byte after the key (a blank of any kind, a
			// parenthesis, a quote) may make the line the key's.
			v, _, _ := strings.Cut(rest, "//")
			v = strings.TrimFunc(v, func(r rune) bool { return unicode.IsSpace(r) || r == '"' })
			if key == "go" {
				gos = append(gos, v)
			} else {
				tcs = append(tcs, v)
			}
		}
	}
	if len(tcs) > 0 {
		allDefault := true
		for _, v := range tcs {
			allDefault = allDefault && v == "default"
		}
		if allDefault {
			return "" // the toolchain the user configured, whatever the go line says
		}
	}
	for _, v := range gos {
		if !goVersionAtMost121(v) {
			return "asks for go " + truncate(v, 40) + ", a toolchain the go command may download and run (GOTOOLCHAIN=auto)"
		}
	}
	for _, v := range tcs {
		rest, ok := strings.CutPrefix(v, "go")
		if !ok || !goVersionAtMost121(rest) {
			return "names toolchain " + truncate(v, 40) + ", which the go command may download and run (GOTOOLCHAIN=auto)"
		}
	}
	return ""
}

// wordByte reports whether c continues a word: after "go" it makes
// another word (golang.org, gopkg.in, go-yaml).
func wordByte(c byte) bool {
	return c == '_' || c == '-' || c == '.' || c == '/' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}

// goVersionAtMost121 reports whether v is a plain Go version, 1.N or
// 1.N.P, no newer than 1.21.0: the first go command that switches
// toolchains runs such a file itself.
func goVersionAtMost121(v string) bool {
	parts := strings.Split(v, ".")
	if len(parts) < 2 || len(parts) > 3 || parts[0] != "1" {
		return false
	}
	nums := make([]int, len(parts))
	for i, p := range parts {
		n, err := strconv.Atoi(p)
		if err != nil || p == "" || p[0] == '+' || p[0] == '-' || len(p) > 1 && p[0] == '0' {
			return false
		}
		nums[i] = n
	}
	switch {
	case nums[1] < 21:
		return true
	case nums[1] == 21:
		return len(nums) == 2 || nums[2] == 0
	}
	return false
}

// judgePackageJSON refuses a package.json whose top-level fields pick the
// node or package manager a shim runs (volta, packageManager, devEngines,
// engines with a package manager), or that does not parse: its reader
// might see other fields.
func judgePackageJSON(b []byte) string {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(b, &m); err != nil {
		return "does not parse as a JSON object"
	}
	for _, k := range []string{"volta", "packageManager", "devEngines"} {
		if _, ok := m[k]; ok {
			return "sets " + k + ", which version managers' shims obey (fetching and running what it names)"
		}
	}
	return ""
}
