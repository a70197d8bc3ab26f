package engine

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/toolgate/toolgate/engine/gitrepo"
	"github.com/toolgate/toolgate/engine/knowledge"
	"github.com/toolgate/toolgate/engine/pathcheck"
	"github.com/toolgate/toolgate/engine/shell"
)

// gitProof checks, on disk, what the git commands of a read-only line
// obey and print, and says why they are not proven safe ("" when they
// are). git runs the programs its configuration names (core.fsmonitor on
// status, core.alternateRefsCommand, filters, pagers), so the repository
// it uses is found the way git finds it and:
//   - it must not be one the project's own files make up (a bare
//     repository or a gitdir outside any .git directory, built from files
//     an accepted edit may have written);
//   - every key of every config file git reads for it must be inert
//     (knowledge.GitConfigInert), and the hooks read-only commands fire
//     must be absent;
//   - the files whose content a command may print without naming them
//     (tracked files, every file in its reachable history) must not be
//     secret-shaped, unless its pathspecs leave them out;
//   - remote URLs it prints must carry no credentials.
//
// dir is where the line runs, as given; at is where git runs in it, as
// a static cd left it (relative to dir, or absolute). git runs in the
// project only: elsewhere it prints another repository's files, reads
// outside the read roots.
func (rs *readScope) gitProof(dir, at string, uses []shell.Git) string {
	if dir == "" && !filepath.IsAbs(at) {
		return "runs git with no working directory to find its repository in"
	}
	start := expandHome(at, rs.home)
	if !filepath.IsAbs(start) {
		start = filepath.Join(dir, start)
	}
	if !filepath.IsAbs(start) {
		return gitElsewhere
	}
	resolved, err := rs.proofs.Resolve("/", start)
	var repo *gitrepo.Repo
	if err == nil {
		if !rs.inProject(resolved) {
			return gitElsewhere
		}
		repo, err = gitrepo.DiscoverWith(rs.proofs.Look(), resolved)
		if err != nil && !errors.Is(err, gitrepo.ErrNoDirectory) {
			return "cannot tell which repository git uses: " + truncate(err.Error(), 200)
		}
	}
	if fe := (*pathcheck.ForeignError)(nil); errors.As(err, &fe) || pathcheck.IsUnseen(err) {
		// On this machine, on a file system whose repository cannot be
		// read for a proof (its config may run programs).
		return "cannot tell which repository git uses: " + truncate(err.Error(), 200)
	}
	if err != nil {
		// Not on this machine's disk: the project's own directory is
		// judged as written, as every path of it is; anywhere else git
		// may find any repository.
		if len(rs.dirs) > 0 && filepath.Clean(start) == filepath.Clean(rs.dirs[0]) {
			return ""
		}
		return "runs git in " + truncate(start, 200) + ", which is not on this machine's disk to read"
	}
	if repo == nil {
		if rs.home == "" {
			return "git reads the user's configuration, and the user's home directory is not known"
		}
		return rs.gitSettings(nil, false)
	}
	if why := rs.projectMade(repo); why != "" {
		return why
	}
	remotes := false
	for _, u := range uses {
		remotes = remotes || u.Remotes
	}
	if why := rs.gitSettings(repo, remotes); why != "" {
		return why
	}
	prefix := ""
	if repo.WorkTree != "" {
		if rel, err := filepath.Rel(repo.WorkTree, resolved); err == nil && rel != "." {
			prefix = rel
		}
	}
	return rs.gitOutput(repo, prefix, uses)
}

// projectMade says why repo is one the project's own files make up: its
// git directory (or common directory) lies inside a project directory but
// not inside a .git directory, whose files no accepted edit may write.
func (rs *readScope) projectMade(repo *gitrepo.Repo) string {
	for _, d := range []string{repo.GitDir, repo.CommonDir} {
		for _, p := range rs.projectDirs() {
			rel, err := filepath.Rel(p, d)
			if err != nil || rel == ".." || strings.HasPrefix(rel, "../") {
				continue
			}
			if !hasDotGit(rel) {
				return fmt.Sprintf("git would use %s as its repository, made of the project's own files", truncate(d, 200))
			}
		}
	}
	return ""
}

func hasDotGit(rel string) bool {
	for _, c := range strings.Split(rel, "/") {
		if knowledge.Fold(c) == ".git" {
			return true
		}
	}
	return false
}

