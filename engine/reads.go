package engine

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"syscall"

	"github.com/toolgate/toolgate/engine/gitrepo"
	"github.com/toolgate/toolgate/engine/knowledge"
	"github.com/toolgate/toolgate/engine/pathcheck"
	"github.com/toolgate/toolgate/engine/shell"
)

// Bounds on the file-system work one check may do to prove reads safe.
// Past a bound the read is not proven, and the call goes to the classifier.
const (
	maxGlobMatches = 256    // files one glob may expand to
	maxDirEntries  = 4096   // entries read from one directory for a glob
	maxTreeEntries = 20_000 // entries a recursive search's tree may hold
	// maxCheckFS bounds the file-system work of a whole check, in units
	// of about 2 µs: a directory entry read (for globs and trees, each
	// name matched against the secret shapes) is one, a path component
	// resolved (a look-up and the same match), a directory opened or 4 KiB
	// of an ignore file read are fsCall. A command may name many globs,
	// trees and files; judging each within its own bounds could still take
	// minutes. The largest tree (maxTreeEntries) costs about 26,000 units;
	// the bound, some 0.15 s of work.
	maxCheckFS = 60_000
	fsCall     = 3
	// maxCheckSteps bounds the matching work of a check: glob matching
	// steps (knowledge.MatchSteps) and bytes of glob expansions built.
	maxCheckSteps = 1 << 25
	// maxPath is PATH_MAX: a longer path names no file, and expanding a
	// glob of thousands of components costs their square.
	maxPath = 4096
)

// maxIgnoreBytes bounds the bytes of an ignore file read for whitelists.
const maxIgnoreBytes = 1 << 20

// readScope judges read targets for one check: a read is local only when
// its target, resolved the kernel's way, lies inside a read root (the
// project, its additional directories, the default roots and the
// policy's) and neither as written nor as resolved has a secret-shaped
// component. The project directories are resolved on first use: most
// checks read nothing.
type readScope struct {
	ctx      context.Context
	home     string
	proofs   *pathcheck.Proofs // the check's
	dirs     []string          // working and additional directories, as given
	resolved bool
	project  []string // resolved project directories that are not broad
	roots    knowledge.Roots
	// fsUsed and stepsUsed count against maxCheckFS and maxCheckSteps.
	fsUsed, stepsUsed int
	// judged remembers the verdicts on read targets and trees: a command
	// may name one many times (cat a a a ...). The first target's is
	// kept apart: most checks judge one.
	judged                     map[string]string
	firstDir, firstRaw, firstW string
	firstSet                   bool
	// judgeFile's verdicts, the first kept apart likewise.
	files                                 map[string][2]string
	filed                                 bool
	fileP, fileRaw, fileResolved, fileWhy string
}

func (e *Engine) newReadScope(ctx context.Context, req *Request, p *policy, c *call) *readScope {
	return &readScope{ctx: ctx, home: e.home, roots: p.readRoots, proofs: &c.proofs,
		dirs: append([]string{req.WorkingDirectory}, req.AdditionalDirectories...)}
}

// checkEnded is why a read is not proven when the check's context ended
// while it was judged.
const checkEnded = "the check ended (its deadline passed or its caller left) before its reads were checked"

// cutShort reports whether the context's end cut the facts about c short:
// its reads' checks or its shell analysis stopped.
func cutShort(c *call) bool {
	var le *shell.LimitError
	return c.unproven == checkEnded || c.shell != nil && errors.As(c.shell.ParseErr, &le) && le.Err != nil
}

// spend counts file-system operations and matching steps against the
// check's bounds, and returns why the check cannot go on (a bound is
// exceeded, or its context ended), or "".
func (rs *readScope) spend(fsOps, steps int) string {
	rs.fsUsed += fsOps
	rs.stepsUsed += steps
	switch {
	case rs.ctx.Err() != nil:
		return checkEnded
	case rs.fsUsed > maxCheckFS:
		return "the reads need more file-system work to check than a check may do"
	case rs.stepsUsed > maxCheckSteps:
		return "the reads' globs cost too much to match"
	}
	return ""
}

