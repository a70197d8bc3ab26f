package engine

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/toolgate/toolgate/engine/knowledge"
	"github.com/toolgate/toolgate/engine/pathcheck"
)

// Bounds on the file-system work one check may do to prove reads safe.
// Past a bound the read is not proven, and the call goes to the classifier.
const (
	maxGlobMatches = 256    // files one glob may expand to
	maxDirEntries  = 4096   // entries read from one directory for a glob
	maxTreeEntries = 20_000 // entries a recursive search's tree may hold
)

// readScope judges read targets for one check: a read is local only when
// its target, resolved the kernel's way, lies inside a read root (the
// project, its additional directories, the default roots and the
// policy's) and neither as written nor as resolved has a secret-shaped
// component.
type readScope struct {
	ctx     context.Context
	home    string
	project []string // resolved project directories that are not broad
	roots   knowledge.Roots
}

func (e *Engine) newReadScope(ctx context.Context, req *Request, p *policy) *readScope {
	rs := &readScope{ctx: ctx, home: e.home, roots: p.readRoots}
	for _, d := range append([]string{req.WorkingDirectory}, req.AdditionalDirectories...) {
		if d == "" {
			continue
		}
		r, err := pathcheck.Resolve("/", d)
		if err != nil || broadSearch(filepath.Clean(d), e.home) || broadSearch(r, e.home) {
			// A home directory or above is no read root: it holds the
			// credential stores of tools nobody listed.
			continue
		}
		rs.project = append(rs.project, r)
	}
	return rs
}

// within reports whether a resolved path lies in a read root.
func (rs *readScope) within(p string) bool {
	return rs.inProject(p) || rs.roots.Within(p)
}

// judge returns why the read target raw (relative to dir) is not proven
// safe, or "". Globs are expanded against the file system as bash would
// and each file is judged.
func (rs *readScope) judge(dir, raw string) string {
	p := expandHome(raw, rs.home)
	switch {
	case p == "":
		return "an empty read target"
	case strings.HasPrefix(p, "~") || strings.Contains(p, "$"):
		return fmt.Sprintf("reads %s, whose location is not known before it runs", truncate(raw, 200))
	case !filepath.IsAbs(p) && dir == "":
		return fmt.Sprintf("reads %s with no working directory to place it", truncate(raw, 200))
	}
	if !filepath.IsAbs(p) {
		p = dir + "/" + p // not cleaned: .. must follow symlinks
	}
	if knowledge.HasMeta(p) {
		return rs.judgeGlob(p, raw)
	}
	return rs.judgeFile(p, raw)
}

func (rs *readScope) judgeFile(p, raw string) string {
	if knowledge.SecretPath(raw, rs.home) || knowledge.SecretPath(p, rs.home) {
		return fmt.Sprintf("reads %s, which may hold secrets", truncate(raw, 200))
	}
	resolved, err := pathcheck.Resolve("/", p)
	if err != nil {
		return fmt.Sprintf("reads %s, which cannot be resolved (%v)", truncate(raw, 200), err)
	}
	if knowledge.SecretPath(resolved, rs.home) {
		return fmt.Sprintf("reads %s, which resolves to %s and may hold secrets", truncate(raw, 200), truncate(resolved, 200))
	}
	if !rs.within(resolved) {
		return fmt.Sprintf("reads %s, outside the read roots", truncate(resolved, 200))
	}
	return ""
}

// judgeGlob expands an absolute glob component by component against the
// file system and judges every match; a glob that matches nothing is
// passed to the program as written, and judged so.
func (rs *readScope) judgeGlob(p, raw string) string {
	comps := strings.Split(p, "/")
	for _, c := range comps {
		if !knowledge.HasMeta(c) {
			continue
		}
		if c == "**" || strings.Contains(c, "**") || !knowledge.GlobSupported(c) {
			return fmt.Sprintf("reads %s, a glob outside the syntax toolgate matches exactly as bash does", truncate(raw, 200))
		}
	}
	// The pattern is judged too, not only today's matches: a file may
	// appear before the command runs, and the server's view of the file
	// system may lag the agent's. A directory part only needs to miss the
	// secret directories; the last part must miss every secret name.
	for i, c := range comps {
		if !knowledge.HasMeta(c) {
			continue
		}
		if i == len(comps)-1 && knowledge.NamePicksSecret(c) || i < len(comps)-1 && knowledge.DirPicksSecret(c) {
			return fmt.Sprintf("reads %s, a glob that can pick secret files", truncate(raw, 200))
		}
	}
	matches := []string{"/"}
	for _, c := range comps {
		if c == "" {
			continue
		}
		var next []string
		for _, m := range matches {
			if !knowledge.HasMeta(c) {
				next = append(next, filepath.Join(m, c))
				continue
			}
			names, err := readDirNames(m)
			if err != nil {
				continue // unreadable or not a directory: bash matches nothing there
			}
			for _, n := range names {
				if ok, _ := knowledge.Match(c, n); ok {
					next = append(next, filepath.Join(m, n))
				}
			}
		}
		if len(next) > maxGlobMatches {
			return fmt.Sprintf("reads %s, a glob matching more than %d files", truncate(raw, 200), maxGlobMatches)
		}
		matches = next
	}
	if len(matches) == 0 {
		return rs.judgeFile(p, raw)
	}
	for _, m := range matches {
		if why := rs.judgeFile(m, m); why != "" {
			return why
		}
	}
	return ""
}

