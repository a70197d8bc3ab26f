package engine

import (
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"mvdan.cc/sh/v3/syntax"

	"github.com/toolgate/toolgate/engine/knowledge"
)

// pathFields are the input fields that name the file an edit tool writes.
// Every one present is a target: a tool that names two paths must have both
// inside the project.
var pathFields = []string{"file_path", "notebook_path", "path", "absolute_path"}

var errNoTargets = errors.New("no target path in the tool input")

// editTargets returns the paths an edit-kind call writes, as given (not yet
// resolved). Any doubt is an error, and an error keeps the call off the
// accept-edits path.
func editTargets(kind Kind, input map[string]any) ([]string, error) {
	if kind == KindPatch {
		patch, err := patchText(input)
		if err != nil {
			return nil, err
		}
		return patchTargets(patch)
	}
	var targets []string
	for _, f := range pathFields {
		v, ok := input[f]
		if !ok {
			continue
		}
		s, ok := v.(string)
		if !ok || s == "" {
			return nil, fmt.Errorf("input field %q is not a non-empty string", f)
		}
		targets = append(targets, s)
	}
	if len(targets) == 0 {
		return nil, errNoTargets
	}
	return targets, nil
}

// readTargets returns the paths a read- or search-kind call names, for
// deny and ask rules such as Read(//etc/*) and for the secret-file check.
// ok is false when a path field holds something that is not a string or a
// list of strings: the call's target is then unknown, and a read of an
// unknown target is not safe.
func readTargets(input map[string]any) (targets []string, ok bool) {
	ok = true
	for _, f := range readPathFields {
		switch v := input[f].(type) {
		case nil:
		case string:
			if v != "" {
				targets = append(targets, v)
			}
		case []any: // Gemini read_many_files: paths
			for _, e := range v {
				s, isStr := e.(string)
				if !isStr {
					ok = false
					continue
				}
				if s != "" {
					targets = append(targets, s)
				}
			}
		default:
			ok = false
		}
	}
	return targets, ok
}

// broadSearch reports a search rooted at the filesystem root, a home
// directory or above one: it would sweep credential stores along.
func broadSearch(abs, home string) bool {
	if knowledge.IsCredentialAncestor(abs) || procReach(abs) {
		return true
	}
	switch abs {
	case "/", "/home", "/root", "/Users":
		return true
	}
	if home != "" {
		// abs is home or one of its ancestors.
		if rel, err := filepath.Rel(abs, home); err == nil && rel != ".." && !strings.HasPrefix(rel, "../") {
			return true
		}
	}
	dir := filepath.Dir(abs)
	return dir == "/home" || dir == "/Users"
}

// readPathFields are the input fields that name what a read or search tool
// reads: the edit fields plus Gemini CLI's dir_path and paths and Claude
// Code LSP's filePath.
var readPathFields = append(slices.Clone(pathFields), "dir_path", "paths", "filePath")

func patchText(input map[string]any) (string, error) {
	for _, f := range []string{"input", "patch"} {
		if v, ok := input[f]; ok {
			s, ok := v.(string)
			if !ok {
				return "", fmt.Errorf("input field %q is not a string", f)
			}
			return s, nil
		}
	}
	return "", errors.New("no patch in the tool input")
}

// Codex apply_patch headers that name a file.
var patchFileHeaders = []string{"*** Add File: ", "*** Update File: ", "*** Delete File: ", "*** Move to: "}

// patchTargets parses a Codex apply_patch envelope and returns every path it
// adds, updates, deletes or moves to. Anything that does not parse cleanly
// is an error: an unrecognised header could name a file we did not check.
func patchTargets(patch string) ([]string, error) {
	lines := strings.Split(strings.ReplaceAll(strings.TrimSpace(patch), "\r\n", "\n"), "\n")
	if len(lines) < 2 || strings.TrimSpace(lines[0]) != "*** Begin Patch" || strings.TrimSpace(lines[len(lines)-1]) != "*** End Patch" {
		return nil, errors.New("patch is not enclosed in *** Begin Patch / *** End Patch")
	}
	var targets []string
	for i, line := range lines[1 : len(lines)-1] {
		// Codex matches headers on the trimmed line, so " *** Add File: x"
		// adds x: every line that starts "***" after its leading space is a
		// header to us too (a context line of that shape is refused, never
		// skipped).
		line = strings.TrimLeftFunc(line, unicode.IsSpace)
		if !strings.HasPrefix(line, "***") {
			continue // hunk content: +, -, space or @@ lines
		}
		if strings.TrimSpace(line) == "*** End of File" {
			continue
		}
		found := false
		for _, h := range patchFileHeaders {
			if p, ok := strings.CutPrefix(line, h); ok {
				p = strings.TrimSpace(p)
				if p == "" {
					return nil, fmt.Errorf("patch line %d: empty path", i+2)
				}
				targets = append(targets, p)
				found = true
				break
			}
		}
		if !found {
			return nil, fmt.Errorf("patch line %d: unrecognised header %q", i+2, truncate(line, 80))
		}
	}
	if len(targets) == 0 {
		return nil, errNoTargets
	}
	return targets, nil
}