// projectDirs resolves the project directories once. One that is broad (a
// home or above, a system, bin or configuration directory) is no read root:
// it holds the credential stores of tools nobody listed.
func (rs *readScope) projectDirs() []string {
	if rs.resolved {
		return rs.project
	}
	rs.resolved = true
	for _, d := range rs.dirs {
		if d == "" {
			continue
		}
		r, err := rs.proofs.Resolve("/", d)
		if err != nil || broadSearch(filepath.Clean(d), rs.home) || knowledge.BroadRoot(r, rs.home) != "" {
			continue
		}
		rs.project = append(rs.project, r)
	}
	return rs.project
}

// inProject reports whether a resolved path lies in a project directory.
func (rs *readScope) inProject(p string) bool {
	for _, r := range rs.projectDirs() {
		if p == r || strings.HasPrefix(p, r+"/") {
			return true
		}
	}
	return false
}

// rootOf reports whether a resolved path lies in a read root, and which
// kinds of file are read there (knowledge.AnyFile in the project, the
// agent's task output and a policy's roots).
func (rs *readScope) rootOf(p string) (bool, knowledge.FileKinds) {
	if rs.inProject(p) || len(rs.dirs) > 0 && knowledge.InAgentTasks(p, rs.dirs[0]) {
		return true, knowledge.AnyFile
	}
	return rs.roots.Place(p)
}

// rootsWhy says why a resolved read target is not read locally by where it
// is, or "": it lies outside the read roots, or it is a file (or a name
// the server cannot see) of a kind its toolchain root does not admit. A
// directory inside one is listed, entered or searched; its files are
// judged one by one.
func (rs *readScope) rootsWhy(p string) string {
	in, kinds := rs.rootOf(p)
	switch {
	case !in:
		return fmt.Sprintf("reads %s, outside the read roots", truncate(p, 200))
	case knowledge.Admits(kinds, p):
		return ""
	}
	if fi, err := rs.proofs.Look().Lstat(p); err == nil && fi.IsDir() && !inGitDir(p) {
		return ""
	}
	return fmt.Sprintf("reads %s, which is not a source, header or documentation file (the only files read locally in toolchain and cache trees)", truncate(p, 200))
}

// place makes raw absolute against dir without cleaning it (.. must follow
// symlinks), or says why it cannot be placed.
func (rs *readScope) place(dir, raw string) (string, string) {
	p := expandHome(raw, rs.home)
	switch {
	case p == "":
		return "", "an empty read target"
	case strings.HasPrefix(p, "~") || strings.Contains(p, "$"):
		return "", fmt.Sprintf("reads %s, whose location is not known before it runs", truncate(raw, 200))
	case filepath.IsAbs(p):
		return p, ""
	case dir == "":
		return "", fmt.Sprintf("reads %s with no working directory to place it", truncate(raw, 200))
	}
	return dir + "/" + p, ""
}

// judge returns why the read target raw (relative to dir) is not proven
// safe, or "". Globs are judged as patterns and expanded against the file
// system as bash would, and each file is judged.
func (rs *readScope) judge(dir, raw string) string {
	switch {
	case !rs.firstSet:
		rs.firstDir, rs.firstRaw, rs.firstSet = dir, raw, true
		rs.firstW = rs.judgeOnce(dir, raw)
		return rs.firstW
	case dir == rs.firstDir && raw == rs.firstRaw:
		return rs.firstW
	}
	key := dir + "\x00" + raw
	if why, ok := rs.judged[key]; ok {
		return why
	}
	why := rs.judgeOnce(dir, raw)
	if rs.judged == nil {
		rs.judged = map[string]string{}
	}
	rs.judged[key] = why
	return why
}

