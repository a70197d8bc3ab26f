package knowledge

import (
	"path"
	"strings"
)

// FileKinds is a set of what files are, told by their names: the files a
// default read root lets an agent read. A toolchain or cache tree is
// written by package managers, yet a live file lands in it now and then
// (a Node version's global npmrc, a virtualenv's pip.conf, a cached
// module's VCS checkout); judging by what a file is, not by refusing
// secret-shaped names, keeps the next such file out.
type FileKinds uint8

const (
	// Source is code, and the manifests and data published with it
	// (package.json, go.mod, Cargo.toml, .pom, METADATA).
	Source FileKinds = 1 << iota
	// Header is a C or C++ header.
	Header
	// Doc is documentation: text, Markdown, HTML, man and info pages,
	// README, LICENSE, changelogs; compressed ones too.
	Doc
	// Plain is a name without a dot, in a tree that holds only such
	// published files: C++ standard headers, licence texts.
	Plain
	// AnyFile: a root the project or the user vouches for.
	AnyFile FileKinds = 0
)

// ReadRoot is a default read root: a subtree of published files, and the
// kinds of file read locally inside it.
type ReadRoot struct {
	Path  string // absolute or ~/; a component may be a glob (python3.*)
	Kinds FileKinds
}

const code = Source | Header | Doc

// DefaultReadRoots are the directories outside a project that an agent may
// read locally: the subtrees of system and toolchain prefixes, and of
// dependency caches, that hold published source, headers and
// documentation, never a prefix's configuration (etc/, the root of a
// virtualenv or a Node version, a cache's VCS clones). A leading ~ is the
// agent user's home. Inside them only files of the root's kinds are read
// locally; a secret-shaped name is refused as anywhere.
var DefaultReadRoots = []ReadRoot{
	// System headers, manuals and documentation.
	{"/usr/include", Header | Plain | Doc}, {"/usr/local/include", Header | Plain | Doc},
	{"/usr/share/doc", Doc}, {"/usr/share/man", Doc}, {"/usr/share/info", Doc},
	{"/usr/share/licenses", Doc | Plain}, {"/usr/share/common-licenses", Doc | Plain},
	// Go toolchains (GOROOT): the standard library and its documentation,
	// not go.env or bin/.
	{"/usr/local/go/src", code}, {"/usr/local/go/doc", Doc}, {"/usr/local/go/misc", code},
	{"/usr/lib/go/src", code}, {"/usr/lib/go-*/src", code}, {"/usr/share/go/src", code},
	{"/usr/share/go-*/src", code}, {"/opt/go/src", code}, {"~/sdk/go*/src", code},
	// Python: the standard library and site-packages of system, pyenv and
	// uv interpreters, not a virtualenv's root (pip.conf, pyvenv.cfg).
	{"/usr/lib/python3", code}, {"/usr/lib/python3.*", code}, {"/usr/local/lib/python3.*", code},
	{"~/.local/lib/python3.*/site-packages", code},
	{"~/.pyenv/versions/*/lib/python3.*", code}, {"~/.pyenv/versions/*/include", Header | Doc},
	{"~/.local/share/uv/python/*/lib/python3.*", code}, {"~/.local/share/uv/python/*/include", Header | Doc},
	// Node: global packages, not a version's etc/npmrc.
	{"/usr/lib/node_modules", code}, {"/usr/local/lib/node_modules", code},
	{"~/.nvm/versions/node/*/lib/node_modules", code}, {"~/.nvm/versions/node/*/include", Header | Doc},
	// JDK headers and licences, Rust and Ruby standard libraries.
	{"/usr/lib/jvm/*/include", Header | Doc}, {"/usr/lib/jvm/*/legal", Doc | Plain},
	{"/usr/lib/rustlib/src", code}, {"~/.rustup/toolchains/*/lib/rustlib/src", code},
	{"~/.rustup/toolchains/*/share/doc", Doc}, {"/usr/lib/ruby", code},
	// Homebrew kegs: their headers and documentation.
	{"/opt/homebrew/Cellar/*/*/include", Header | Plain | Doc}, {"/opt/homebrew/Cellar/*/*/share/doc", Doc},
	{"/opt/homebrew/Cellar/*/*/share/man", Doc}, {"/usr/local/Cellar/*/*/include", Header | Plain | Doc},
	{"/usr/local/Cellar/*/*/share/doc", Doc}, {"/usr/local/Cellar/*/*/share/man", Doc},
	// Dependency caches of published source. Go module paths start with
	// a domain, so ~/go/pkg/mod/*.* leaves out cache/ (downloads and the
	// VCS clones of private modules, whose config may hold a token).
	{"~/go/pkg/mod/*.*", code}, {"~/.cargo/registry/src", code}, {"~/.cargo/git/checkouts", code},
	{"~/.m2/repository", Source | Doc}, {"~/.gradle/caches/modules-2/files-2.1", Source | Doc},
}

