package shell

import "strings"

// Git options. Left out on purpose: the global -c, --config-env,
// -p/--paginate and --exec-path (they change what runs), and --output
// (writes), --ext-diff and --textconv (run configured programs),
// --show-signature (runs gpg), grep -O (runs a pager).
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
		"branches:: tags:: remotes:: glob: exclude: exclude-hidden: reflog alternate-refs single-worktree ignore-missing bisect " +
		"cherry-mark cherry-pick left-only right-only cherry walk-reflogs merge boundary simplify-by-decoration full-history " +
		"dense sparse simplify-merges ancestry-path:: show-pulls topo-order date-order author-date-order reverse no-walk:: " +
		"do-walk format: pretty:: oneline encoding: expand-tabs:: no-expand-tabs notes:: no-notes show-notes:: standard-notes " +
		"abbrev-commit no-abbrev-commit relative-date date: parents children left-right graph show-linear-break:: decorate:: " +
		"no-decorate decorate-refs: decorate-refs-exclude: clear-decorations source mailmap use-mailmap no-mailmap " +
		"no-use-mailmap full-diff log-size follow cc dd diff-merges: no-diff-merges combined-all-paths root since-as-filter: " +
		"count objects objects-edge no-object-names "
)

// --output writes its file: refused, but reported so that allow rules
// (Bash(git log *)) cannot open a write outside the project.
var gitLog = &spec{opts: gitDiffOpts + gitLogOpts, writeOpts: "output:", reads: readCustom, check: gitObjectReads}

var gitSpec = &spec{
	names: "git",
	style: styleSub,
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
			"untracked-files:: ignored:: ignore-submodules:: column:: no-column renames no-renames find-renames::"},
		"log":      gitLog,
		"show":     gitLog,
		"rev-list": gitLog,
		// --no-index compares files outside the repository: not listed.
		"diff": {opts: gitDiffOpts + "cached staged merge-base base ours theirs", writeOpts: "output:", reads: readCustom, check: gitObjectReads},
		"blame": {opts: "b f n p c l t s e w M:: C:: L: S: root show-stats score-debug show-name show-number porcelain " +
			"line-porcelain incremental show-email reverse first-parent date: abbrev:: ignore-rev: ignore-revs-file: " +
			"color-lines color-by-age progress no-progress encoding: minimal"},
		// Listing only: a positional names a branch to create unless --list.
		"branch": {opts: "a r v l q i all remotes verbose list show-current contains~ no-contains~ merged~ no-merged~ " +
			"points-at: sort: format: color:: no-color column:: no-column abbrev:: no-abbrev ignore-case omit-empty quiet",
			check: listOnly},
		"tag": {opts: "l n:: i list sort: format: contains~ no-contains~ merged~ no-merged~ points-at: color:: column:: " +
			"no-column ignore-case omit-empty", check: listOnly},
		// remote show and update contact the remote: only listing and get-url.
		"remote": {opts: "v verbose push all", check: func(iv *invocation) string {
			ops := iv.pa.ops
			if len(ops) == 0 || len(ops) == 2 && ops[0].is("get-url") {
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
			"recurse-submodules abbrev:: format: debug eol sparse deduplicate with-tree: resolve-undo"},
		"ls-tree": {opts: "d r t l z long name-only name-status object-only full-name full-tree abbrev:: format:"},
		// --textconv and --filters run configured programs.
		// --batch reads object names from stdin and prints their content.
		"cat-file": {opts: "t s e p batch-check:: follow-symlinks unordered buffer Z " +
			"allow-unknown-type mailmap use-mailmap no-mailmap", ops: "0-2", reads: readCustom, check: gitObjectReads},
		"describe": {opts: "tags all long abbrev: always dirty:: broken:: match: exclude: contains first-parent candidates: " +
			"exact-match debug"},
		"shortlog": {opts: "n s e c w:: numbered summary email committer group: format: all no-merges merges since: until: " +
			"after: before: author: grep: max-count: first-parent reverse branches:: tags:: remotes:: not"},
		"reflog": {style: styleSub, check: func(iv *invocation) string {
			if len(iv.args) == 0 {
				return ""
			}
			return iv.failf("only plain listing is read-only")
		}, subs: map[string]*spec{"show": gitLog, "list": {ops: "0"}, "exists": {ops: "1"}}},
		"stash": {style: styleSub, subs: map[string]*spec{
			"list": gitLog,
			"show": {opts: gitDiffOpts + "include-untracked only-untracked", ops: "0-1", writeOpts: "output:"},
		}},
		"worktree":      {style: styleSub, subs: map[string]*spec{"list": {opts: "porcelain v verbose z expire:", ops: "0"}}},
		"grep":          {opts: gitGrepOpts, reads: readCustom, check: gitGrepReads},
		"merge-base":    {opts: "a all octopus is-ancestor independent fork-point"},
		"name-rev":      {opts: "tags refs: exclude: all name-only no-undefined always annotate-stdin stdin"},
		"count-objects": {opts: "v H verbose human-readable", ops: "0"},
		"for-each-ref": {opts: "s p format: sort: count: points-at: merged~ no-merged~ contains~ no-contains~ shell perl " +
			"python tcl ignore-case omit-empty exclude: color::"},
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

// gitGrepReads is gitObjectReads for git grep, whose first operand is the
// pattern unless -e or -f gave it.
func gitGrepReads(iv *invocation) string {
	iv.files = gitPaths(patternFirst(iv, "e", "f"))
	return ""
}

func gitPaths(ops []wordInfo) []wordInfo {
	var out []wordInfo
	for _, op := range ops {
		if op.dyn {
			continue
		}
		p := op.val
		if i := strings.IndexByte(p, ':'); i >= 0 {
			p = p[i+1:]
		}
		// Pathspec magic: :(literal).env, :(top).env, :/.env, :!x.
		if strings.HasPrefix(p, "(") {
			if j := strings.IndexByte(p, ')'); j >= 0 {
				p = p[j+1:]
			}
		}
		// Short magic (:/, :!, :^) ends at an optional second colon: ':/:.env'.
		p = strings.TrimPrefix(strings.TrimLeft(p, "/!^"), ":")
		if p != "" {
			out = append(out, wordInfo{val: p, glob: op.glob || strings.Contains(op.val, "icase")})
		}
	}
	return out
}