// gitSettings checks every setting git reads for repo (nil: the user's
// and system's only) against the inert allowlist, judges the files named
// by settings as reads, looks for the hooks read-only commands fire, and,
// when the command prints remote URLs, checks them for credentials.
func (rs *readScope) gitSettings(repo *gitrepo.Repo, remotes bool) string {
	settings, err := gitrepo.ConfigWith(rs.proofs.Look(), repo, rs.home)
	if err != nil {
		return "cannot read git's configuration: " + truncate(err.Error(), 200)
	}
	var hookDirs []string
	if repo != nil {
		hookDirs = append(hookDirs, filepath.Join(repo.CommonDir, "hooks"))
	}
	for _, s := range settings {
		name := strings.ToLower(s.Section) + "." + strings.ToLower(s.Key)
		lsec := strings.ToLower(s.Section)
		switch {
		case strings.EqualFold(s.Key, "path") && (lsec == "include" && s.Sub == "" || lsec == "includeif"):
			continue // followed by gitrepo.Config
		case !knowledge.GitConfigInert(s.Section, s.Sub, s.Key, s.Value):
			return fmt.Sprintf("git obeys %s, set in %s, which is not known to be inert", settingName(s), truncate(s.File, 200))
		}
		switch {
		case s.Sub == "" && knowledge.GitReadKeys[name]:
			if why := rs.judge(filepath.Dir(s.File), s.Value); why != "" {
				return fmt.Sprintf("git reads %s (%s): %s", truncate(s.Value, 200), s.Name(), why)
			}
		case s.Sub == "" && name == "core.hookspath":
			p := expandHome(s.Value, rs.home)
			if !filepath.IsAbs(p) {
				if repo == nil || repo.WorkTree == "" {
					return "core.hooksPath is relative, and git runs hooks from where it runs"
				}
				p = filepath.Join(repo.WorkTree, p)
			}
			hookDirs = append(hookDirs, p)
		}
		if remotes && gitURLSetting(s) && knowledge.GitURLCarriesCredentials(gitURLOf(s)) {
			return fmt.Sprintf("prints remote URLs, and a URL set by %s in %s carries credentials", settingName(s), truncate(s.File, 200))
		}
	}
	for _, d := range hookDirs {
		ents, err := rs.proofs.Look().ReadDir(d)
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Sprintf("cannot list the hooks in %s", truncate(d, 200))
		}
		for _, e := range ents {
			if n := e.Name(); !strings.HasSuffix(n, ".sample") && !knowledge.GitHooksInert[n] {
				return fmt.Sprintf("the %s hook in %s may run on read-only git commands", truncate(n, 100), truncate(d, 200))
			}
		}
	}
	if remotes && repo != nil {
		// Remotes defined the old way, in files.
		for _, d := range []string{"remotes", "branches"} {
			ents, err := rs.proofs.Look().ReadDir(filepath.Join(repo.CommonDir, d))
			switch {
			case err != nil && !errors.Is(err, fs.ErrNotExist) && !errors.Is(err, syscall.ENOTDIR):
				return fmt.Sprintf("prints remote URLs, and the repository's %s/ cannot be listed (%v)", d, err)
			case len(ents) > 0:
				return "prints remote URLs, and the repository defines remotes in " + d + "/, which toolgate does not read"
			}
		}
	}
	return ""
}

// settingName names a setting for a reason, which reaches logs and the
// agent: a subsection that is a URL (url.<base>, http.<url>,
// credential.<url>) may carry a token, and is left out.
func settingName(s gitrepo.Setting) string {
	if strings.ContainsAny(s.Sub, ":@/") {
		return strings.ToLower(s.Section) + ".<url>." + strings.ToLower(s.Key)
	}
	return truncate(s.Name(), 100)
}

func gitURLSetting(s gitrepo.Setting) bool {
	sec, key := strings.ToLower(s.Section), strings.ToLower(s.Key)
	return sec == "remote" && (key == "url" || key == "pushurl") || sec == "url" && (key == "insteadof" || key == "pushinsteadof")
}