var errTooLarge = errors.New("too many entries")

func readDirNames(dir string) ([]string, error) {
	f, err := os.Open(dir)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	names, err := f.Readdirnames(maxDirEntries + 1)
	if len(names) > maxDirEntries {
		return nil, errTooLarge
	}
	if err != nil && len(names) == 0 {
		return nil, err
	}
	return names, nil
}

// judgeTree judges a recursive content search rooted at raw: the root is a
// read, and the tree below it must hold no secret-shaped name the search
// would read (hidden ones only when the search includes hidden files).
// Links inside the tree are not followed, as grep -r and ripgrep do not.
func (rs *readScope) judgeTree(dir, raw string, hidden bool) string {
	if why := rs.judge(dir, raw); why != "" {
		return why
	}
	p := expandHome(raw, rs.home)
	if !filepath.IsAbs(p) {
		p = dir + "/" + p
	}
	root, err := pathcheck.Resolve("/", p)
	if err != nil {
		return fmt.Sprintf("searches %s, which cannot be resolved", truncate(raw, 200))
	}
	n := 0
	var found string
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			if path == root && errors.Is(err, fs.ErrNotExist) {
				return fs.SkipAll
			}
			return nil // unreadable: the search cannot read it either
		}
		if n++; n > maxTreeEntries {
			return errTooLarge
		}
		if n%256 == 0 && rs.ctx.Err() != nil {
			return rs.ctx.Err()
		}
		if path == root {
			return nil
		}
		name := d.Name()
		if !hidden && strings.HasPrefix(name, ".") {
			if d.IsDir() {
				return fs.SkipDir
			}
			return nil
		}
		if knowledge.SecretPath(name, "") || d.IsDir() && name == ".git" {
			// .git holds the repository's config, which may carry tokens.
			found = path
			return fs.SkipAll
		}
		return nil
	})
	switch {
	case errors.Is(err, errTooLarge):
		return fmt.Sprintf("searches %s, a tree of more than %d entries that cannot be checked for secret files", truncate(raw, 200), maxTreeEntries)
	case err != nil:
		return "the check's deadline passed"
	case found != "":
		return fmt.Sprintf("searches %s, which holds %s, a file that may hold secrets", truncate(raw, 200), truncate(found, 200))
	}
	return ""
}

// expandHome expands a leading ~ or $HOME when the home is known.
func expandHome(p, home string) string {
	if home == "" {
		return p
	}
	for _, pre := range []string{"~", "$HOME", "${HOME}"} {
		if rest, ok := strings.CutPrefix(p, pre); ok && (rest == "" || rest[0] == '/') {
			return home + rest
		}
	}
	return p
}

// contentSearch reports whether a search tool reads file content
// recursively, and whether it includes hidden files. Claude Code's Grep
// runs ripgrep with its defaults, which skip hidden files; the others are
// taken to read everything.
func contentSearch(name string) (content, hidden bool) {
	switch name {
	case "Grep":
		return true, false
	case "grep", "grep_search", "search_file_content":
		return true, true
	}
	return false, false
}

// literalDir returns the directory part of a glob pattern before its first
// metacharacter ("." when it starts with one).
func literalDir(pattern string) string {
	i := strings.IndexAny(pattern, "*?[{")
	if i < 0 {
		return filepath.Dir(pattern)
	}
	d := pattern[:i]
	if j := strings.LastIndexByte(d, '/'); j >= 0 {
		if j == 0 {
			return "/"
		}
		return d[:j]
	}
	return "."
}

// inProject reports whether a resolved path lies in a project directory.
func (rs *readScope) inProject(p string) bool {
	for _, r := range rs.project {
		if p == r || strings.HasPrefix(p, r+"/") || r == "/" {
			return true
		}
	}
	return false
}

func orRoot(dir string) string {
	if dir == "" {
		return "/"
	}
	return dir
}