// Names of files and extensions, folded, by kind.
var (
	sourceExts = setOf("go", "s", "py", "pyi", "pyx", "pxd", "js", "mjs", "cjs", "ts", "mts", "cts", "tsx", "jsx",
		"rs", "java", "kt", "kts", "scala", "groovy", "gradle", "clj", "cljs", "cljc", "rb", "c", "cc", "cpp", "cxx",
		"c++", "m", "mm", "swift", "cs", "fs", "php", "pl", "pm", "lua", "ex", "exs", "erl", "hrl", "hs", "ml",
		"mli", "zig", "nim", "dart", "vue", "svelte", "sh", "bash", "zsh", "fish", "proto", "sql", "el", "lisp",
		"scm", "r", "jl", "f", "f90", "asm", "css", "scss", "sass", "less", "wat", "json", "jsonc",
		"json5", "toml", "yaml", "yml", "mod", "sum", "lock", "pom", "gemspec", "cabal", "bzl", "cmake", "mk",
		"tmpl", "gotmpl", "tpl", "golden", "typed", "pth")
	sourceNames = setOf("makefile", "gnumakefile", "dockerfile", "rakefile", "gemfile", "build", "workspace",
		"metadata", "pkg-info", "record", "wheel", "installer", "requested", "cmakelists.txt")
	headerExts = setOf("h", "hh", "hpp", "hxx", "h++", "inc", "inl", "ipp", "tcc", "tpp", "ixx", "modulemap")
	docExts    = setOf("md", "markdown", "mdx", "rst", "txt", "text", "adoc", "asciidoc", "org", "html", "htm",
		"xhtml", "texi", "texinfo", "info", "pod", "rdoc", "n", "man", "1", "2", "3", "4", "5", "6", "7", "8", "9")
	// docWords name documentation alone, before a dash or underscore
	// (LICENSE-MIT), or before a documentation extension or Debian's
	// suffix (README.Debian, changelog.Debian.gz, COPYING.LIB).
	docWords = []string{"readme", "license", "licence", "copying", "copyright", "notice", "authors", "changelog",
		"changes", "news", "history", "contributors", "thanks", "todo", "install", "patents", "credits",
		"maintainers", "code_of_conduct", "contributing", "security"}
	compressed = []string{".gz", ".bz2", ".xz", ".zst"}
)

func setOf(names ...string) map[string]bool {
	m := make(map[string]bool, len(names))
	for _, n := range names {
		m[n] = true
	}
	return m
}

// KindOf returns the kinds a file name is (none: 0).
func KindOf(name string) FileKinds {
	n := Fold(name)
	for _, z := range compressed {
		if s, ok := strings.CutSuffix(n, z); ok && s != "" {
			n = s
			break
		}
	}
	var k FileKinds
	if n == "" || n == "." || n == ".." {
		return 0
	}
	if docName(n) {
		k |= Doc
	}
	if sourceNames[n] {
		k |= Source
	}
	i := strings.LastIndexByte(n, '.')
	switch {
	case i < 0:
		return k | Plain
	case i == 0:
		return k // a hidden name (.npmrc) has no extension
	}
	ext := n[i+1:]
	if sourceExts[ext] {
		k |= Source
	}
	if headerExts[ext] {
		k |= Header
	}
	if docExts[ext] || manSection(ext) {
		k |= Doc
	}
	return k
}

// docName reports whether the folded name n is one of docWords' names.
func docName(n string) bool {
	for _, w := range docWords {
		rest, ok := strings.CutPrefix(n, w)
		switch {
		case !ok:
		case rest == "":
			return true
		case rest[0] == '-' || rest[0] == '_':
			if i := strings.LastIndexByte(rest, '.'); i < 0 || docExts[rest[i+1:]] {
				return true
			}
		case rest == ".debian" || rest == ".lib":
			return true
		}
	}
	return false
}

// manSection reports whether ext is a man page's section with a suffix:
// 3p, 1ssl, 3pm.
func manSection(ext string) bool {
	if len(ext) < 2 || ext[0] < '1' || ext[0] > '9' {
		return false
	}
	for _, c := range ext[1:] {
		if c < 'a' || c > 'z' {
			return false
		}
	}
	return true
}