func (rs *readScope) judgeOnce(dir, raw string) string {
	if why := rs.spend(0, len(dir)+len(raw)); why != "" {
		return why
	}
	p, why := rs.place(dir, raw)
	switch {
	case why != "":
		return why
	case knowledge.HasMeta(p):
		return rs.judgeGlob(p, raw)
	}
	_, why = rs.judgeFile(p, raw)
	return why
}

// judgeFile judges one absolute, unexpanded path and returns it resolved.
func (rs *readScope) judgeFile(p, raw string) (string, string) {
	// A search's root is judged as a read too: once.
	switch {
	case !rs.filed:
		rs.filed, rs.fileP, rs.fileRaw = true, p, raw
		rs.fileResolved, rs.fileWhy = rs.judgeFileOnce(p, raw)
		return rs.fileResolved, rs.fileWhy
	case p == rs.fileP && raw == rs.fileRaw:
		return rs.fileResolved, rs.fileWhy
	}
	key := p + "\x00" + raw
	if v, ok := rs.files[key]; ok {
		return v[0], v[1]
	}
	resolved, why := rs.judgeFileOnce(p, raw)
	if rs.files == nil {
		rs.files = map[string][2]string{}
	}
	rs.files[key] = [2]string{resolved, why}
	return resolved, why
}

func (rs *readScope) judgeFileOnce(p, raw string) (string, string) {
	// Resolving costs a look-up per component.
	if why := rs.spend(fsCall*strings.Count(p, "/"), len(p)); why != "" {
		return "", why
	}
	if knowledge.SecretPath(p, rs.home) {
		return "", fmt.Sprintf("reads %s, which may hold secrets", truncate(raw, 200))
	}
	resolved, err := rs.proofs.Resolve("/", p)
	if err != nil {
		return "", fmt.Sprintf("reads %s, which cannot be resolved (%v)", truncate(raw, 200), err)
	}
	if resolved != p && knowledge.SecretPath(resolved, rs.home) {
		return "", fmt.Sprintf("reads %s, which resolves to %s and may hold secrets", truncate(raw, 200), truncate(resolved, 200))
	}
	if why := rs.rootsWhy(resolved); why != "" {
		return "", why
	}
	return resolved, ""
}

// judgeGlob expands an absolute glob component by component against the
// file system and judges every match; a glob that matches nothing is
// passed to the program as written, and judged so.
func (rs *readScope) judgeGlob(p, raw string) string {
	if len(p) >= maxPath {
		return fmt.Sprintf("reads %s, a glob longer than a path can be", truncate(raw, 200))
	}
	comps := strings.Split(p, "/")
	for i, c := range comps {
		if !knowledge.HasMeta(c) {
			continue
		}
		if strings.Contains(c, "**") || !knowledge.GlobSupported(c) {
			return fmt.Sprintf("reads %s, a glob outside the syntax toolgate matches exactly as bash does", truncate(raw, 200))
		}
		// The pattern is judged too, not only today's matches: a file may
		// appear before the command runs, and the server's view of the
		// file system may lag the agent's. A directory part only needs to
		// miss the secret directories; the last part every secret name.
		if i == len(comps)-1 && knowledge.NamePicksSecret(c) || i < len(comps)-1 && knowledge.DirPicksSecret(c) {
			return fmt.Sprintf("reads %s, a glob that can pick secret files", truncate(raw, 200))
		}
	}
	matches := []string{""}
	for _, c := range comps[1:] {
		var next []string
		fc := knowledge.Fold(c)
		for _, m := range matches {
			if !knowledge.HasMeta(c) {
				if why := rs.spend(0, len(m)+len(c)); why != "" {
					return why
				}
				next = append(next, m+"/"+c) // not cleaned: bash follows links before ..
				continue
			}
			names, err := readDirNames(rs.proofs.Look(), m)
			switch {
			case errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR):
				continue // bash matches nothing there
			case err != nil:
				return fmt.Sprintf("reads %s, a glob that cannot be expanded here (%v)", truncate(raw, 200), err)
			}
			steps := 0
			for _, n := range names {
				ok, _, k := knowledge.MatchSteps(fc, n)
				if steps += k; ok {
					steps += len(m) + len(n)
					next = append(next, m+"/"+n)
				}
			}
			if why := rs.spend(len(names)+fsCall, steps); why != "" {
				return why
			}
		}
		if len(next) > maxGlobMatches {
			return fmt.Sprintf("reads %s, a glob matching more than %d files", truncate(raw, 200), maxGlobMatches)
		}
		matches = next
	}
	if len(matches) == 0 {
		_, why := rs.judgeFile(p, raw)
		return why
	}
	for _, m := range matches {
		if _, why := rs.judgeFile(m, m); why != "" {
			return why
		}
	}
	return ""
}

