package knowledge

import (
	"net/url"
	"strings"
)

// gitInertKeys are the git configuration keys that cannot make a command
// toolgate allows as read-only (status, log, diff, show, grep, blame,
// branch and tag listings, ...) run a program, reach the network or print
// more than it says. An allowlist: any key not here, in any config file git
// reads for the repository (system, global, the repository's, the
// worktree's, and every file they include), keeps git commands from being
// decided locally. Keys are lower case: "section.key", "section.*" (any
// key), "section.*.key" (any subsection) or "section.sub.*".
//
// Left out on purpose, among others: core.fsmonitor, core.pager, pager.*,
// core.alternateRefsCommand and core.alternateRefsPrefixes, diff.external,
// diff.*.textconv and diff.*.command, filter.* (clean filters run on
// status and diff) but for git-lfs's own, log.showSignature (runs gpg on
// git log), pretty.* and format.pretty (aliases whose placeholders toolgate
// has not read), extensions.partialClone and remote.*.promisor (lazy
// fetches), remote.*.uploadpack, core.sshCommand, core.askPass,
// help.autocorrect, interactive.diffFilter, blame.ignoreRevsFile,
// diff.orderFile, core.worktree (moves the tree git reads), log.follow
// (follows a file through renames, so pathspecs stop limiting what is
// printed), and every unknown section.
var gitInertKeys = setOf(
	// Repository format and the working tree's stat data.
	"core.repositoryformatversion", "core.filemode", "core.bare", "core.logallrefupdates", "core.ignorecase",
	"core.precomposeunicode", "core.symlinks", "core.autocrlf", "core.eol", "core.safecrlf", "core.whitespace",
	"core.quotepath", "core.abbrev", "core.checkstat", "core.trustctime", "core.untrackedcache", "core.splitindex",
	"core.commitgraph", "core.multipackindex", "core.preloadindex", "core.fscache", "core.longpaths",
	"core.compression", "core.loosecompression", "core.packedgitlimit", "core.packedgitwindowsize",
	"core.deltabasecachelimit", "core.bigfilethreshold", "core.warnambiguousrefs", "core.sharedrepository",
	"core.hidedotfiles", "core.sparsecheckout", "core.sparsecheckoutcone", "core.commentchar", "core.commentstring",
	"core.fsync", "core.fsyncmethod", "core.checkroundtripencoding", "core.notesref",
	// The editor runs for commits and interactive commands only, none of
	// which is read-only; the hooks directory is checked for the hooks
	// read-only commands may fire (GitHooksInert).
	"core.editor", "sequence.editor", "core.hookspath",
	// Files git reads and whose lines error messages and check-ignore can
	// print: their paths are judged as reads (GitReadKeys).
	"core.excludesfile", "core.attributesfile", "mailmap.file",
	"extensions.objectformat", "extensions.worktreeconfig", "extensions.preciousobjects",
	"index.version", "index.skiphash", "index.threads", "index.recordendofindexentries", "index.recordoffsettable",
	"feature.manyfiles", "feature.experimental",
	// An alias never replaces a built-in command, and toolgate allows
	// built-in commands only.
	"alias.*",
	"user.name", "user.email", "user.signingkey", "user.useconfigonly", "author.name", "author.email",
	"committer.name", "committer.email", "init.defaultbranch", "init.templatedir", "safe.directory",
	"branch.autosetupmerge", "branch.autosetuprebase", "branch.sort",
	"branch.*.remote", "branch.*.merge", "branch.*.rebase", "branch.*.pushremote", "branch.*.description",
	"branch.*.mergeoptions", "branch.*.vscode-merge-base",
	// Remotes and URL rewrites: read-only commands contact no remote;
	// the URLs are checked for credentials wherever a command prints them
	// (GitURLCarriesCredentials).
	"remote.*.url", "remote.*.pushurl", "remote.*.fetch", "remote.*.push", "remote.*.tagopt", "remote.*.prune",
	"remote.*.prunetags", "remote.*.mirror", "remote.*.skipdefaultupdate", "remote.*.skipfetchall",
	"remote.pushdefault", "url.*.insteadof", "url.*.pushinsteadof",
	"push.default", "push.autosetupremote", "push.followtags", "push.gpgsign", "push.recursesubmodules",
	"pull.rebase", "pull.ff", "pull.twohead", "fetch.prune", "fetch.prunetags", "fetch.parallel",
	"fetch.recursesubmodules", "fetch.writecommitgraph", "fetch.fsckobjects", "transfer.fsckobjects",
	"receive.fsckobjects", "protocol.version", "merge.ff", "merge.conflictstyle", "merge.renames",
	"merge.renamelimit", "merge.log", "merge.stat", "merge.autostash", "merge.tool", "merge.guitool",
	"diff.tool", "diff.guitool", "rebase.autosquash", "rebase.autostash", "rebase.updaterefs", "rebase.stat",
	"rebase.abbreviatecommands", "rebase.missingcommitscheck", "rerere.enabled", "rerere.autoupdate",
	// mergetool and difftool commands run under git mergetool and git
	// difftool only; gpg programs only to sign or to verify, and toolgate
	// refuses every verifying option (--show-signature, %G, log.showSignature).
	"mergetool.*.cmd", "mergetool.*.path", "mergetool.*.trustexitcode", "mergetool.keepbackup", "mergetool.prompt",
	"difftool.*.cmd", "difftool.*.path", "difftool.prompt", "difftool.trustexitcode",
	"commit.gpgsign", "commit.template", "commit.verbose", "commit.cleanup", "commit.status", "tag.gpgsign",
	"tag.sort", "tag.forcesignannotated", "gpg.format", "gpg.program", "gpg.*.program", "gpg.ssh.allowedsignersfile",
	"diff.renames", "diff.renamelimit", "diff.algorithm", "diff.noprefix", "diff.mnemonicprefix", "diff.colormoved",
	"diff.colormovedws", "diff.indentheuristic", "diff.context", "diff.interhunkcontext", "diff.statgraphwidth",
	"diff.relative", "diff.suppressblankempty", "diff.wserrorhighlight", "diff.ignoresubmodules",
	"diff.dirstat", "diff.autorefreshindex", "diff.srcprefix", "diff.dstprefix",
	"diff.*.xfuncname", "diff.*.funcname", "diff.*.wordregex", "diff.*.binary",
	"log.date", "log.decorate", "log.abbrevcommit", "log.showroot", "log.mailmap", "log.excludedecoration",
	"log.initialdecorationset", "log.diffmerges", "log.graphcolors",
	"status.showuntrackedfiles", "status.short", "status.branch", "status.submodulesummary", "status.relativepaths",
	"status.aheadbehind", "status.showstash", "status.renames", "status.renamelimit", "status.displaycommentprefix",
	"color.ui", "color.diff", "color.status", "color.branch", "color.grep", "color.interactive", "color.showbranch",
	"color.decorate", "color.pager", "color.advice", "color.push", "color.remote", "color.transport",
	"color.diff.*", "color.status.*", "color.branch.*", "color.grep.*", "color.decorate.*", "color.interactive.*",
	"column.ui", "column.branch", "column.status", "column.tag", "grep.linenumber", "grep.extendedregexp",
	"grep.patterntype", "grep.column", "grep.fullname", "grep.fallbacktonoindex", "advice.*",
	"gc.auto", "gc.autodetach", "gc.autopacklimit", "gc.reflogexpire", "gc.reflogexpireunreachable", "gc.pruneexpire",
	"gc.writecommitgraph", "pack.threads", "pack.windowmemory", "pack.packsizelimit", "pack.writebitmaphashcache",
	"repack.writebitmaps", "repack.usedeltabaseoffset", "maintenance.auto", "maintenance.strategy",
	"maintenance.repo", "credential.helper", "credential.usehttppath", "credential.username",
	"credential.*.helper", "credential.*.usehttppath", "credential.*.username",
	"http.sslverify", "http.postbuffer", "http.version", "http.lowspeedlimit", "http.lowspeedtime",
	"submodule.recurse", "submodule.*.url", "submodule.*.path", "submodule.*.active", "submodule.*.branch",
	"submodule.*.ignore", "submodule.*.fetchrecursesubmodules", "submodule.active",
	"lfs.repositoryformatversion", "lfs.url", "lfs.locksverify", "lfs.fetchexclude", "lfs.fetchinclude",
	"lfs.*.access", "lfs.*.locksverify",
	"worktree.guessremote", "checkout.defaultremote", "checkout.workers", "clone.defaultremotename",
	"help.format", "i18n.commitencoding", "i18n.logoutputencoding", "apply.whitespace",
	"blame.date", "blame.coloring", "blame.showemail", "blame.blankboundary", "blame.showroot",
	"am.threeway", "format.signoff", "format.numbered", "sendemail.smtpserver", "sendemail.smtpuser",
	"sendemail.smtpencryption", "sendemail.smtpserverport", "web.browser", "instaweb.httpd",
)