// AgentTaskRoots are the directories where Claude Code writes the output
// of a project's background commands,
// $TMPDIR/claude-<uid>/<project>[/<session>]/tasks/<id>.output, which the
// agent reads back with Read (current versions have no other way): output
// of commands that were themselves checked, as a foreground command's
// output is. <project> is the working directory with every character but
// ASCII letters and digits made "-": only this project's outputs are
// roots, not other projects' or other users' that /tmp also holds. The
// default TMPDIR only (/tmp; macOS's is under /var/folders); a custom one
// goes in read_roots.
func AgentTaskRoots(cwd string) []string {
	if !strings.HasPrefix(cwd, "/") {
		return nil
	}
	slug := []byte(cwd)
	for i, c := range slug {
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9') {
			slug[i] = '-'
		}
	}
	var out []string
	for _, tmp := range []string{"/tmp", "/private/tmp", "/private/var/folders/*/*/T"} {
		base := tmp + "/claude-[0-9]*/" + string(slug)
		out = append(out, base+"/tasks", base+"/*/tasks")
	}
	return out
}

// InAgentTasks reports whether the resolved path p lies in one of
// AgentTaskRoots(cwd), its claude-<uid> directory named by digits only.
func InAgentTasks(p, cwd string) bool {
	if !strings.Contains(p, "/claude-") {
		return false // most reads outside the roots: no roots to compile
	}
	roots := AgentTaskRoots(cwd)
	if roots == nil || !CompileRoots(roots, "").Within(p) {
		return false
	}
	for _, c := range strings.Split(p, "/") {
		if uid, ok := strings.CutPrefix(c, "claude-"); ok {
			return uid != "" && strings.Trim(uid, "0123456789") == ""
		}
	}
	return false
}

// Roots is a compiled set of read roots.
type Roots struct{ list []compiledRoot }

type compiledRoot struct {
	comps []string
	kinds FileKinds
}

// CompileRoots compiles absolute roots (or ~/ ones, with home known; they
// are skipped when home is empty) in which any file is read. A root is
// matched component by component, case-sensitively: folding would widen a
// root, the unsafe side.
func CompileRoots(roots []string, home string) Roots {
	var rs Roots
	for _, r := range roots {
		rs.add(r, AnyFile, home)
	}
	return rs
}

// CompileReadRoots compiles DefaultReadRoots with a policy's own roots,
// in which any file is read.
func CompileReadRoots(extra []string, home string) Roots {
	var rs Roots
	for _, r := range DefaultReadRoots {
		rs.add(r.Path, r.Kinds, home)
	}
	for _, r := range extra {
		rs.add(r, AnyFile, home)
	}
	return rs
}

func (rs *Roots) add(r string, kinds FileKinds, home string) {
	if rest, ok := strings.CutPrefix(r, "~"); ok {
		if home == "" || (rest != "" && rest[0] != '/') {
			return
		}
		r = home + rest
	}
	if !path.IsAbs(r) {
		return
	}
	rs.list = append(rs.list, compiledRoot{comps: splitPath(path.Clean(r)), kinds: kinds})
}

// Within reports whether the absolute, resolved path p lies in (or is) one
// of the roots, whatever the kind of file it is.
func (rs Roots) Within(p string) bool {
	in, _ := rs.Place(p)
	return in
}

// Place reports whether the absolute, resolved path p lies in (or is) one
// of the roots, and which kinds of file are read there: AnyFile when a
// root containing it admits any, else the union of its roots' kinds.
func (rs Roots) Place(p string) (in bool, kinds FileKinds) {
	comps := splitPath(p)
	for _, root := range rs.list {
		if !root.holds(comps) {
			continue
		}
		if root.kinds == AnyFile {
			return true, AnyFile
		}
		in, kinds = true, kinds|root.kinds
	}
	return in, kinds
}

func (root compiledRoot) holds(comps []string) bool {
	if len(comps) < len(root.comps) {
		return false
	}
	for i, c := range root.comps {
		if c == comps[i] {
			continue
		}
		if m, supported := match(c, comps[i]); !m || !supported || comps[i] == ".." {
			return false
		}
	}
	return true
}

// Admits reports whether a file of this name, at path p inside a root of
// these kinds, is read locally: any file in a root of AnyFile; else a file
// of one of the kinds, never inside a .git directory (a checkout's
// config may hold a token, and its files are no published source).
func Admits(kinds FileKinds, p string) bool {
	if kinds == AnyFile {
		return true
	}
	for _, c := range strings.Split(p, "/") {
		if Fold(c) == ".git" {
			return false
		}
	}
	return KindOf(path.Base(p))&kinds != 0
}
