package shell

import (
	"slices"
	"strings"
)

// Git options. Left out on purpose: the global -c, --config-env,
// -p/--paginate and --exec-path (they change what runs), and --output
// (writes), --ext-diff and --textconv (run configured programs),
// --show-signature (runs gpg), grep -O (runs a pager), --alternate-refs
// (runs core.alternateRefsCommand).
const (
	gitDiffOpts = "p u s z w b a R D W t U:: M:: C:: B:: X:: l: S: G: O: I: patch no-patch unified: output-indicator-new: " +
		"output-indicator-old: output-indicator-context: raw patch-with-raw indent-heuristic no-indent-heuristic minimal patience " +
		"histogram anchored: diff-algorithm: stat:: stat-width: stat-name-width: stat-graph-width: stat-count: compact-summary " +
		"numstat shortstat dirstat:: cumulative dirstat-by-file:: summary patch-with-stat name-only name-status submodule:: color:: " +
		"no-color color-moved:: no-color-moved color-moved-ws: no-color-moved-ws word-diff:: word-diff-regex: color-words:: " +
		"no-renames rename-empty no-rename-empty check ws-error-highlight: full-index binary abbrev:: no-abbrev break-rewrites:: " +
		"find-renames:: find-copies:: find-copies-harder irreversible-delete diff-filter: find-object: pickaxe-all pickaxe-regex " +
		"skip-to: rotate-to: relative:: no-relative text ignore-cr-at-eol ignore-space-at-eol ignore-space-change " +
		"ignore-all-space ignore-blank-lines ignore-matching-lines: inter-hunk-context: function-context exit-code quiet " +
		"no-ext-diff no-textconv ignore-submodules:: src-prefix: dst-prefix: no-prefix default-prefix line-prefix: " +
		"ita-invisible-in-index ita-visible-in-index # "
	gitLogOpts = "n: g m c r i E F P L: max-count: skip: since: after: until: before: author: committer: grep: grep-reflog: " +
		"all-match invert-grep regexp-ignore-case basic-regexp extended-regexp fixed-strings perl-regexp remove-empty merges " +
		"no-merges min-parents: max-parents: no-min-parents no-max-parents first-parent exclude-first-parent-only not all " +
		"branches:: tags:: remotes:: glob: exclude: exclude-hidden: reflog single-worktree ignore-missing bisect " +
		"cherry-mark cherry-pick left-only right-only cherry walk-reflogs merge boundary simplify-by-decoration full-history " +
		"dense sparse simplify-merges ancestry-path:: show-pulls topo-order date-order author-date-order reverse no-walk:: " +
		"do-walk format: pretty:: oneline encoding: expand-tabs:: no-expand-tabs notes:: no-notes show-notes:: standard-notes " +
		"abbrev-commit no-abbrev-commit relative-date date: parents children left-right graph show-linear-break:: decorate:: " +
		"no-decorate decorate-refs: decorate-refs-exclude: clear-decorations source mailmap use-mailmap no-mailmap " +
		"no-use-mailmap full-diff log-size follow cc dd diff-merges: no-diff-merges combined-all-paths root since-as-filter: " +
		"count objects objects-edge no-object-names "
)

// gitSubmoduleEnum: --submodule=diff prints the content of the
// submodules' files, which live in other repositories.
const gitSubmoduleEnum = "submodule=short|log"

// --output writes its file: refused, but reported so that allow rules
// (Bash(git log *)) cannot open a write outside the project.
var gitLog = &spec{opts: gitDiffOpts + gitLogOpts, writeOpts: "output:", reads: readCustom, enums: gitSubmoduleEnum, check: func(iv *invocation) string {
	if why := gitPrettyOpts(iv); why != "" {
		return why
	}
	gitObjectReads(iv)
	iv.files = append(iv.files, lineLogFiles(iv.pa.values("L"))...)
	// git show prints each commit's patch unless told not to; log,
	// rev-list and reflog show print patches only when asked.
	// -L prints the lines of its file through every rename in its
	// history, under names it was never given.
	content := gitPatch(iv) || iv.pa.has("L") || iv.name == "git show" && !gitNoPatch(iv)
	g := Git{Scope: gitScopeIf(content, GitHistory)}
	if g.Scope == GitNoContent && iv.name == "git show" {
		g.Scope = GitNamed // a blob is shown whole, whatever the options
	}
	return gitUse(iv, g)
}}

