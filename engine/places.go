package engine

import (
	"path/filepath"

	"github.com/toolgate/toolgate/engine/knowledge"
	"github.com/toolgate/toolgate/engine/shell"
)

// judgeShellPlaces returns why the places a shell command reads, judged
// from dir, are not proven safe, or "": where it runs (cwd, the project),
// the files and trees it reads and the names its searches keep, and the
// repository its git obeys. A read-only command is judged so when its
// facts are gathered; any other command only when an allow rule matches
// it (allowVeto), since a rule vouches for a command, not for what it
// reads.
func (e *Engine) judgeShellPlaces(rs *readScope, cwd, dir string, a *shell.Analysis) string {
	if cwd != "" && broadSearch(filepath.Clean(cwd), e.home) {
		return "the working directory is a home directory or above, where relative reads reach credential stores"
	}
	for _, r := range a.Reads {
		if why := rs.judge(dir, r); why != "" {
			return why
		}
	}
	for _, t := range a.Trees {
		if why := rs.judgeShellTree(dir, t); why != "" {
			return why
		}
		// The names a search keeps are a filter: one that picks secret
		// files reads them wherever they are, also where the tree walk
		// cannot look (a tree on another machine).
		for _, n := range t.Names {
			if knowledge.NamePicksSecret(n) {
				return "a file filter that can pick secret files: " + truncate(n, 200)
			}
		}
	}
	// Programs that files where they run can make fetch or run code
	// (toolchain.go).
	var gitDirs []string
	for _, t := range a.Toolchains {
		if t.Family == shell.ToolchainGit {
			gitDirs = append(gitDirs, t.Dir)
			continue
		}
		if why := rs.judgeToolchain(dir, t); why != "" {
			return why
		}
	}
	if why := exposure(a.Commands); why != "" {
		return why
	}
	if runsGit(a.Commands) && len(gitDirs) == 0 {
		return gitElsewhere // git the analysis did not place
	}
	for _, d := range gitDirs {
		if why := rs.gitProof(dir, d, a.Git); why != "" {
			return why
		}
	}
	return ""
}
