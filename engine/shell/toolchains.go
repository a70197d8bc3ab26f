package shell

// ToolchainFamily names a kind of program whose behaviour files in the
// directory it runs in, or above it, can change into fetching or running
// another toolchain. The shell analysis reads no file: it reports each
// such program (Analysis.Toolchains) and the engine reads those files.
type ToolchainFamily string

const (
	// ToolchainGo: the go command, which obeys go.work's and go.mod's go
	// and toolchain lines (GOTOOLCHAIN=auto downloads and runs a newer
	// toolchain).
	ToolchainGo ToolchainFamily = "go"
	// ToolchainRust: rustup's proxies (cargo, rustc), which install and
	// run the toolchain rust-toolchain(.toml) names.
	ToolchainRust ToolchainFamily = "rust"
	// ToolchainNode: node and npm, which version managers' shims pick
	// from the project's files (.nvmrc, package.json's volta and
	// packageManager) and npm configures from .npmrc.
	ToolchainNode ToolchainFamily = "node"
	// ToolchainPython: python, which version managers' shims pick from
	// .python-version and the like.
	ToolchainPython ToolchainFamily = "python"
	// ToolchainGit: git, which obeys the repository it discovers from
	// where it runs (its config, hooks and history; engine/gitproof.go).
	ToolchainGit ToolchainFamily = "git"
)

// Toolchain is one program the line runs whose behaviour depends on
// toolchain files (see ToolchainFamily).
type Toolchain struct {
	Family ToolchainFamily
	// Program is the command as named ("go version").
	Program string
	// Dir is where it runs, relative to the line's starting directory
	// ("." there) or absolute, as a static cd left it.
	Dir string
}

// toolchain records a program of the family run in sc's directory, or
// says why it cannot be judged: after a cd known only at run time, no
// one knows which files it obeys.
func (a *analyzer) toolchain(f ToolchainFamily, name string, sc *scope) string {
	if sc.cwdUnknown {
		return name + ": runs after cd to a directory known only at run time, whose files may name a toolchain to fetch"
	}
	// The cd may not have happened (it failed, or ran in another part
	// of a pipeline): both places count.
	for _, d := range sc.paths(".") {
		t := Toolchain{Family: f, Program: name, Dir: d}
		if len(a.out.Toolchains) < maxToolchains && !containsToolchain(a.out.Toolchains, t) {
			a.out.Toolchains = append(a.out.Toolchains, t)
		} else if len(a.out.Toolchains) >= maxToolchains {
			return name + ": too many toolchain programs in one line to judge"
		}
	}
	return ""
}

// maxToolchains bounds the programs a line reports: each costs the
// engine a walk up the directory tree.
const maxToolchains = 16

func containsToolchain(ts []Toolchain, t Toolchain) bool {
	for _, x := range ts {
		if x == t {
			return true
		}
	}
	return false
}