// shellCommand returns the command line of a shell-kind call. Codex passes
// argv arrays, which run without a shell: each element is quoted so that
// the analysis sees exactly those words ("#" or a quote in an element must
// not hide the ones after it); a ["bash", "-lc", script] array is reduced to
// its script. Codex's exec_command names its string "cmd"; an input with
// both fields is ambiguous (the tool decides which one runs) and yields no
// command, but every string found is returned in raw so that deny rules
// can still see it.
func shellCommand(input map[string]any) (cmd string, ok bool, raw []string) {
	v, hasCommand := input["command"]
	if c, hasCmd := input["cmd"]; hasCmd {
		if hasCommand {
			return "", false, rawStrings(v, c)
		}
		v = c
	}
	switch v := v.(type) {
	case string:
		return v, true, []string{v}
	case []any:
		argv := make([]string, 0, len(v))
		for _, a := range v {
			s, isStr := a.(string)
			if !isStr {
				return "", false, rawStrings(v)
			}
			argv = append(argv, s)
		}
		// bash -c: the script is judged as the line. sh and zsh keep their
		// wrapper, whose stricter rules apply (zsh reads globs and
		// quoting its own way).
		if len(argv) == 3 && isBash(argv[0]) && (argv[1] == "-c" || argv[1] == "-lc") {
			return argv[2], true, []string{argv[2]}
		}
		if len(argv) == 0 {
			return "", false, nil
		}
		quoted := make([]string, len(argv))
		for i, a := range argv {
			q, err := syntax.Quote(a, syntax.LangBash)
			if err != nil {
				return "", false, []string{strings.Join(argv, " ")}
			}
			quoted[i] = q
		}
		line := strings.Join(quoted, " ")
		return line, true, []string{line}
	}
	return "", false, nil
}

// rawStrings collects the strings of ambiguous shell inputs for deny rules.
func rawStrings(vals ...any) []string {
	var out []string
	for _, v := range vals {
		switch v := v.(type) {
		case string:
			out = append(out, v)
		case []any:
			var words []string
			for _, a := range v {
				if s, ok := a.(string); ok {
					words = append(words, s)
				}
			}
			out = append(out, strings.Join(words, " "))
		}
	}
	return out
}

func isBash(s string) bool {
	switch s {
	case "bash", "/bin/bash", "/usr/bin/bash":
		return true
	}
	return false
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}

// shellWorkdirFields name where a shell tool runs its command (Codex
// workdir, Gemini directory/dir_path).
var shellWorkdirFields = []string{"workdir", "cwd", "directory", "dir_path", "working_directory"}

// shellWorkdir returns the shell tool's own working directory, whether one
// was given, and whether it was a usable string.
func shellWorkdir(input map[string]any) (dir string, present, ok bool) {
	for _, f := range shellWorkdirFields {
		v, has := input[f]
		if !has || v == nil {
			continue
		}
		s, isStr := v.(string)
		if !isStr || s == "" {
			return "", true, false
		}
		if present && s != dir {
			return "", true, false // two different directories: ambiguous
		}
		dir, present = s, true
	}
	return dir, present, true
}

// procReach reports a path through a process's view of the file system
// (/proc/PID/root, cwd, fd, map_files, or its mem): it can reach any file
// the process can, the home directory and its credential stores included,
// under a name no rule or check knows. The path is read as written, never
// cleaned: /proc/self/cwd/.. is the parent of the agent's directory, not
// /proc.
func procReach(p string) bool {
	comps := strings.Split(p, "/")
	for i, c := range comps {
		// The /proc directory itself, however it is reached (/x/../proc),
		// not a project folder named proc.
		if c != "proc" || filepath.Clean(strings.Join(comps[:i+1], "/")) != "/proc" {
			continue
		}
		for _, d := range comps[i+1:] {
			switch d {
			case "root", "cwd", "fd", "map_files", "mem":
				return true
			}
		}
	}
	return false
}

// filterFields name the file filters of search and multi-read tools
// (Claude Code Grep's glob, Gemini CLI's include and grep_search's
// include_pattern): a filter that picks secret files makes the tool read
// them, even ones it would skip by default.
var filterFields = []string{"glob", "include", "include_pattern"}

// sensitiveFilter returns the first file filter in input that may pick a
// secret file, or a note when a filter field is not a string or a list of
// strings, or "".
func sensitiveFilter(input map[string]any, home string) string {
	var pats []string
	for _, f := range filterFields {
		switch v := input[f].(type) {
		case nil:
		case string:
			pats = append(pats, v)
		case []any:
			for _, e := range v {
				s, ok := e.(string)
				if !ok {
					return "a " + f + " field that is not a list of strings"
				}
				pats = append(pats, s)
			}
		default:
			return "a " + f + " field that is not a string"
		}
	}
	for _, p := range pats {
		// ripgrep-style negation: "!*.env" excludes, but judge it as a
		// pattern all the same (it errs towards asking).
		if g := strings.TrimPrefix(p, "!"); g != "" && (knowledge.SecretPath(g, home) || knowledge.NamePicksSecret(g)) {
			return p
		}
	}
	return ""
}