// gitLFSFilters are git-lfs's filter settings as git lfs install writes
// them: the only filter.* values that are inert, since they name git-lfs
// itself with its own arguments.
var gitLFSFilters = map[string]string{
	"filter.lfs.clean":    "git-lfs clean -- %f",
	"filter.lfs.smudge":   "git-lfs smudge -- %f",
	"filter.lfs.process":  "git-lfs filter-process",
	"filter.lfs.required": "true",
}

// GitConfigInert reports whether git configuration key section.sub.key set
// to value is in the allowlist of inert settings. section and key are
// compared case-insensitively, as git does; sub is any subsection.
func GitConfigInert(section, sub, key, value string) bool {
	section, key = strings.ToLower(section), strings.ToLower(key)
	if section == "filter" {
		want, ok := gitLFSFilters["filter."+sub+"."+key]
		return ok && strings.TrimSpace(value) == want
	}
	if sub == "" {
		return gitInertKeys[section+"."+key] || gitInertKeys[section+".*"]
	}
	return gitInertKeys[section+".*."+key] || gitInertKeys[section+"."+sub+".*"] || gitInertKeys[section+"."+sub+"."+key]
}

// GitReadKeys are the keys whose values are files git reads for a
// read-only command, whose lines it can print (check-ignore -v names the
// excludes file's line): each is judged as a read.
var GitReadKeys = setOf("core.excludesfile", "core.attributesfile", "mailmap.file")