var errTooLarge = errors.New("too many entries")

// readDirNames lists at most maxDirEntries names of dir ("" is /), found
// as the kernel would (a link on the way followed, a foreign file system
// refused before it is entered).
func readDirNames(lk *pathcheck.Look, dir string) ([]string, error) {
	if dir == "" {
		dir = "/"
	}
	_, r, err := lk.Stat(dir)
	if err != nil {
		return nil, err
	}
	f, err := lk.OpenDir(r)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	names, err := f.Readdirnames(maxDirEntries + 1)
	switch {
	case len(names) > maxDirEntries:
		return nil, errTooLarge
	case err != nil && !errors.Is(err, io.EOF):
		return nil, err
	}
	return names, nil
}

// treeWalk says what a recursive read reads below its root.
// xargsSplits are what xargs without -0 splits names at or reads as
// quoting.
const xargsSplits = " \t\n\v\f\r\"'\\"

type treeWalk struct {
	hidden bool // hidden entries are read
	follow bool // links are followed (or read through): any link refuses
	// followNamed: only the links whose names pass names are followed.
	followNamed bool
	// skipDirs are globs of directory names the search does not enter
	// (grep --exclude-dir, rg -g '!name'); a directory is skipped only
	// when one surely matches its name (knowledge.NameMatch).
	skipDirs []string
	// names, when set, are globs one of which a file's name matches for
	// the search to read it (grep --include, find -name before -exec);
	// a file is left out only when none may match.
	names []string
	// oneLevel: only the files directly in the root are read; its
	// subdirectories are not entered.
	oneLevel bool
	// splitSafe: the names below the root reach their reader through
	// xargs without -0, which splits at blanks and reads quotes and
	// backslashes: every name must be free of them, or one file's name
	// becomes other names.
	splitSafe bool
	// kinds are the kinds of file read locally below the root (a
	// toolchain root's; knowledge.AnyFile in the project).
	kinds knowledge.FileKinds
	// steps counts the matching steps of skips and reads.
	steps int
}

// skips reports whether the search surely does not enter directory name.
func (w *treeWalk) skips(name string) bool {
	for _, g := range w.skipDirs {
		m, ok, k := knowledge.NameMatchSteps(g, name)
		if w.steps += k; ok && m {
			return true
		}
	}
	return false
}

// reads reports whether the search may read the file name.
func (w *treeWalk) reads(name string) bool {
	if w.names == nil {
		return true
	}
	for _, g := range w.names {
		m, ok, k := knowledge.NameMatchSteps(g, name)
		if w.steps += k; m || !ok {
			return true
		}
	}
	return false
}

// judgeTree judges a recursive content search rooted at raw that reads
// every file below it (hidden ones when hidden), following links when
// follow; see walkTree.
func (rs *readScope) judgeTree(dir, raw string, hidden, follow bool) string {
	return rs.walkOnce(dir, raw, treeWalk{hidden: hidden, follow: follow})
}

// judgeShellTree judges a tree a shell command reads (shell.Tree), with
// the directories it skips and the file names it keeps.
func (rs *readScope) judgeShellTree(dir string, t shell.Tree) string {
	return rs.walkOnce(dir, t.Path, treeWalk{hidden: t.Hidden, follow: t.Follow, followNamed: t.FollowNamed, skipDirs: t.SkipDirs, names: t.Names, oneLevel: t.OneLevel, splitSafe: t.SplitSafe})
}