// gitPatchOpts make diff-like output print the content of files: among
// the options gitDiffOpts and gitLogOpts allow, every one git's
// diff-options say implies --patch (or prints lines, as --check does).
var gitPatchOpts = []string{"p", "u", "U", "unified", "patch", "patch-with-stat", "patch-with-raw", "W", "function-context",
	"inter-hunk-context", "word-diff", "word-diff-regex", "color-words", "cc", "c", "dd", "binary", "check"}

// gitNoPatchOpts replace a diff's patch with names, counts or nothing.
var gitNoPatchOpts = []string{"s", "no-patch", "stat", "numstat", "shortstat", "name-only", "name-status", "dirstat",
	"dirstat-by-file", "summary", "raw", "compact-summary", "quiet"}

// gitPatch reports whether the command is told to print patches.
func gitPatch(iv *invocation) bool {
	if iv.pa.has(gitPatchOpts...) {
		return true
	}
	for _, v := range iv.pa.values("diff-merges") {
		if v != "off" && v != "none" {
			return true // combined and remerge diffs are patches
		}
	}
	return false
}

// gitNoPatch reports whether a command that prints patches by default
// (diff, show) is told to print something else instead.
func gitNoPatch(iv *invocation) bool { return iv.pa.has(gitNoPatchOpts...) && !gitPatch(iv) }

func gitScopeIf(content bool, s GitScope) GitScope {
	if content {
		return s
	}
	return GitNoContent
}

// gitUse records what a git command may print beyond its operands: the
// operands that may name objects, and the literal pathspecs after "--"
// that limit the files printed. Names known only at run time (xargs git
// show) may name anything, so content from them is refused.
func gitUse(iv *invocation, g Git) string {
	ops := iv.pa.ops
	before := len(ops)
	if iv.pa.sawDD {
		before = iv.pa.beforeDD
	}
	for _, op := range ops[:before] {
		if op.dyn && g.Scope != GitNoContent {
			return iv.failf("%s may name any object, whose files are not judged", op.val)
		}
		if !op.dyn {
			g.Names = append(g.Names, op.val)
		}
	}
	// --follow and -L follow a file through renames, --full-diff prints
	// whole commits: what is printed is not limited by the pathspecs.
	widened := iv.pa.has("follow", "full-diff", "L")
	if iv.pa.sawDD && g.Scope != GitNoContent && !widened {
		g.Pathspecs = literalPathspecs(ops[before:])
		g.FoldPathspecs = iv.outer != nil && iv.outer.pa.has("icase-pathspecs")
	}
	iv.a.out.Git = append(iv.a.out.Git, g)
	return ""
}