// GitHooksInert are the hooks that only commands which change the
// repository (commit, merge, rebase, push, checkout, am, receive, gc)
// fire: an allowlist. Any other hook in the hooks directory may run on a
// read-only command (post-index-change on git status, which refreshes the
// index; reference-transaction on any ref update; hooks git adds later).
// Files ending in .sample are never run.
var GitHooksInert = setOf("applypatch-msg", "pre-applypatch", "post-applypatch", "pre-commit", "pre-merge-commit",
	"prepare-commit-msg", "commit-msg", "post-commit", "pre-rebase", "post-checkout", "post-merge", "pre-push",
	"pre-receive", "update", "proc-receive", "post-receive", "post-update", "push-to-checkout", "pre-auto-gc",
	"post-rewrite", "sendemail-validate", "p4-changelist", "p4-prepare-changelist", "p4-post-changelist", "p4-pre-submit")

// GitURLCarriesCredentials reports whether a remote URL as git stores it
// may carry a credential: user information in a URL with a scheme (a token
// often goes as the user name), a query string, or anything that does not
// parse. scp-like ssh addresses (git@host:path) carry a user name only.
func GitURLCarriesCredentials(raw string) bool {
	s := strings.TrimSpace(raw)
	if s == "" {
		return false
	}
	if !strings.Contains(s, "://") {
		// A local path or an scp-like address: user@host:path.
		if strings.ContainsAny(s, "?#") {
			return true
		}
		// What comes before an @ is printed as written: user:secret@
		// is a credential however git reads the rest.
		at := strings.LastIndexByte(s, '@')
		return at >= 0 && strings.Contains(s[:at], ":")
	}
	u, err := url.Parse(s)
	if err != nil {
		return true
	}
	if u.RawQuery != "" || u.Fragment != "" || u.ForceQuery {
		return true
	}
	if u.User == nil {
		return false
	}
	if _, hasPass := u.User.Password(); hasPass {
		return true
	}
	// ssh://git@host/x is a user name; over http a bare user name is how
	// tokens are commonly given (https://TOKEN@github.com/...).
	switch strings.ToLower(u.Scheme) {
	case "ssh", "git+ssh", "ssh+git":
		return false
	}
	return true
}

// GitConfigPrintable reports whether git config --get may print the
// value of name (section.key or section.subsection.key) locally: an
// inert key whose value is neither a URL nor about credentials (remote
// and submodule URLs, LFS endpoints and URL rewrites carry tokens;
// credential, http and sendemail settings name accounts and helpers).
func GitConfigPrintable(name string) bool {
	i, j := strings.IndexByte(name, '.'), strings.LastIndexByte(name, '.')
	if i <= 0 || j == len(name)-1 {
		return false
	}
	section, key, sub := strings.ToLower(name[:i]), strings.ToLower(name[j+1:]), ""
	if j > i {
		sub = name[i+1 : j]
	}
	switch {
	case section == "credential" || section == "http" || section == "sendemail" || section == "url" || section == "filter":
		return false
	case strings.HasSuffix(key, "url") || strings.HasSuffix(key, "insteadof"):
		return false
	}
	return GitConfigInert(section, sub, key, "")
}