// walkOnce is walkTree, once for each tree a check names however many
// times it names it (grep -r x . . .).
func (rs *readScope) walkOnce(dir, raw string, w treeWalk) string {
	key := fmt.Sprintf("tree\x00%s\x00%s\x00%v\x00%q\x00%q", dir, raw, []bool{w.hidden, w.follow, w.followNamed, w.oneLevel, w.names == nil, w.splitSafe}, w.skipDirs, w.names)
	if why, ok := rs.judged[key]; ok {
		return why
	}
	why := rs.walkTree(dir, raw, w)
	if rs.judged == nil {
		rs.judged = map[string]string{}
	}
	rs.judged[key] = why
	return why
}

// walkTree judges a recursive read rooted at raw: the root is a read, and
// the tree below it must hold no secret-shaped name the search would read
// (hidden ones only when the search includes hidden files, files only
// when their name passes the search's name filter), nor a link when the
// search follows links. A repository's .git counts as secret, its config
// may hold tokens: with no name filter the search may not enter one, nor
// a secret directory; with one, no file it keeps may lie in them. The walk
// is bounded in entries and by the check's context; anything it cannot read
// refuses, since the agent may read what the server cannot.
func (rs *readScope) walkTree(dir, raw string, w treeWalk) string {
	p, why := rs.place(dir, raw)
	switch {
	case why != "":
		return why
	case knowledge.HasMeta(p):
		return fmt.Sprintf("searches %s, a glob of trees", truncate(raw, 200))
	}
	root, why := rs.judgeFile(p, raw)
	if why != "" {
		return why
	}
	switch fi, err := rs.proofs.Look().Lstat(root); {
	case err == nil && !fi.IsDir():
		return "" // a file, judged above
	case inGitDir(p) || inGitDir(root):
		// Also when the server cannot see it: the agent's may exist.
		return fmt.Sprintf("searches %s, inside a repository's .git, whose config may hold tokens", truncate(raw, 200))
	case errors.Is(err, fs.ErrNotExist):
		return "" // nothing there to read
	}
	_, w.kinds = rs.rootOf(root)
	why, skippedHidden := rs.walkEntries(root, raw, w)
	if why != "" || w.hidden || !skippedHidden {
		// Whether an ignore file above whitelists hidden entries only
		// matters when the walk passed over some.
		return why
	}
	above, why := rs.ignoreWhitelistsAbove(root)
	if why != "" || !above {
		return why
	}
	w.hidden = true
	why, _ = rs.walkEntries(root, raw, w)
	return why
}