// literalPathspecs returns the pathspecs as the paths they limit output
// to, or nil (no limit) when any is not a plain path: a glob, magic or a
// run-time word may match anything.
func literalPathspecs(ops []wordInfo) []string {
	var out []string
	for _, op := range ops {
		// An absolute pathspec names the tree from /, which toolgate
		// does not compare with the repository's paths: no limit.
		if op.dyn || op.glob || strings.ContainsAny(op.val, gitGlobSpecial) || strings.HasPrefix(op.val, ":") || strings.HasPrefix(op.val, "/") {
			return nil
		}
		out = append(out, op.val)
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// lineLogFiles returns the files git log -L RANGE:FILE and -L
// :FUNCNAME:FILE print lines of. Where the range ends depends on its
// syntax (a /regex/ may hold a colon), so every text after a colon is
// taken for the file.
func lineLogFiles(vals []string) []wordInfo {
	var out []wordInfo
	for _, v := range vals {
		for i := 0; i < len(v); i++ {
			if v[i] == ':' && i+1 < len(v) {
				out = append(out, wordInfo{val: v[i+1:], cred: v[i+1:], glob: hasGlobMeta(v[i+1:])})
			}
		}
	}
	return out
}

var gitSpec = &spec{
	names:     "git",
	style:     styleSub,
	toolchain: ToolchainGit,
	opts: "C: P no-pager bare no-replace-objects literal-pathspecs glob-pathspecs noglob-pathspecs icase-pathspecs " +
		"no-optional-locks no-lazy-fetch no-advice git-dir: work-tree: namespace: version",
	check: func(iv *invocation) string {
		if iv.pa.has("version") {
			return ""
		}
		return iv.failf("needs a subcommand")
	},
	subs: map[string]*spec{
		"status": {opts: "s b v u:: z short branch porcelain:: long verbose show-stash ahead-behind no-ahead-behind " +
			"untracked-files:: ignored:: ignore-submodules:: column:: no-column renames no-renames find-renames::",
			check: func(iv *invocation) string { return gitUse(iv, Git{Recurses: true}) }},
		"log":      gitLog,
		"show":     gitLog,
		"rev-list": gitLog,
		// --no-index compares files outside the repository: not listed.
		// A diff of the working tree prints what the index tracks;
		// revisions or --cached reach into history.
		"diff": {opts: gitDiffOpts + "cached staged merge-base base ours theirs", writeOpts: "output:", reads: readCustom,
			enums: gitSubmoduleEnum, check: func(iv *invocation) string {
				gitObjectReads(iv)
				scope := GitIndex
				if iv.pa.beforeDD > 0 || !iv.pa.sawDD && len(iv.pa.ops) > 0 || iv.pa.has("cached", "staged", "merge-base") {
					scope = GitHistory
				}
				return gitUse(iv, Git{Scope: gitScopeIf(!gitNoPatch(iv), scope), Recurses: true})
			}},
		// blame prints its file, and error messages print the lines of
		// the files -S and --ignore-revs-file name: all are reads.
		"blame": {opts: "b f n p c l t s e w M:: C:: L: S: root show-stats score-debug show-name show-number porcelain " +
			"line-porcelain incremental show-email reverse first-parent date: abbrev:: ignore-rev: ignore-revs-file: " +
			"color-lines color-by-age progress no-progress encoding: minimal", reads: readCustom, check: func(iv *invocation) string {
			iv.files = gitPaths(iv.pa.ops)
			for _, f := range iv.pa.values("S", "ignore-revs-file") {
				iv.files = append(iv.files, synthetic(f))
			}
			return ""
		}},
		// Listing only: a positional names a branch to create unless --list.
		"branch": {opts: "a r v l q i all remotes verbose list show-current contains~ no-contains~ merged~ no-merged~ " +
			"points-at: sort: format: color:: no-color column:: no-column abbrev:: no-abbrev ignore-case omit-empty quiet",
			check: func(iv *invocation) string { return gitChecks(iv, listOnly, gitAtomOpts) }},
		"tag": {opts: "l n:: i list sort: format: contains~ no-contains~ merged~ no-merged~ points-at: color:: column:: " +
			"no-column ignore-case omit-empty", check: func(iv *invocation) string { return gitChecks(iv, listOnly, gitAtomOpts) }},
		// remote show and update contact the remote: only listing and get-url.
		"remote": {opts: "v verbose push all", check: func(iv *invocation) string {
			ops := iv.pa.ops
			switch {
			case len(ops) == 0 && !iv.pa.has("v", "verbose"):
				return "" // names only
			case len(ops) == 0 || len(ops) == 2 && ops[0].is("get-url"):
				iv.a.out.Git = append(iv.a.out.Git, Git{Remotes: true})
				return ""
			}
			return iv.failf("only listing and get-url are read-only")
		}},
		"config": {opts: "get get-all get-regexp get-urlmatch list l show-origin show-scope global local system worktree " +
			"f: file: blob: name-only null z type: bool int bool-or-int path expiry-date includes no-includes default: " +
			"fixed-value all regexp value: url:", check: checkGitConfig},
		"rev-parse": {opts: "q verify quiet sq not short:: abbrev-ref:: symbolic symbolic-full-name all branches:: tags:: " +
			"remotes:: glob: exclude: exclude-hidden: disambiguate: local-env-vars path-format: git-dir git-common-dir " +
			"absolute-git-dir show-toplevel show-prefix show-cdup show-superproject-working-tree show-object-format:: " +
			"show-ref-format is-inside-git-dir is-inside-work-tree is-bare-repository is-shallow-repository resolve-git-dir: " +
			"git-path: shared-index-path since: after: until: before: default: prefix: end-of-options flags no-flags " +
			"revs-only no-revs"},
		"ls-files": {opts: "c d m o i s u k z t v f cached deleted modified others ignored stage unmerged killed directory " +
			"no-empty-directory x: exclude: X: exclude-from: exclude-per-directory: exclude-standard error-unmatch full-name " +
			"recurse-submodules abbrev:: format: debug eol sparse deduplicate with-tree: resolve-undo", check: func(iv *invocation) string {
			if why := gitAtomOpts(iv); why != "" {
				return why
			}
			// --recurse-submodules runs git in each submodule's repository.
			return gitUse(iv, Git{Recurses: iv.pa.has("recurse-submodules")})
		}},
		"ls-tree": {opts: "d r t l z long name-only name-status object-only full-name full-tree abbrev:: format:", check: gitAtomOpts},
		// --textconv and --filters run configured programs.
		// --batch reads object names from stdin and prints their content.
		"cat-file": {opts: "t s e p batch-check:: follow-symlinks unordered buffer Z " +
			"allow-unknown-type mailmap use-mailmap no-mailmap", ops: "0-2", reads: readCustom,
			check: func(iv *invocation) string {
				if why := gitChecks(iv, gitAtomOpts, gitObjectReads); why != "" {
					return why
				}
				// -p, or TYPE OBJECT, prints the object's content.
				content := iv.pa.has("p") || len(iv.pa.ops) == 2
				return gitUse(iv, Git{Scope: gitScopeIf(content, GitHistory)})
			}},
		"describe": {opts: "tags all long abbrev: always dirty:: broken:: match: exclude: contains first-parent candidates: " +
			"exact-match debug"},
		"shortlog": {opts: "n s e c w:: numbered summary email committer group: format: all no-merges merges since: until: " +
			"after: before: author: grep: max-count: first-parent reverse branches:: tags:: remotes:: not", check: gitPrettyOpts},
		"reflog": {style: styleSub, check: func(iv *invocation) string {
			if len(iv.args) == 0 {
				return ""
			}
			return iv.failf("only plain listing is read-only")
		}, subs: map[string]*spec{"show": gitLog, "list": {ops: "0"}, "exists": {ops: "1"}}},
		"stash": {style: styleSub, subs: map[string]*spec{
			"list": gitLog,
			"show": {opts: gitDiffOpts + "include-untracked only-untracked", ops: "0-1", writeOpts: "output:", enums: gitSubmoduleEnum,
				check: func(iv *invocation) string { return gitUse(iv, Git{Scope: gitScopeIf(gitPatch(iv), GitHistory)}) }},
		}},
		"worktree": {style: styleSub, subs: map[string]*spec{"list": {opts: "porcelain v verbose z expire:", ops: "0"}}},
		// git submodule alone is status, which prints each submodule's
		// commit as git status looks into them; foreach runs commands,
		// update, sync, summary and the rest fetch or change state.
		"submodule": {style: styleSub, opts: "q quiet cached", check: func(iv *invocation) string { return gitUse(iv, Git{Recurses: true}) },
			subs: map[string]*spec{"status": {opts: "q quiet cached recursive",
				check: func(iv *invocation) string { return gitUse(iv, Git{Recurses: true}) }}}},
		"grep":          {opts: gitGrepOpts, reads: readCustom, check: gitGrepReads},
		"merge-base":    {opts: "a all octopus is-ancestor independent fork-point"},
		"name-rev":      {opts: "tags refs: exclude: all name-only no-undefined always annotate-stdin stdin"},
		"count-objects": {opts: "v H verbose human-readable", ops: "0"},
		"for-each-ref": {opts: "s p format: sort: count: points-at: merged~ no-merged~ contains~ no-contains~ shell perl " +
			"python tcl ignore-case omit-empty exclude: color::", check: gitAtomOpts},
		"check-ignore": {opts: "q v n z quiet verbose non-matching no-index stdin"},
		"version":      {opts: "build-options", ops: "0"},
		"show-ref":     {opts: "d s:: head tags branches heads dereference hash:: verify q quiet abbrev:: exists"},
		"symbolic-ref": {opts: "q quiet short no-recurse", ops: "1"},
	},
}

const gitGrepOpts = "n i w v l L c h H o q z I a E G F P W p r A: B: C: m: e: f: line-number ignore-case word-regexp " +
	"invert-match files-with-matches name-only files-without-match count extended-regexp basic-regexp fixed-strings " +
	"perl-regexp only-matching quiet null text cached untracked no-index exclude-standard no-exclude-standard " +
	"recurse-submodules full-name heading break after-context: before-context: context: max-depth: max-count: " +
	"function-context show-function column threads: and or not all-match color:: no-color no-textconv recursive " +
	"no-recursive #"

// listOnly: git branch/tag create a ref when given a name without --list.
func listOnly(iv *invocation) string {
	if len(iv.pa.ops) > 0 && !iv.pa.has("l", "list") {
		return iv.failf("%s creates a ref; only listing is read-only", iv.pa.ops[0].val)
	}
	return ""
}

// checkGitConfig allows the reading forms only: --get*, --list, and the
// get/list subcommands.
func checkGitConfig(iv *invocation) string {
	ops := iv.pa.ops
	n := len(ops)
	switch {
	case iv.pa.has("list", "l"):
		if n == 0 {
			return ""
		}
	case iv.pa.has("get", "get-all", "get-regexp", "get-urlmatch"):
		if n >= 1 && n <= 2 {
			return ""
		}
	case n >= 1 && ops[0].is("list"):
		if n == 1 {
			return ""
		}
	case n >= 1 && ops[0].is("get"):
		if n == 2 {
			return ""
		}
	}
	return iv.failf("only reading forms (--get, --list, get, list) are read-only")
}

// gitObjectReads records the files a git command may print: REV:path and
// :path name a file's committed or staged content (a committed .env is as
// secret as the file), and any other operand may be a pathspec whose diff
// is shown. Revisions recorded as paths are harmless: the engine judges
// the paths as reads, for secret files and Read rules.
func gitObjectReads(iv *invocation) string {
	iv.files = gitPaths(iv.pa.ops)
	return ""
}

// gitGrepReads: git grep prints lines of the files below its pathspecs
// (the working tree when there are none), tracked ones or, with
// --no-index or --untracked, any: each pathspec is a tree to judge; one
// that matches across directories (a glob or icase magic) the whole
// working tree, its pattern judged as a filter. An exclude (:!src is
// everything but src) keeps every other name, secret ones included: it is
// refused. An operand before "--"
// may be a revision, whose files are not on disk to judge, so paths must
// follow "--"; --cached searches the index and --recurse-submodules the
// submodules' repositories, neither of which is on disk to judge either.
// Pathspecs from the repository's top (:/x) may reach above the project.
func gitGrepReads(iv *invocation) string {
	switch {
	case iv.pa.has("cached"):
		return iv.failf("--cached searches the index, whose files are not on disk to judge")
	case iv.pa.has("recurse-submodules"):
		return iv.failf("--recurse-submodules searches the submodules' repositories")
	}
	ops := patternFirst(iv, "e", "f")
	before := len(ops)
	if iv.pa.sawDD {
		before = iv.pa.beforeDD - (len(iv.pa.ops) - len(ops))
	}
	if before > 0 {
		return iv.failf("grep: %s may name a revision, whose files are not on disk to judge; put paths after --", ops[0].val)
	}
	iv.files = patternFiles(iv, "f")
	icaseAll := iv.outer != nil && iv.outer.pa.has("icase-pathspecs")
	var roots []wordInfo
	for _, op := range ops {
		if op.dyn {
			continue // a path find or xargs hands over, judged by its lister
		}
		ps, why := parsePathspec(op.val)
		switch {
		case why != "":
			return iv.failf("%s", why)
		case ps.top:
			return iv.failf("pathspec %s starts at the repository's top, which may be above the project", op.val)
		case ps.exclude:
			// Everything but the path: a filter that keeps every other
			// name, secret ones included, refused like --include='*'
			// wherever the tree cannot be walked.
			return iv.failf("pathspec %s keeps every file but %s, secret ones included", op.val, ps.path)
		}
		p := wordInfo{val: ps.path, cred: ps.path, glob: op.glob, pos: -1, end: -1}
		if p.val == "" {
			p = synthetic(".")
		}
		if ps.icase || icaseAll || ps.glob || !ps.literal && (op.glob || strings.ContainsAny(ps.path, gitGlobSpecial)) {
			// Judged as a pattern too: it may pick secret files.
			p.glob = true
			iv.files = append(iv.files, p)
			p = synthetic(".")
		}
		roots = append(roots, p)
	}
	// git grep reads an assume-unchanged or skip-worktree file from the
	// index, where the tree on disk may not have it: the index's paths
	// are judged too.
	iv.a.out.Git = append(iv.a.out.Git, Git{Scope: GitIndex, Pathspecs: literalPathspecs(ops), FoldPathspecs: icaseAll})
	return iv.recursiveRoots(roots, Tree{Hidden: true, SkipDirs: []string{".git"}})
}

// gitGlobSpecial are the characters that make a git pathspec a wildcard
// pattern (git's is_glob_special): 'sr\c/a' matches src/a.
const gitGlobSpecial = "*?[\\"

// pathspec is a git pathspec with its magic read.
type pathspec struct {
	path                               string
	top, exclude, glob, icase, literal bool
}

// parsePathspec reads a pathspec's magic as git does: short magic after a
// leading colon (/ top, ! and ^ exclude), ended by a second colon or the
// first other character, or long magic in parentheses (:(top,exclude)x).
// Magic words other than top, exclude, glob, icase and literal (attr:,
// prefix:, anything unknown) are refused: git refuses what it does not
// know, and what attr: selects depends on attributes files.
func parsePathspec(s string) (pathspec, string) {
	var ps pathspec
	rest, magic := strings.CutPrefix(s, ":")
	if !magic {
		ps.path = s
		return ps, ""
	}
	if long, ok := strings.CutPrefix(rest, "("); ok {
		end := strings.IndexByte(long, ')')
		if end < 0 {
			return ps, "pathspec " + s + " has unterminated magic"
		}
		for _, m := range strings.Split(long[:end], ",") {
			switch m {
			case "top":
				ps.top = true
			case "exclude":
				ps.exclude = true
			case "glob":
				ps.glob = true
			case "icase":
				ps.icase = true
			case "literal":
				ps.literal = true
			default:
				return ps, "pathspec " + s + " has magic " + m + ", which is not known to be harmless"
			}
		}
		ps.path = long[end+1:]
		return ps, ""
	}
	i := 0
	for ; i < len(rest) && rest[i] != ':'; i++ {
		switch rest[i] {
		case '/':
			ps.top = true
			continue
		case '!', '^':
			ps.exclude = true
			continue
		}
		break
	}
	if i < len(rest) && rest[i] == ':' {
		i++
	}
	ps.path = rest[i:]
	return ps, ""
}

// gitPaths returns the files git operands may name, every reading of
// each: REV:path and :path name a committed or staged file (:N:path a
// staged one at stage N), and any operand may be a pathspec, with magic.
func gitPaths(ops []wordInfo) []wordInfo {
	var out []wordInfo
	add := func(op wordInfo, p string) {
		if p != "" && !slices.ContainsFunc(out, func(w wordInfo) bool { return w.val == p }) {
			out = append(out, wordInfo{val: p, cred: p, glob: op.glob || strings.Contains(op.val, "icase"), pos: -1, end: -1})
		}
	}
	for _, op := range ops {
		if op.dyn {
			continue
		}
		if ps, why := parsePathspec(op.val); why == "" {
			add(op, ps.path)
		}
		if i := strings.IndexByte(op.val, ':'); i >= 0 {
			obj := op.val[i+1:]
			add(op, obj)
			if len(obj) > 1 && obj[0] >= '0' && obj[0] <= '3' && obj[1] == ':' {
				add(op, obj[2:]) // :1:path, a merge stage
			}
		}
	}
	return out
}

// gitChecks runs checks in order and returns the first reason to refuse.
func gitChecks(iv *invocation, checks ...func(*invocation) string) string {
	for _, c := range checks {
		if why := c(iv); why != "" {
			return why
		}
	}
	return ""
}

// gitPrettyNames are git's built-in pretty formats. Any other name is a
// pretty.<name> alias from the configuration, which may hold anything.
var gitPrettyNames = map[string]bool{"oneline": true, "short": true, "medium": true, "full": true, "fuller": true,
	"reference": true, "email": true, "mboxrd": true, "raw": true}

// gitPrettyOpts checks the --pretty and --format values of log-like
// commands: built-in names, or format strings whose placeholders are all
// known and harmless. %G placeholders verify signatures, which runs gpg
// (gpg.program may name any program).
func gitPrettyOpts(iv *invocation) string {
	for _, v := range iv.pa.values("pretty", "format") {
		f, isFormat := strings.CutPrefix(v, "format:")
		if !isFormat {
			f, isFormat = strings.CutPrefix(v, "tformat:")
		}
		switch {
		case isFormat || strings.Contains(v, "%"):
			if why := gitPrettyFormat(f); why != "" {
				return iv.failf("format %q: %s", v, why)
			}
		case v != "" && !gitPrettyNames[v]:
			return iv.failf("format %q may be an alias from the configuration", v)
		}
	}
	return ""
}

// gitPrettyFormat checks the placeholders of a pretty format string.
func gitPrettyFormat(f string) string {
	for i := 0; i < len(f); i++ {
		if f[i] != '%' {
			continue
		}
		i++
		if i < len(f) && (f[i] == '+' || f[i] == '-' || f[i] == ' ') {
			i++ // line-feed modifiers
		}
		if i >= len(f) {
			return "a lone %"
		}
		switch c := f[i]; {
		case strings.IndexByte("%nHhTtPpdDSesfbBNm", c) >= 0:
		case c == 'a' || c == 'c':
			if i+1 >= len(f) || strings.IndexByte("nNeElLdDrtiIsh", f[i+1]) < 0 {
				return "unknown placeholder %" + f[i:min(i+2, len(f))]
			}
			i++
		case c == 'g':
			if i+1 >= len(f) || strings.IndexByte("DdnNeEs", f[i+1]) < 0 {
				return "unknown placeholder %" + f[i:min(i+2, len(f))]
			}
			i++
		case c == 'G':
			return "%G placeholders verify signatures, which runs gpg"
		case c == 'x':
			if i+2 >= len(f) || !isHex(f[i+1]) || !isHex(f[i+2]) {
				return "%x needs two hex digits"
			}
			i += 2
		case c == 'C':
			// %Cred, %Cgreen, %Cblue, %Creset, %C(spec).
			rest := f[i+1:]
			if strings.HasPrefix(rest, "(") {
				j := strings.IndexByte(rest, ')')
				if j < 0 {
					return "unterminated %C("
				}
				i += 1 + j
				break
			}
			n := 0
			for _, color := range []string{"reset", "red", "green", "blue"} {
				if strings.HasPrefix(rest, color) {
					n = len(color)
					break
				}
			}
			if n == 0 {
				return "unknown color %C" + rest[:min(len(rest), 5)]
			}
			i += n
		case c == 'w' || c == '<' || c == '>':
			// %w(...), %<(N), %<|(N), %>(N), %>>(N), %><(N), %>|(N).
			j := strings.IndexByte(f[i:], '(')
			k := strings.IndexByte(f[i:], ')')
			if j < 0 || k < j || j > 3 || strings.Trim(f[i+1:i+j], "<>|") != "" {
				return "malformed %" + string(c) + " placeholder"
			}
			i += k
		case c == '(':
			k := strings.IndexByte(f[i:], ')')
			if k < 0 {
				return "unterminated %("
			}
			name, _, _ := strings.Cut(f[i+1:i+k], ":")
			if name != "describe" && name != "trailers" && name != "decorate" {
				return "unknown placeholder %(" + name + ")"
			}
			i += k
		default:
			return "unknown placeholder %" + string(c)
		}
	}
	return ""
}

func isHex(c byte) bool { return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F' }

// gitAtoms are the %(atom) names of for-each-ref, branch, tag,
// ls-files, ls-tree and cat-file formats that only print what git
// stores. %(signature) verifies signatures, which runs gpg.
var gitAtoms = map[string]bool{
	"refname": true, "objecttype": true, "objectsize": true, "objectname": true, "deltabase": true, "tree": true,
	"parent": true, "numparent": true, "object": true, "type": true, "tag": true, "author": true, "authorname": true,
	"authoremail": true, "authordate": true, "committer": true, "committername": true, "committeremail": true,
	"committerdate": true, "tagger": true, "taggername": true, "taggeremail": true, "taggerdate": true, "creator": true,
	"creatordate": true, "describe": true, "subject": true, "body": true, "trailers": true, "contents": true, "raw": true,
	"upstream": true, "push": true, "HEAD": true, "color": true, "align": true, "end": true, "if": true, "then": true,
	"else": true, "worktreepath": true, "symref": true, "ahead-behind": true, "is-base": true, "rest": true,
	"objectmode": true, "path": true, "stage": true, "eolinfo": true, "eolattr": true,
}

// gitObjectAtoms print what the object a ref names holds.
var gitObjectAtoms = map[string]bool{"raw": true, "contents": true, "subject": true, "body": true, "trailers": true}

// gitAtomOpts checks --format (and cat-file's --batch-check) values:
// %(atom) names from gitAtoms, %% and %xx.
func gitAtomOpts(iv *invocation) string {
	refObjects := false
	for _, v := range iv.pa.values("format", "batch-check") {
		for i := 0; i < len(v); i++ {
			if v[i] != '%' {
				continue
			}
			i++
			switch {
			case i < len(v) && v[i] == '%':
			case i+1 < len(v) && isHex(v[i]) && isHex(v[i+1]):
				i++
			case i < len(v) && v[i] == '(':
				k := strings.IndexByte(v[i:], ')')
				if k < 0 {
					return iv.failf("format %q: unterminated %%(", v)
				}
				name, _, _ := strings.Cut(strings.TrimPrefix(v[i+1:i+k], "*"), ":")
				if !gitAtoms[name] {
					return iv.failf("format %q: %%(%s) is not a known harmless atom", v, name)
				}
				if gitObjectAtoms[name] && !refObjects {
					// A ref may name a blob, whose content these print.
					refObjects = true
					iv.a.out.Git = append(iv.a.out.Git, Git{RefObjects: true})
				}
				i += k
			default:
				return iv.failf("format %q: unknown placeholder", v)
			}
		}
	}
	return ""
}