// gitURLOf is the URL a setting puts in remote listings: the value of
// remote.*.url, or the base a url.<base>.insteadOf rewrites to.
func gitURLOf(s gitrepo.Setting) string {
	if strings.EqualFold(s.Section, "url") {
		return s.Sub
	}
	return s.Value
}

// gitOutput checks what the git commands may print beyond the files they
// name: the tracked files (and, for history, every file in reachable
// commits) must not be secret-shaped below their pathspecs, and a command
// that runs git in the submodules' repositories needs there to be none.
//
// Pathspecs are relative to where git runs, prefix below the top of the
// working tree; the index and history name paths from the top.
func (rs *readScope) gitOutput(repo *gitrepo.Repo, prefix string, uses []shell.Git) string {
	secret := func(p string) bool { return knowledge.SecretPath(p, "") }
	// The index is read, and the history walked, once for all the uses:
	// the walk starts from every name any of them gives.
	var (
		index, history *gitrepo.Matches
		names          []string
		refObjects     bool
	)
	for _, u := range uses {
		refObjects = refObjects || u.RefObjects
		if u.Scope == shell.GitHistory {
			names = append(names, u.Names...)
		}
	}
	if refObjects {
		if why := gitrepo.RefsNameBlob(rs.ctx, repo); why != "" {
			return why
		}
	}
	for _, u := range uses {
		if u.Scope == shell.GitNoContent && !u.Recurses {
			continue
		}
		if index == nil {
			m, err := gitrepo.IndexPaths(repo, secret)
			if err != nil {
				return "cannot read the repository's index: " + truncate(err.Error(), 200)
			}
			index = &m
		}
		if u.Recurses && index.Submodules {
			return "git runs in the repository's submodules, whose configuration toolgate does not check"
		}
		switch u.Scope {
		case shell.GitNoContent:
			continue
		case shell.GitNamed:
			if why := gitrepo.NamedBlob(rs.ctx, repo, u.Names); why != "" {
				return why
			}
			continue
		}
		if prefix != "" && u.Pathspecs != nil {
			specs := make([]string, len(u.Pathspecs))
			for i, p := range u.Pathspecs {
				specs[i] = filepath.Join(prefix, p)
			}
			u.Pathspecs = specs
		}
		if why := printable(*index, u.Pathspecs, u.FoldPathspecs, "tracks"); why != "" {
			return why
		}
		if u.Scope != shell.GitHistory {
			continue
		}
		if history == nil {
			if why := rs.spend(fsCall*64, 0); why != "" {
				return why
			}
			m, err := gitrepo.HistoryPaths(rs.ctx, repo, names, secret)
			switch {
			case errors.Is(err, rs.ctx.Err()) && err != nil:
				return checkEnded
			case err != nil:
				return "cannot read the repository's history: " + truncate(err.Error(), 200)
			}
			history = &m
		}
		if history.Submodules && !gitLimited(u.Pathspecs) {
			return "the history holds submodules, whose files live in other repositories"
		}
		if why := printable(*history, u.Pathspecs, u.FoldPathspecs, "holds in its history"); why != "" {
			return why
		}
	}
	return ""
}

// printable says why git may print one of the secret paths: nothing
// limits the output, or a pathspec covers it. Paths that may stand for
// more than were kept are refused whatever the pathspecs.
func printable(m gitrepo.Matches, pathspecs []string, fold bool, where string) string {
	for _, s := range m.Paths {
		if !m.Complete() || !gitLimited(pathspecs) || slicesAnyCovers(pathspecs, s, fold) {
			return fmt.Sprintf("git may print %s, a secret-shaped file the repository %s", truncate(s, 200), where)
		}
	}
	return ""
}

func gitLimited(pathspecs []string) bool { return len(pathspecs) > 0 }

// slicesAnyCovers reports whether a pathspec (a path relative to the
// working directory, which is the repository's top here) is s, lies
// above it or below it (a secret directory covers its files).
//
// Under --icase-pathspecs both are compared folded.
func slicesAnyCovers(pathspecs []string, s string, fold bool) bool {
	if fold {
		s = knowledge.Fold(s)
	}
	for _, p := range pathspecs {
		p = filepath.Clean(p)
		if fold {
			p = knowledge.Fold(p)
		}
		if p == "." || p == s || strings.HasPrefix(s, p+"/") || strings.HasPrefix(p, s+"/") {
			return true
		}
	}
	return false
}