// walkEntries walks the tree below root as walkTree describes, and says
// whether it passed over a hidden entry (one a whitelisting ignore file
// above root would have it read).
func (rs *readScope) walkEntries(root, raw string, w treeWalk) (why string, skippedHidden bool) {
	type walkDir struct {
		path   string
		secret bool // inside .git or a secret directory
	}
	n := 0
	stack := []walkDir{{path: root}}
	for len(stack) > 0 {
		d := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if why := rs.spend(fsCall, w.steps); why != "" {
			return why, skippedHidden
		}
		w.steps = 0
		f, err := rs.proofs.Look().OpenDir(d.path)
		if err != nil {
			return fmt.Sprintf("searches %s, whose tree cannot be read here (%v)", truncate(raw, 200), err), skippedHidden
		}
		entries, err := f.ReadDir(maxTreeEntries - n + 1)
		f.Close()
		if err != nil && !errors.Is(err, io.EOF) {
			return fmt.Sprintf("searches %s, whose tree cannot be read here (%v)", truncate(raw, 200), err), skippedHidden
		}
		if n += len(entries); n > maxTreeEntries {
			return fmt.Sprintf("searches %s, a tree of more than %d entries that cannot be checked for secret files", truncate(raw, 200), maxTreeEntries), skippedHidden
		}
		if why := rs.spend(len(entries), len(entries)); why != "" {
			return why, skippedHidden
		}
		for _, e := range entries {
			name := e.Name()
			if w.splitSafe && strings.ContainsAny(name, xargsSplits) {
				return fmt.Sprintf("searches %s, where the name %q reaches xargs, which splits it into other names", truncate(raw, 200), truncate(name, 100)), skippedHidden
			}
			if !w.hidden && d.path != root && slices.Contains(ignoreFiles, name) && rs.whitelisting(d.path+"/"+name) {
				// The search reads hidden entries after all: again,
				// counting them.
				w.hidden = true
				return rs.walkEntries(root, raw, w)
			}
			if !w.hidden && strings.HasPrefix(name, ".") {
				skippedHidden = true
				continue
			}
			path := d.path + "/" + name
			isDir := e.IsDir()
			if isDir && w.oneLevel {
				continue // not read
			}
			// .git holds the repository's config, which may carry tokens.
			secretDir := isDir && (knowledge.Fold(name) == ".git" || knowledge.SecretPath(name, ""))
			switch {
			case isDir && w.skips(name):
				continue
			case e.Type()&fs.ModeSymlink != 0 && w.follow && (!w.followNamed || w.reads(name)):
				return fmt.Sprintf("searches %s following links, and %s is one", truncate(raw, 200), truncate(path, 200)), skippedHidden
			case w.names == nil && (secretDir || knowledge.SecretPath(name, "")):
				return fmt.Sprintf("searches %s, which holds %s, a file that may hold secrets", truncate(raw, 200), truncate(path, 200)), skippedHidden
			case w.names != nil && w.reads(name) && (d.secret || secretDir || knowledge.SecretPath(name, "")):
				return fmt.Sprintf("searches %s, which holds %s, a file that may hold secrets and that the search reads", truncate(raw, 200), truncate(path, 200)), skippedHidden
			case !isDir && w.kinds != knowledge.AnyFile && (w.names == nil || w.reads(name)) && !knowledge.Admits(w.kinds, path):
				return fmt.Sprintf("searches %s, which holds %s, not a source, header or documentation file (the only files read locally in toolchain and cache trees)", truncate(raw, 200), truncate(path, 200)), skippedHidden
			case isDir:
				stack = append(stack, walkDir{path: path, secret: d.secret || secretDir})
			}
		}
	}
	return "", skippedHidden
}

// ignoreFiles are the files in each directory whose rules ripgrep (the
// Grep tool's and rg's searches, which skip hidden entries) obeys. A rule
// starting with "!" whitelists what it matches, hidden files and
// directories included (!.env made rg print .env).
var ignoreFiles = []string{".gitignore", ".ignore", ".rgignore"}

// ignoreWhitelistsAbove reports whether an ignore file that applies to
// the search rooted at dir, from dir or a directory above it, may
// whitelist: the per-directory ignore files, a repository's
// .git/info/exclude and the user's global git ignore file.
func (rs *readScope) ignoreWhitelistsAbove(dir string) (bool, string) {
	if rs.home != "" {
		for _, f := range rs.globalIgnoreFiles() {
			if f == "" || rs.whitelisting(f) {
				return true, ""
			}
		}
	}
	for d := dir; ; d = filepath.Dir(d) {
		for _, n := range append(ignoreFiles[:len(ignoreFiles):len(ignoreFiles)], ".git/info/exclude") {
			if rs.whitelisting(strings.TrimSuffix(d, "/") + "/" + n) {
				return true, ""
			}
		}
		if d == "/" || d == "." || d == "" {
			return false, rs.spend(0, 0)
		}
	}
}

// globalIgnoreFiles are the user's global git ignore files, which
// ripgrep and git honour: the default one, and any that core.excludesFile
// names in the user's or the system's git config. "" stands for one that
// cannot be known (a relative path, a config that cannot be read).
func (rs *readScope) globalIgnoreFiles() []string {
	files := []string{rs.home + "/.config/git/ignore"}
	settings, err := gitrepo.ConfigWith(rs.proofs.Look(), nil, rs.home)
	if err != nil {
		return append(files, "")
	}
	for _, st := range settings {
		if st.Sub == "" && strings.EqualFold(st.Section, "core") && strings.EqualFold(st.Key, "excludesfile") {
			p := expandHome(st.Value, rs.home)
			if !filepath.IsAbs(p) {
				p = ""
			}
			files = append(files, p)
		}
	}
	return files
}

// whitelisting reports whether the ignore file p may hold a rule that
// whitelists (a line starting with "!"). One that exists but is no regular
// file, or cannot be read, or is too large to read, may; so may one past
// the check's bounds on its file-system work.
func (rs *readScope) whitelisting(p string) bool {
	fi, _, err := rs.proofs.Look().Stat(p)
	switch {
	case errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR):
		rs.fsUsed += fsCall
		return false
	case err != nil || !fi.Mode().IsRegular() || fi.Size() > maxIgnoreBytes:
		return true
	}
	if rs.fsUsed += fsCall * (1 + int(fi.Size()>>12)); rs.fsUsed > maxCheckFS {
		return true
	}
	f, err := rs.proofs.Look().OpenFile(p, syscall.O_NONBLOCK)
	if err != nil {
		return true
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxIgnoreBytes+1))
	if err != nil || len(b) > maxIgnoreBytes {
		return true
	}
	for _, line := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(strings.TrimLeft(line, " \t\r\ufeff"), "!") {
			return true
		}
	}
	return false
}

// inGitDir reports whether a component of p is a repository's .git
// directory (folded: on a case-insensitive file system .GIT is .git).
func inGitDir(p string) bool {
	for _, c := range strings.Split(p, "/") {
		if knowledge.Fold(c) == ".git" {
			return true
		}
	}
	return false
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

// grepWhitelist reads the filters of Claude Code's Grep, which runs
// ripgrep: its glob goes to rg --glob (split at blanks, and maybe at
// commas outside braces: every reading counts) and its type to rg --type.
// A glob that is not an exclusion, or a type, whitelists: ripgrep then
// searches the hidden files and directories it matches. names are the
// file names the globs and the type keep (the base names the globs' last
// components match, braces expanded; a common type's globs), nil when a
// glob's last component or the type does not say.
func grepWhitelist(in map[string]any) (whitelist bool, names []string) {
	g, _ := in["glob"].(string)
	var globs []string
	for _, f := range append([]string{g}, strings.Fields(g)...) {
		globs = append(globs, f)
		if !strings.ContainsAny(f, "{}") {
			globs = append(globs, strings.Split(f, ",")...)
		}
	}
	ok := true
	for _, f := range globs {
		if f == "" || strings.HasPrefix(f, "!") {
			continue
		}
		whitelist = true
		alts, expanded := knowledge.ExpandBraces(f, 64)
		ok = ok && expanded
		for _, a := range alts {
			b := path.Base(a)
			ok = ok && !strings.HasSuffix(a, "/") && !strings.Contains(b, "**") && b != "." && b != "/"
			names = append(names, b)
		}
	}
	if t, _ := in["type"].(string); t != "" {
		// A type is a whitelist of its globs, known for ripgrep's
		// common types only.
		globs, known := shell.RipgrepTypeGlobs(t)
		whitelist, ok = true, ok && known
		names = append(names, globs...)
	}
	if !whitelist || !ok {
		return whitelist, nil
	}
	return true, names
}

// contentSearch reports whether a search tool reads file content
// recursively, whether it includes hidden files and whether it follows
// links. Claude Code's Grep runs ripgrep with its defaults, which skip
// hidden files and do not follow links; the others are taken to read
// everything.
func contentSearch(name string) (content, hidden, follow bool) {
	switch name {
	case "Grep":
		return true, false, false
	case "grep", "grep_search", "search_file_content":
		return true, true, true
	}
	return false, false, false
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

func orRoot(dir string) string {
	if dir == "" {
		return "/"
	}
	return dir
}
