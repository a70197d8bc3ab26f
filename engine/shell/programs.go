package shell

import (
	"fmt"
	"path"
	"slices"
	"strings"

	"github.com/toolgate/toolgate/engine/knowledge"
)

// programTable lists the read-only programs and how they may be used. It is
// an allowlist: options not listed reject the command, so the lists name
// safe options only. Programs that can run other programs, write files or
// talk to the network through some option list only the other options.
var programTable = []*spec{
	// Viewing files.
	{names: "cat", opts: "A b e E n s t T u v show-all number-nonblank show-ends number squeeze-blank show-tabs show-nonprinting",
		safeOpts: true, reads: readAll},
	{names: "head", opts: "c: n: q v z bytes: lines: quiet silent verbose zero-terminated #",
		safeOpts: true, reads: readAll},
	{names: "tail", opts: "c: n: q v z f F s: bytes: lines: quiet silent verbose zero-terminated follow:: retry pid: sleep-interval: max-unchanged-stats: #",
		safeOpts: true, reads: readAll, enums: "follow=name|descriptor"},
	{names: "nl", opts: "b: d: f: h: i: l: n: p s: v: w: body-numbering: section-delimiter: footer-numbering: header-numbering: line-increment: join-blank-lines: number-format: no-renumber number-separator: starting-line-number: number-width:",
		safeOpts: true, reads: readAll},
	{names: "tac", opts: "b r s: before regex separator:", safeOpts: true, reads: readAll},
	{names: "rev", safeOpts: true, reads: readAll},
	{names: "od", opts: "A: t: N: j: w:: v a b c d f i l o s x address-radix: format: read-bytes: skip-bytes: width:: output-duplicates endian: traditional",
		safeOpts: true, reads: readAll, enums: "endian=big|little"},
	// hexdump -f, wc --files0-from, diff --from-file/--to-file and file -f
	// read a file named by an option, whose content error messages or
	// output can show: not listed.
	{names: "hexdump", opts: "b c C d o x e: n: s: v L::", reads: readAll},
	// strings (binutils) reads options from @FILE, even after --, and
	// prints them in error messages.
	{names: "strings", opts: "a d f n: t: e: w s: T: all data print-file-name bytes: radix: encoding: include-all-whitespace output-separator: target: unicode: U: #",
		reads: readAll, check: func(iv *invocation) string {
			for _, w := range iv.args {
				if strings.HasPrefix(w.val, "@") || w.lead {
					return iv.failf("%s may name a file of options", w.val)
				}
			}
			return ""
		}},
	// xxd INFILE OUTFILE writes OUTFILE: one operand at most.
	{names: "xxd", style: styleCustom, reads: readCustom, check: checkXxd},
	{names: "base64", opts: "d D i w: decode ignore-garbage wrap:", writeOpts: "o: output:", reads: readAll},

	// Searching.
	{names: "grep egrep fgrep", opts: "i y v w x c l L n h H o q s r R E F G P a I z Z b T U e: f: m: A: B: C: d: D: # " +
		"regexp: file: ignore-case no-ignore-case invert-match word-regexp line-regexp count color:: colour:: files-with-matches files-without-match " +
		"max-count: only-matching quiet silent no-messages byte-offset line-number with-filename no-filename label: initial-tab null null-data " +
		"after-context: before-context: context: text binary-files: devices: directories: exclude: exclude-from: exclude-dir: include: recursive " +
		"dereference-recursive extended-regexp fixed-strings basic-regexp perl-regexp line-buffered binary version help",
		reads: readCustom, check: checkGrep,
		// -d and --directories take an abbreviation (-d rec is recurse).
		enums: "d,directories=read|skip|recurse D,devices=read|skip binary-files=binary|text|without-match " +
			"color,colour=always|yes|force|never|no|none|auto|tty|if-tty"},
	// rg runs programs with --pre, --hostname-bin and -z/--search-zip.
	{names: "rg", opts: "i s S w x v c l n N H I o q u F P U a 0 b p L h V . j: A: B: C: m: e: f: g: t: T: M: E: r: d: " +
		"files type-list hidden no-hidden no-ignore ignore glob: iglob: type: type-not: type-add: type-clear: count count-matches files-with-matches " +
		"files-without-match line-number no-line-number column no-column heading no-heading with-filename no-filename color: colors: json no-json vimgrep " +
		"max-count: max-depth: maxdepth: max-filesize: ignore-case smart-case case-sensitive fixed-strings no-fixed-strings word-regexp line-regexp " +
		"invert-match context: before-context: after-context: context-separator: field-context-separator: field-match-separator: only-matching " +
		"multiline no-multiline multiline-dotall pcre2 no-pcre2 auto-hybrid-regex engine: follow no-follow sort: sortr: sort-files stats no-stats " +
		"trim no-trim replace: text no-text null null-data threads: quiet unrestricted no-messages no-ignore-vcs no-ignore-parent no-ignore-dot " +
		"no-ignore-global no-ignore-exclude no-ignore-files no-ignore-messages ignore-file: ignore-file-case-insensitive max-columns: max-columns-preview " +
		"no-config regexp: file: encoding: no-encoding byte-offset crlf no-crlf version help mmap no-mmap one-file-system path-separator: " +
		"glob-case-insensitive no-unicode unicode pretty line-buffered block-buffered include-zero passthru passthrough binary no-binary " +
		"hyperlink-format: dfa-size-limit: regex-size-limit: no-require-git",
		reads: readCustom, check: checkRg, enums: "color=never|auto|always|ansi sort,sortr=none|path|modified|accessed|created engine=default|pcre2|auto"},
	// find runs programs and writes files with some primaries: custom.
	{names: "find", style: styleCustom, reads: readCustom, check: checkFind},
	// sed: scripts in a small grammar only (see checkSed), never -i or -f.
	// --posix changes how scripts parse: not listed.
	{names: "sed", opts: "n e: E r s u z l: quiet silent regexp-extended expression: separate unbuffered null-data zero-terminated line-length: " +
		"sandbox debug help version",
		writeOpts: "i:: in-place::", reads: readCustom, check: checkSed},
	// awk: programs that only compute and print to stdout (see checkAwk).
	// Not listed: -f, -e, -i, -l, -E (program and extension files), -o,
	// -p, -d (write files), -D (debugger), -W (mawk's -W exec and dump).
	// Options end at the program in every awk.
	{names: "awk gawk mawk nawk", opts: "F: v: b c n N O P r s S t M L:: V field-separator: assign: characters-as-bytes traditional " +
		"non-decimal-data use-lc-numeric optimize posix re-interval no-optimize sandbox lint-old lint:: bignum version help",
		posix: true, reads: readCustom, check: checkAwk},
	// jq modules (import/include, -L) and filter files (-f) can read JSON
	// files anywhere, credential stores included: not allowed.
	// jq --rawfile and --slurpfile read a file into a variable: not listed.
	{names: "jq", opts: "r j c n e s S C M a R raw-output join-output compact-output null-input exit-status slurp sort-keys color-output " +
		"monochrome-output ascii-output raw-input tab indent: seq stream stream-errors raw-output0 unbuffered " +
		"arg:2 argjson:2 args jsonargs version help",
		reads: readCustom, check: checkJq},
	// yq: never -i (in place) or -s (splits into files); expressions in a
	// grammar of pure operators (see yqExpr), none that reads the
	// environment or files.
	{names: "yq", opts: "r o: output-format: p: input-format: P prettyPrint e exit-status C M N I: j no-doc indent: colors no-colors unwrapScalar:: null-input n",
		reads: readCustom, check: checkYq},

	// Text processing of stdin or files.
	{names: "sort", opts: "b d f g h i M n R r V c C k: m s t: u z S: key: field-separator: ignore-leading-blanks dictionary-order ignore-case " +
		"general-numeric-sort human-numeric-sort ignore-nonprinting month-sort numeric-sort random-sort reverse version-sort check:: merge stable " +
		"unique zero-terminated buffer-size: parallel: debug random-source: sort:",
		writeOpts: "o: output:", reads: readAll, enums: "sort=general-numeric|human-numeric|month|numeric|random|version check=diagnose-first|quiet|silent"},
	// uniq INPUT OUTPUT writes OUTPUT: one operand at most.
	{names: "uniq", opts: "c d D u i f: s: w: z count repeated all-repeated:: unique ignore-case skip-fields: skip-chars: check-chars: group:: zero-terminated",
		ops: "0-1", safeOpts: true, reads: readAll, enums: "all-repeated=none|prepend|separate group=separate|prepend|append|both"},
	{names: "cut", opts: "b: c: f: d: s n z complement only-delimited zero-terminated bytes: characters: fields: delimiter: output-delimiter:",
		safeOpts: true, reads: readAll},
	{names: "tr", opts: "c C d s t complement delete squeeze-repeats truncate-set1", ops: "1-2", safeOpts: true, dyn: true},
	{names: "paste", opts: "d: s z delimiters: serial zero-terminated", safeOpts: true, reads: readAll},
	{names: "comm", opts: "1 2 3 check-order nocheck-order output-delimiter: total z zero-terminated", ops: "2", safeOpts: true, reads: readAll},
	{names: "fold", opts: "b s w: bytes spaces width:", safeOpts: true, reads: readAll},
	// wc --files0-from reads names from a file, and error messages show
	// them: not listed, and a run-time word may be it.
	{names: "wc", opts: "c m l L w bytes chars lines max-line-length words total:", dyn: true, reads: readAll, enums: "total=auto|always|only|never"},
	// diff -l/--paginate runs pr: not listed.
	{names: "diff", opts: "i E Z b w B a u c e n y t T N r s q d p x: X: I: F: S: D: U: C: W: normal brief report-identical-files context:: unified:: " +
		"ed rcs side-by-side left-column suppress-common-lines show-c-function show-function-line: label: expand-tabs initial-tab tabsize: " +
		"suppress-blank-empty new-file unidirectional-new-file ignore-case ignore-file-name-case no-ignore-file-name-case ignore-tab-expansion " +
		"ignore-trailing-space ignore-space-change ignore-all-space ignore-blank-lines ignore-matching-lines: text strip-trailing-cr recursive " +
		"no-dereference exclude: exclude-from: starting-file: minimal speed-large-files horizon-lines: width: color:: palette: " +
		"ifdef: old-line-format: new-line-format: unchanged-line-format: line-format: old-group-format: new-group-format: unchanged-group-format: " +
		"changed-group-format: binary help version",
		reads: readCustom, check: checkDiff, enums: "color=never|always|auto"},
	{names: "cmp", opts: "b i: l n: s print-bytes ignore-initial: verbose bytes: quiet silent", ops: "1-4", safeOpts: true, reads: readCustom,
		check: func(iv *invocation) string { iv.files = iv.pa.ops[:min(2, len(iv.pa.ops))]; return "" }},
	{names: "md5sum sha1sum sha224sum sha256sum sha384sum sha512sum b2sum cksum shasum",
		opts:     "b c t z w l: a: 0 U check tag text binary zero quiet status strict warn ignore-missing length: algorithm: untagged base64 raw",
		safeOpts: true, dyn: true, reads: readAll},
	// file -C writes compiled magic and -z runs decompressors: not listed.
	{names: "file", opts: "b i L h Z k s N E r 0 brief mime mime-type mime-encoding dereference no-dereference uncompress-noexec keep-going " +
		"special-files no-pad no-buffer print0 raw extension apple e: F: P: exclude: exclude-quiet: separator: " +
		"parameter: version help", reads: readAll},

	// Files and directories.
	// Listing names is a read of the directory: its operands must be
	// inside the read roots like any other read target.
	{names: "ls", style: styleAny, safeOpts: true, dyn: true, reads: readCustom, check: anyOperands},
	// --files0-from reads names from a file, and error messages show them
	// (du --files0-from=/proc/self/environ prints the environment): du
	// takes its other options (GNU's and BSD's) only, and a run-time word
	// only after --. stat and df have no such option.
	{names: "stat df", style: styleAny, safeOpts: true, dyn: true, reads: readCustom, check: func(iv *invocation) string {
		if why := noFilesFrom(iv); why != "" {
			return why
		}
		return anyOperands(iv)
	}},
	{names: "du", opts: "0 a b B: c D d: H h k L l m P S s t: x X: A g I: n r null all apparent-size block-size: bytes total " +
		"dereference-args max-depth: human-readable inodes dereference count-links no-dereference separate-dirs si summarize " +
		"threshold: time:: time-style: exclude: exclude-from: one-file-system help version",
		dyn: true, reads: readCustom, check: func(iv *invocation) string {
			iv.files = iv.pa.ops
			if len(iv.files) == 0 && !iv.ic.implicit {
				iv.files = []wordInfo{synthetic(".")} // du lists the working directory
			}
			return ""
		}},
	// tree -o writes a file and -R with -H writes HTML files: not listed.
	{names: "tree", opts: "a d l f x L: P: I: i q N Q p u g s h D F v t c U r C n J X gitignore ignore-case matchdirs prune noreport dirsfirst " +
		"filesfirst du si inodes device charset: filelimit: timefmt: sort: version help",
		writeOpts: "o:", reads: readAll},
	{names: "pwd", opts: "L P", ops: "0", safeOpts: true, dyn: true},
	{names: "basename", opts: "a s: z multiple suffix: zero", safeOpts: true, dyn: true},
	{names: "dirname", opts: "z zero", safeOpts: true, dyn: true},
	{names: "realpath", opts: "e m L P q s z canonicalize-existing canonicalize-missing logical physical quiet strip no-symlinks zero relative-to: relative-base:",
		safeOpts: true, dyn: true, reads: readAll},
	{names: "readlink", opts: "f e m n q s v z canonicalize canonicalize-existing canonicalize-missing no-newline quiet silent verbose zero",
		safeOpts: true, dyn: true, reads: readAll},
	// cd moves later relative reads; see checkCd.
	{names: "cd", opts: "L P", safeOpts: true, dyn: true, check: checkCd},
	{names: "tee", style: styleCustom, check: checkTee},

	// Shell builtins and trivia.
	{names: "echo true false :", style: styleAny, safeOpts: true, dyn: true},
	{names: "printf", style: styleCustom, ownDyn: true, check: checkPrintf},
	{names: "test [", style: styleCustom, ownDyn: true, check: checkTest},
	{names: "read", opts: "r s d: n: N: t: p: u:", check: checkRead},
	{names: "type", opts: "a f p P t", safeOpts: true, dyn: true},
	{names: "which", opts: "a s all", safeOpts: true, dyn: true},
	{names: "command", opts: "p v V", safeOpts: true, dyn: true}, // only reached for command -v/-V
	{names: "seq", opts: "f: s: w format: separator: equal-width #", ops: "1-3", safeOpts: true, dyn: true},
	{names: "sleep", ops: "1-", safeOpts: true, dyn: true},

	// System information.
	{names: "whoami", ops: "0", safeOpts: true, dyn: true},
	{names: "id uname free uptime", style: styleAny, safeOpts: true, dyn: true},
	// ps reads BSD options without a dash (e: environments).
	{names: "ps", style: styleAny, check: checkPs},
	// lsof takes its options from an allowlist (checkLsof): +m writes a
	// mount supplement file, -D b and -D u (BSD, macOS) the device cache
	// file, -k, -m and -A read kernel name list and memory files, -M asks
	// portmappers: not listed.
	{names: "lsof", style: styleAny, check: checkLsof},
	// pgrep is ps by name: -a and -f print and match command lines, as
	// ps aux does. -F reads a PID file; -M and -N (BSD, macOS) read
	// kernel memory and name list files. pkill signals: not listed.
	{names: "pgrep", opts: "d: l a v w c f g: G: i n o O: P: s: t: u: U: x r: A q h V delimiter: list-name list-full inverse " +
		"lightweight count full pgroup: group: ignore-case newest oldest older: parent: session: terminal: euid: uid: exact " +
		"runstates: ignore-ancestors cgroup: ns: nslist: help version", ops: "0-1"},
	// ss and netstat list sockets. ss -K closes them, -D writes a file,
	// -F reads one, -N switches network namespace; netstat -M and -N
	// read kernel files on BSD and macOS. ss operands are a filter
	// expression, netstat's (macOS -p tcp) a protocol.
	{names: "ss", opts: "h V n r a l o e m p T i s b 4 6 0 t M S u d w x H O f: A: help version numeric resolve all listening " +
		"options extended memory processes threads info tipcinfo summary tos cgroup bpf ipv4 ipv6 packet tcp mptcp sctp udp " +
		"dccp raw unix tipc vsock xdp family: query: socket: no-header oneline inet-sockopt"},
	{names: "netstat", opts: "a n t u U S w x l p e o c r i g s v W F C Z 4 6 A: f: h V all numeric numeric-hosts numeric-ports " +
		"numeric-users tcp udp udplite sctp raw unix listening programs extend timers continuous route interfaces groups " +
		"statistics verbose wide fib cache context protocol: inet inet6 help version"},
	// docker: listing containers and images, and versions, with no
	// global option (--context, -H, --config point docker elsewhere).
	// docker ps prints command lines, as ps does. Go templates are
	// checked (dockerFormat). docker compose and docker-compose load
	// the project's compose file, whose include: may name an OCI or git
	// resource, interpolated from the environment, to fetch: not listed.
	{names: "docker", style: styleSub, opts: "v version", check: versionOnly, subs: map[string]*spec{
		"ps":      dockerPs,
		"images":  dockerImages,
		"version": {opts: "f: format:", ops: "0", check: dockerFormat},
		"container": {style: styleSub, subs: map[string]*spec{
			"ls": dockerPs, "list": dockerPs, "ps": dockerPs,
		}},
		"image": {style: styleSub, subs: map[string]*spec{
			"ls": dockerImages, "list": dockerImages,
		}},
	}},
	{names: "nproc", opts: "all ignore:", ops: "0", safeOpts: true, dyn: true},
	// hostname NAME sets the host name: no operands.
	{names: "hostname", opts: "f s i I d A a y fqdn long short ip-address all-ip-addresses domain all-fqdns alias yp nis", ops: "0"},
	// date -s and date MMDDhhmm set the clock: only +FORMAT operands.
	{names: "date", opts: "u d: f: r: R I:: utc universal date: file: reference: rfc-email iso-8601:: rfc-3339: debug resolution", ops: "0-1",
		reads: readCustom, check: checkDate, enums: "I,iso-8601=date|hours|minutes|seconds|ns rfc-3339=date|seconds|ns"},
	// env without a command prints the whole environment: not listed.
	{names: "printenv", opts: "0 null", ops: "1-", check: checkPrintenv},
	{names: "nice", opts: "n: adjustment: #", ops: "0"}, // only reached for nice without a command

	// Development tools, read-only forms only.
	gitSpec,
	// The go command reads go.work or go.mod in its directory or above,
	// and a go or toolchain line newer than itself makes it download and
	// run that toolchain (GOTOOLCHAIN=auto): the engine judges those files
	// (toolchain "go"). go list and go doc (which runs go list -m all)
	// resolve modules, downloading them or asking a proxy about any path
	// an operand names: not listed.
	{names: "go", style: styleSub, toolchain: ToolchainGo, subs: map[string]*spec{
		// go version -m reads the binaries it names.
		"version": {style: styleGo, opts: "m v json", reads: readAll},
		// go env prints GOPROXY and GOAUTH too, which may carry
		// credentials: named variables from goEnvVars only.
		"env":  {style: styleGo, opts: "json", ops: "1-", check: checkGoEnv},
		"help": {style: styleGo},
	}},
	// gofmt lists (-l) or prints (-d, or the formatted source) the .go
	// files it is given, and those below a directory operand, hidden
	// directories included; -w rewrites them and -cpuprofile writes a
	// profile: not listed.
	{names: "gofmt", style: styleGo, opts: "l d e s r: comments tabs tabwidth: allerrors", writeOpts: "w cpuprofile:",
		reads: readCustom, check: checkGofmt},
	// npm reads the project's .npmrc (its registry, which the update
	// check asks) and, through version managers' shims, package.json's
	// volta and packageManager fields: judged by the engine. pip is not
	// listed: it runs its environment's start-up code (a virtualenv's
	// .pth files are files like any other) and pip list asks the index
	// whether pip is current.
	{names: "npm", style: styleSub, opts: "v version", check: versionOnly, toolchain: ToolchainNode, subs: map[string]*spec{
		"ls": npmLs, "list": npmLs, "ll": npmLs, "la": npmLs,
	}},
	// cargo and rustc are rustup's proxies, which install and run the
	// toolchain a rust-toolchain(.toml) file names (a path toolchain is
	// any program): judged by the engine.
	{names: "cargo rustc", exact: "--version|-V|version", toolchain: ToolchainRust},
	{names: "node", exact: "--version|-v", toolchain: ToolchainNode},
	// python -V prints the version before the site module runs any
	// start-up code; the shims of version managers pick the interpreter
	// from the project's files.
	{names: "python python3", exact: "--version|-V", toolchain: ToolchainPython},
}

var (
	dockerPs     = &spec{opts: "a f: n: l q s all filter: format: last: latest no-trunc quiet size", ops: "0", check: dockerFormat}
	dockerImages = &spec{opts: "a f: q all digests filter: format: no-trunc quiet tree", ops: "0-1", check: dockerFormat}
)

// dockerFormat accepts docker's --format values (docker version's -f too)
// that are "table" or "json", or Go templates, optionally after "table ",
// whose actions are all {{.Field}}, {{json .}} or {{json .Field}}: docker
// templates cannot run programs, but functions and methods with arguments
// are more than a listing needs. A field may be a chain (.Server.Version).
func dockerFormat(iv *invocation) string {
	vals := iv.pa.values("format")
	if iv.name == "docker version" {
		vals = append(vals, iv.pa.values("f")...)
	}
	for _, v := range vals {
		if !dockerTemplate(v) {
			return iv.failf("format %q is not a plain template of fields", v)
		}
	}
	return ""
}

func dockerTemplate(v string) bool {
	if v == "table" || v == "json" {
		return true
	}
	v = strings.TrimPrefix(v, "table ")
	for {
		i := strings.Index(v, "{{")
		if i < 0 {
			return !strings.Contains(v, "}}")
		}
		if strings.Contains(v[:i], "}}") {
			return false
		}
		v = v[i+2:]
		j := strings.Index(v, "}}")
		if j < 0 {
			return false
		}
		act := strings.TrimSpace(v[:j])
		v = v[j+2:]
		if rest, ok := strings.CutPrefix(act, "json "); ok {
			act = strings.TrimSpace(rest)
			if act == "." {
				continue
			}
		}
		fields, ok := strings.CutPrefix(act, ".")
		if !ok {
			return false
		}
		for _, f := range strings.Split(fields, ".") {
			if !isAlnum(f) || f[0] >= '0' && f[0] <= '9' {
				return false
			}
		}
	}
}

var npmLs = &spec{opts: "a all json l long p parseable depth: omit: include: prod production dev development global g link unicode " +
	"package-lock-only workspace: w: workspaces include-workspace-root"}

// versionOnly accepts a program with --version and no subcommand.
func versionOnly(iv *invocation) string {
	if iv.pa.has("v", "V", "version") && len(iv.args) == 1 {
		return ""
	}
	return iv.failf("needs a subcommand")
}

// goEnvVars are the go env variables that name places, versions and
// build settings, never credentials (GOPROXY, GOAUTH, GONOSUMDB and the
// like may).
var goEnvVars = map[string]bool{"GOPATH": true, "GOROOT": true, "GOMODCACHE": true, "GOCACHE": true, "GOOS": true,
	"GOARCH": true, "GOVERSION": true, "GOMOD": true, "GOWORK": true, "GOBIN": true, "GOEXE": true, "GOHOSTOS": true,
	"GOHOSTARCH": true, "CGO_ENABLED": true, "GOTOOLCHAIN": true, "GOTOOLDIR": true, "GOAMD64": true, "GOARM": true,
	"GOARM64": true, "GO111MODULE": true, "GOENV": true, "GOTELEMETRY": true, "GOTELEMETRYDIR": true}

// checkGoEnv allows printing named variables from goEnvVars only.
func checkGoEnv(iv *invocation) string {
	for _, w := range iv.pa.ops {
		if !goEnvVars[w.val] {
			return iv.failf("prints %s, which is not known to be free of credentials", w.val)
		}
	}
	return ""
}

// checkGofmt: gofmt reads its operands, and walks a directory operand
// for the .go files below it.
func checkGofmt(iv *invocation) string {
	iv.files = iv.pa.ops
	if len(iv.pa.ops) == 0 {
		return "" // stdin
	}
	// gofmt opens the .go entries it finds, links to files included:
	// they may lead anywhere.
	return iv.recursiveRoots(iv.pa.ops, Tree{Hidden: true, Follow: true, FollowNamed: true, Names: []string{"*.go"}})
}

// patternFirst splits a grep-like command's operands: the first is the
// pattern unless patterns come from -e or -f.
func patternFirst(iv *invocation, patternOpts ...string) []wordInfo {
	if iv.pa.has(patternOpts...) || len(iv.pa.ops) == 0 {
		return iv.pa.ops
	}
	return iv.pa.ops[1:]
}

// recursiveRoots rejects recursive reads of homes, their parents, or
// directories on the way to a credential store (grep -r PAT ~).
func (iv *invocation) recursiveRoots(roots []wordInfo, how Tree) string {
	if iv.ic.implicit {
		// xargs appends operands: roots of the search too.
		iv.ic.recursive = true
	}
	if len(roots) == 0 {
		roots = []wordInfo{synthetic(".")}
	}
	for _, r := range roots {
		if r.dyn {
			if r.xargs {
				iv.ic.recursive = true
			}
			continue
		}
		for _, p := range iv.sc.paths(r.val) {
			how.Path = p
			iv.a.out.Trees = append(iv.a.out.Trees, how)
		}
		p := r.val
		if isRelative(p) {
			if iv.sc.cwdUnknown {
				return iv.failf("recursive read after cd to a directory known only at run time")
			}
			p = path.Join(iv.sc.cwd, p)
		}
		if knowledge.IsCredentialAncestor(p) {
			return iv.failf("recursive read of %s may reach credential stores", r.val)
		}
	}
	return ""
}

func checkGrep(iv *invocation) string {
	iv.files = patternFirst(iv, "e", "regexp", "f", "file")
	recursive := iv.pa.has("r", "R", "recursive", "dereference-recursive")
	for _, d := range append(iv.pa.values("d"), iv.pa.values("directories")...) {
		recursive = recursive || d == "recurse"
	}
	if recursive {
		if why := iv.secretFilters("include"); why != "" {
			return why
		}
		t := Tree{Hidden: true, Follow: iv.pa.has("R", "dereference-recursive")}
		// GNU grep matches --exclude-dir against the base name of each
		// directory it meets, ignoring trailing slashes in the glob.
		for _, g := range iv.pa.staticValues("exclude-dir") {
			if g = strings.TrimRight(g, "/"); g != "" {
				t.SkipDirs = append(t.SkipDirs, g)
			}
		}
		// With --include alone a file is read only when its base name
		// matches one; once --exclude joins in, the first and last
		// matching options decide, which a name list does not say.
		if !iv.pa.has("exclude", "exclude-from") {
			t.Names = iv.pa.values("include")
		}
		if why := iv.recursiveRoots(iv.files, t); why != "" {
			return why
		}
	}
	iv.files = append(iv.files, patternFiles(iv, "f", "file")...)
	return ""
}

// patternFiles returns the files grep -f, rg -f and git grep -f read
// patterns from: what they print depends on those lines (-o prints them),
// so they are reads like the searched files.
func patternFiles(iv *invocation, opts ...string) []wordInfo {
	var out []wordInfo
	for _, f := range iv.pa.values(opts...) {
		if f != "-" {
			out = append(out, wordInfo{val: f, cred: f, glob: hasGlobMeta(f), pos: -1, end: -1})
		}
	}
	return out
}

// secretFilters refuses file filters (grep --include, rg -g) that pick a
// secret file: they make a recursive search read it.
func (iv *invocation) secretFilters(opts ...string) string {
	for _, g := range iv.pa.values(opts...) {
		if strings.HasPrefix(g, "!") {
			continue // an exclusion only removes files from the search
		}
		if knowledge.NamePicksSecret(g) {
			return iv.failf("the filter %s picks secret files", g)
		}
	}
	return ""
}

func checkRg(iv *invocation) string {
	switch {
	case iv.pa.has("type-list"):
		iv.files = nil
	case iv.pa.has("files"):
		iv.files = iv.pa.ops
	default:
		iv.files = patternFirst(iv, "e", "regexp", "f", "file")
	}
	if why := iv.secretFilters("g", "glob", "iglob"); why != "" {
		return why
	}
	// rg skips hidden files unless told otherwise; -u twice (or more)
	// searches them, and so do --hidden and -. .
	hidden := iv.pa.has("hidden", ".")
	us := 0
	for _, w := range iv.args {
		switch {
		case w.is("--unrestricted"):
			us++
		case !w.dyn && strings.HasPrefix(w.val, "-") && !strings.HasPrefix(w.val, "--"):
			us += strings.Count(w.val, "u")
		}
	}
	hidden = hidden || us >= 2
	// A whitelist makes rg search the hidden files and directories it
	// matches: a glob that is not an exclusion (-g '?env' printed .env),
	// a type (-t, or one --type-add defines), or an ignore file whose
	// lines may start with "!" (--ignore-file; the project's own ignore
	// files are the engine's to read). Once a glob whitelists, rg
	// searches only the files one matches (rgNames).
	names, whitelist := rgNames(iv)
	hidden = hidden || whitelist || iv.pa.has("t", "type", "type-add", "ignore-file")
	// --type-add NAME:GLOB defines a type by a glob, a filter like -g's.
	for _, v := range iv.pa.values("type-add") {
		_, g, _ := strings.Cut(v, ":")
		if !strings.HasPrefix(g, "include:") && knowledge.NamePicksSecret(g) {
			return iv.failf("the type %s picks secret files", v)
		}
	}
	if why := iv.recursiveRoots(iv.files, Tree{Hidden: hidden, Follow: iv.pa.has("L", "follow"), SkipDirs: rgSkipDirs(iv), Names: names}); why != "" {
		return why
	}
	// rg prints the lines of an ignore file that are no valid glob in
	// its error messages: it is read like a pattern file.
	iv.files = append(iv.files, patternFiles(iv, "f", "file", "ignore-file")...)
	return ""
}

// rgNames reports whether a -g, --glob or --iglob glob whitelists (is no
// "!" exclusion) and, when every whitelist is a glob whose last
// component names the files it keeps, those names: rg then searches only
// a file whose path one of them matches, so its base name matches that
// glob's last component (braces expanded), or a -t type's globs.
// Case-insensitive globs (--iglob, --glob-case-insensitive), a last
// component with ** or a trailing slash, types not in ripgrepTypes or
// redefined (--type-add, --type-clear) and ignore files keep no names.
func rgNames(iv *invocation) ([]string, bool) {
	var names []string
	whitelist, ok := false, !iv.pa.has("type-add", "type-clear", "ignore-file", "glob-case-insensitive")
	for _, o := range iv.pa.opts {
		if o.name == "t" || o.name == "type" {
			// A built-in type whose globs are known keeps their names
			// (ripgrepTypes); it also searches the hidden files they
			// match.
			globs, known := ripgrepTypes[o.val]
			ok = ok && known && !o.glob
			whitelist = true
			names = append(names, globs...)
			continue
		}
		if o.name != "g" && o.name != "glob" && o.name != "iglob" || strings.HasPrefix(o.val, "!") {
			continue
		}
		whitelist = true
		alts, expanded := knowledge.ExpandBraces(o.val, 64)
		ok = ok && expanded && o.name != "iglob" && !o.glob
		for _, a := range alts {
			b := path.Base(a)
			ok = ok && !strings.HasSuffix(a, "/") && !strings.Contains(b, "**") && b != "" && b != "." && b != "/"
			names = append(names, b)
		}
	}
	if !whitelist || !ok {
		return nil, whitelist
	}
	return names, true
}

// rgSkipDirs returns the directory names ripgrep's -g '!NAME' and
// -g '!NAME/' globs keep it out of. A glob without a slash is matched, as
// in gitignore, against the base name at every depth; a later glob that
// matches overrides an earlier one, so any glob that is not such an
// exclusion (a whitelist -g '*', a path, a wildcard) leaves nothing
// skipped. Case-insensitive globs (--iglob) skip more than the name
// itself, never less.
func rgSkipDirs(iv *invocation) []string {
	var dirs []string
	for _, o := range iv.pa.opts {
		if o.name != "g" && o.name != "glob" && o.name != "iglob" {
			continue
		}
		name, neg := strings.CutPrefix(o.val, "!")
		name = strings.TrimSuffix(name, "/")
		if !neg || o.glob || name == "" || name == "." || name == ".." || strings.ContainsAny(name, "/*?[]{}\\!") {
			return nil
		}
		dirs = append(dirs, name)
	}
	return dirs
}

// checkDiff: diff reads its operands, and a directory operand's files:
// diff -r every file below it, diff of two directories the files directly
// in them (those of the same name in both; every one with -N, which
// prints a file the other side lacks in full), and diff FILE DIR the
// file DIR/FILE's base name. Each operand is a tree, one level deep
// without -r, hidden files included, links followed unless
// --no-dereference. -N without -r is refused: it prints every file of a
// directory operand, which the tree walk judges only where it can see the
// directory.
func checkDiff(iv *invocation) string {
	ops := iv.pa.ops
	iv.files = ops
	// diff FILE DIR reads DIR/FILE's base name when DIR is a directory:
	// the one-level tree of DIR judges it where DIR can be seen, and its
	// name is judged here wherever DIR is (diff config/config .git
	// printed .git/config).
	if len(ops) == 2 {
		for i, op := range ops {
			other := ops[1-i]
			if op.dyn || other.dyn || op.glob || other.glob || op.is("-") || other.is("-") {
				continue
			}
			base := path.Base(op.val)
			if base == "/" || base == "." || base == ".." {
				continue
			}
			for _, d := range iv.sc.paths(other.val) {
				if p := strings.TrimSuffix(d, "/") + "/" + base; knowledge.SecretPath(p, "") || credentialPath(p, false) {
					return iv.failf("compares %s with %s, which may hold secrets", op.val, p)
				}
			}
		}
	}
	follow := !iv.pa.has("no-dereference")
	if iv.pa.has("r", "recursive") {
		return iv.recursiveRoots(ops, Tree{Hidden: true, Follow: follow})
	}
	var dirs []wordInfo
	for _, op := range ops {
		if !op.pipe && !op.is("-") {
			dirs = append(dirs, op)
		}
	}
	if len(dirs) > 0 && iv.pa.has("N", "new-file", "unidirectional-new-file") {
		return iv.failf("-N prints every file of a directory operand that the other lacks; only diff -r's trees are judged whole")
	}
	if len(dirs) == 0 {
		return ""
	}
	return iv.recursiveRoots(dirs, Tree{Hidden: true, Follow: follow, OneLevel: true})
}

// checkJq accepts a filter only when jqFilter reads all of it; the other
// operands are the files jq reads.
func checkJq(iv *invocation) string {
	ops := iv.pa.ops
	if len(ops) == 0 && iv.ic.implicit {
		return iv.failf("xargs would supply the filter")
	}
	if len(ops) > 0 {
		if ops[0].glob {
			return iv.failf("glob %s may expand to another filter", ops[0].val)
		}
		if why := jqFilter(ops[0].val, iv.pa.values("arg", "argjson")...); why != "" {
			return iv.failf("%s", why)
		}
		ops = ops[1:]
	}
	if iv.pa.has("args", "jsonargs") && len(ops) > 0 {
		// Which operands are values and which are files depends on the
		// jq version and where --args stands: the files cannot be told.
		return iv.failf("--args with operands: files and values cannot be told apart")
	}
	iv.files = ops
	return ""
}

// jqBuiltins are jq's builtins (1.5 to 1.8) that compute from their
// input alone. Left out: env and $ENV (the environment), modulemeta and
// get_search_list (modules on disk); import and include are refused as
// keywords. input, inputs and input_filename read the operands, which
// are reads already.
var jqBuiltins = func() map[string]bool {
	m := map[string]bool{}
	for _, n := range strings.Fields(`abs acos acosh add all any arrays ascii ascii_downcase ascii_upcase asin asinh atan atan2 atanh booleans
		bsearch builtins capture cbrt ceil combinations contains copysign cos cosh date dateadd datesub debug del
		delpaths drem empty endswith erf erfc error exp exp10 exp2 explode expm1 fabs false fdim finites first flatten
		floor fma fmax fmin fmod format frexp from_entries fromdate fromdateiso8601 fromjson fromstream gamma
		get_jq_origin get_prog_origin getpath gmtime group_by gsub halt halt_error has have_decnum
		have_literal_numbers hypot implode IN in INDEX index indices infinite input input_filename input_line_number
		inputs inside isempty isfinite isinfinite isnan isnormal isvalid iterables j0 j1 jn JOIN join keys
		keys_unsorted last ldexp leaf_paths length lgamma lgamma_r limit localtime log log10 log1p log2 logb ltrim
		ltrimstr map map_values match max max_by min min_by mktime modf nan nearbyint nextafter nexttoward normals not
		now nth null nulls numbers objects path paths pick pow pow10 range recurse recurse_down remainder repeat
		reverse rindex rint round rtrim rtrimstr scalars scalars_or_empty scalb scalbln scan select setpath
		significand sin sinh skip sort sort_by split splits sqrt startswith stderr strflocaltime strftime strings
		strptime sub tan tanh test tgamma to_entries toarray todate todateiso8601 tojson tonumber tostream tostring
		transpose trim trimstr true trunc truncate_stream type unique unique_by until utf8bytelength values walk while
		with_entries y0 y1 yn`) {
		m[n] = true
	}
	return m
}()

// jqKeywords are jq's keywords other than import and include.
var jqKeywords = map[string]bool{
	"def": true, "if": true, "then": true, "elif": true, "else": true, "end": true, "as": true, "reduce": true,
	"foreach": true, "try": true, "catch": true, "label": true, "and": true, "or": true, "__loc__": true, "break": true,
}

// maxJqInterps bounds the nesting of a jq filter's string interpolations
// ("\("\(..)")"), which the reader recurses for: the filter is in quotes
// that the shell's nesting bounds do not look into.
const maxJqInterps = 32

// jqFilter reads a jq filter token by token: strings (with their \(...)
// interpolations read as code), fields (.env is a field, not a call),
// variables, formats and names. A name must be a keyword, a builtin from
// jqBuiltins, a function or parameter the filter defines, or an object
// key ({env: 1}, {env}); $ENV, import, include, module-qualified names
// (a::b) and characters jq does not use are refused.
func jqFilter(src string, args ...string) string {
	l := jqLexer{src: src, defined: map[string]bool{}, bound: map[string]bool{}}
	if why := l.code(false); why != "" {
		return why
	}
	// jq compiles no filter that uses a variable nobody defines: a
	// variable is the filter's own, an --arg or --argjson name, or one of
	// jq's that holds no secret. Others ($ENV, whatever a jq version
	// adds) are refused.
	for _, v := range l.vars {
		if !l.bound[v] && !l.defined[v] && !slices.Contains(args, v) && v != "__loc__" && v != "ARGS" {
			return "$" + v + " is neither the filter's own variable nor an argument"
		}
	}
	for _, n := range l.names {
		switch {
		case n.key:
		case n.text == "env" || n.text == "modulemeta" || n.text == "get_search_list":
			// Refused even when the filter defines the name: a
			// definition's scope may end before the call.
			return n.text + " reads the environment or modules"
		case !jqKeywords[n.text] && !jqBuiltins[n.text] && !l.defined[n.text]:
			return n.text + " is not a known jq builtin"
		}
	}
	return ""
}

type jqName struct {
	text string
	key  bool // an object key
}

type jqLexer struct {
	// bound are the variables the filter binds (as $x, label $x, def
	// f($x)); vars the ones it uses. binding is set inside an "as"
	// pattern, label right after "label".
	bound          map[string]bool
	vars           []string
	binding, label bool
	src            string
	i              int
	interps        int // string interpolations open: str and code recurse for each
	names          []jqName
	defined        map[string]bool
	// prev is the last token when it is "{" or ",", else "".
	prev string
	// objs says, for each open bracket, whether it is an object's "{".
	objs []bool
}

func jqIdentByte(c byte, first bool) bool {
	return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || !first && c >= '0' && c <= '9'
}

// ident reads an identifier at l.i, or returns "".
func (l *jqLexer) ident() string {
	j := l.i
	for j < len(l.src) && jqIdentByte(l.src[j], j == l.i) {
		j++
	}
	s := l.src[l.i:j]
	l.i = j
	return s
}

// next skips blanks and comments and returns the next byte, or 0.
func (l *jqLexer) next() (byte, string) {
	for l.i < len(l.src) {
		switch c := l.src[l.i]; c {
		case ' ', '\t', '\n':
			l.i++
		case '#':
			for l.i < len(l.src) && l.src[l.i] != '\n' {
				// jq 1.7.1 continues a comment after a backslash
				// before the newline; older jqs do not.
				if l.src[l.i] == '\\' || l.src[l.i] == '\r' {
					return 0, "a backslash or carriage return in a comment is read differently by jq versions"
				}
				l.i++
			}
		default:
			return c, ""
		}
	}
	return 0, ""
}

// code reads code up to the end, or up to the ")" that closes a string
// interpolation when inInterp.
func (l *jqLexer) code(inInterp bool) string {
	depth := 0
	for {
		c, why := l.next()
		if why != "" {
			return why
		}
		if c == 0 {
			if inInterp {
				return "unterminated string interpolation"
			}
			if len(l.objs) > 0 {
				return "unbalanced brackets"
			}
			return ""
		}
		prev := l.prev
		l.prev = ""
		switch {
		case c == '"':
			if why := l.str(); why != "" {
				return why
			}
		case c == '.':
			l.i++
			switch {
			case l.i < len(l.src) && jqIdentByte(l.src[l.i], true):
				l.ident() // a field
			case l.i < len(l.src) && l.src[l.i] == '"':
				if why := l.str(); why != "" {
					return why
				}
			case l.i < len(l.src) && l.src[l.i] >= '0' && l.src[l.i] <= '9':
				l.number()
			}
		case c == '$':
			l.i++
			if c, why := l.next(); why != "" || c == 0 || !jqIdentByte(c, true) {
				return "$ without a variable name"
			}
			name := l.ident()
			switch {
			case name == "ENV":
				return "$ENV is the environment"
			case strings.HasPrefix(l.src[l.i:], "::"):
				return "$" + name + ":: is a module's data"
			case l.binding || l.label:
				l.bound[name] = true
				l.label = false
			default:
				l.vars = append(l.vars, name)
			}
		case c == '@':
			l.i++
			if l.ident() == "" {
				return "@ without a format name"
			}
		case c >= '0' && c <= '9':
			l.number()
		case jqIdentByte(c, true):
			name := l.ident()
			switch {
			case strings.HasPrefix(l.src[l.i:], "::"):
				return name + ":: names a module"
			case name == "import" || name == "include":
				return name + " loads modules from files"
			case name == "def":
				if why := l.def(); why != "" {
					return why
				}
				continue
			case name == "as":
				// What follows up to | or ( is a pattern of bindings:
				// $x, [$a, $b], {k: $v}.
				l.binding = true
				continue
			case name == "label":
				l.label = true
				continue
			}
			key := false
			if len(l.objs) > 0 && l.objs[len(l.objs)-1] && (prev == "{" || prev == ",") {
				c2, why := l.next()
				if why != "" {
					return why
				}
				key = c2 == ':' || c2 == ',' || c2 == '}'
			}
			l.names = append(l.names, jqName{text: name, key: key})
		case c == '(' || c == '[' || c == '{':
			l.binding = l.binding && c != '('
			l.i++
			l.objs = append(l.objs, c == '{')
			if c == '{' {
				l.prev = "{"
			}
			depth++
		case c == ')' || c == ']' || c == '}':
			if depth == 0 {
				if inInterp && c == ')' {
					l.i++
					return ""
				}
				return "unbalanced brackets"
			}
			l.i++
			l.objs = l.objs[:len(l.objs)-1]
			depth--
		case c == ',':
			l.i++
			l.prev = ","
		case strings.IndexByte("|:;=!<>+-*/%?", c) >= 0:
			l.binding = l.binding && c != '|'
			l.i++
		default:
			return fmt.Sprintf("character %q is not part of jq", c)
		}
	}
}

// def reads "NAME" or "NAME(PARAMS)" after def: the name and the
// parameters (a or $a, which defines both) are names the filter may use.
func (l *jqLexer) def() string {
	if c, why := l.next(); why != "" || !jqIdentByte(c, true) {
		return "def without a name"
	}
	l.defined[l.ident()] = true
	if c, why := l.next(); why != "" || c != '(' {
		return why
	}
	l.i++
	for {
		c, why := l.next()
		if c == '$' {
			l.i++
			c, why = l.next()
		}
		if why != "" || !jqIdentByte(c, true) {
			return "def parameter without a name"
		}
		l.defined[l.ident()] = true
		switch c, _ := l.next(); c {
		case ';':
			l.i++
		case ')':
			l.i++
			return ""
		default:
			return "def parameters not understood"
		}
	}
}

// number reads digits, a fraction and an exponent.
func (l *jqLexer) number() {
	for l.i < len(l.src) && (l.src[l.i] >= '0' && l.src[l.i] <= '9' || l.src[l.i] == '.') {
		l.i++
	}
	if l.i < len(l.src) && (l.src[l.i] == 'e' || l.src[l.i] == 'E') {
		l.i++
		if l.i < len(l.src) && (l.src[l.i] == '+' || l.src[l.i] == '-') {
			l.i++
		}
		for l.i < len(l.src) && l.src[l.i] >= '0' && l.src[l.i] <= '9' {
			l.i++
		}
	}
}

// str reads a string literal at l.i, its interpolations as code.
func (l *jqLexer) str() string {
	l.i++ // the opening quote
	for l.i < len(l.src) {
		c := l.src[l.i]
		l.i++
		switch c {
		case '"':
			return ""
		case '\\':
			if l.i >= len(l.src) {
				return "unterminated string"
			}
			if l.src[l.i] == '(' {
				l.i++
				if l.interps++; l.interps > maxJqInterps {
					return fmt.Sprintf("string interpolations nested deeper than %d", maxJqInterps)
				}
				saved := l.objs
				l.objs = nil
				if why := l.code(true); why != "" {
					return why
				}
				l.objs = saved
				l.interps--
				continue
			}
			l.i++
		}
	}
	return "unterminated string"
}

func checkDate(iv *invocation) string {
	for _, f := range iv.pa.values("f", "file") {
		iv.files = append(iv.files, synthetic(f)) // echoed back in error messages
	}
	for _, w := range iv.pa.ops {
		if !strings.HasPrefix(w.val, "+") {
			return iv.failf("operand %s sets the clock", w.val)
		}
	}
	return ""
}

// maxCwd bounds the directory a chain of cds is followed to: PATH_MAX.
const maxCwd = 4096

// checkCd follows static cd targets so that later relative reads are
// checked where they land; targets known only at run time were found by
// prescan.
func checkCd(iv *invocation) string {
	switch len(iv.pa.ops) {
	case 0:
		iv.sc.cwd = "~"
		iv.a.out.Reads = append(iv.a.out.Reads, "~")
		return ""
	case 1:
	default:
		return iv.failf("too many arguments")
	}
	w := iv.pa.ops[0]
	if w.dyn || w.is("-") {
		iv.sc.cwdUnknown = true
		return ""
	}
	// The target is read (listed) by what follows: it must be a read
	// root like any other read target.
	iv.a.out.Reads = append(iv.a.out.Reads, iv.sc.paths(w.val)...)
	t := w.val
	if isRelative(t) && iv.sc.cwd != "" {
		if len(iv.sc.cwd)+len(t) < maxCwd {
			t = path.Join(iv.sc.cwd, t)
		} else {
			// Past PATH_MAX the directory is not followed: each later
			// path would repeat it (cd a && cd b && ... thousands long
			// cost the square of their length).
			iv.sc.cwdUnknown = true
		}
	}
	if credentialPath(t, w.glob) {
		return iv.failf("changes into credential store %s", t)
	}
	iv.sc.cwd = t
	return ""
}

// anyOperands takes every argument of a styleAny program that is not an
// option as a path it reads.
func anyOperands(iv *invocation) string {
	for _, w := range iv.args {
		if !strings.HasPrefix(w.val, "-") || w.dyn {
			iv.files = append(iv.files, w)
		}
	}
	if len(iv.files) == 0 && !iv.ic.implicit {
		iv.files = []wordInfo{synthetic(".")} // ls and du list the working directory
	}
	return ""
}

// checkPrintenv allows printing named variables only, and only names
// known to be harmless: printenv alone prints them all.
func checkPrintenv(iv *invocation) string {
	for _, w := range iv.pa.ops {
		if w.dyn || !knowledge.HarmlessVar(w.val) {
			return iv.failf("prints %s, which is not known to be harmless", w.val)
		}
	}
	return ""
}

// checkPs accepts options from allowlists only: UNIX-style clusters
// ("-ef", whose letters psDash lists; -E prints environments on macOS
// and -e on FreeBSD stands for every process on Linux), BSD-style words
// without a dash ("aux"; letters from psBSD: e, which prints
// environments, is not one), the long options psLong lists, and
// process numbers. A letter that takes a value (-o pid, up1) takes the
// rest of its word, else the next word. Run-time words could be any of
// them.
func checkPs(iv *invocation) string {
	for i := 0; i < len(iv.args); i++ {
		w := iv.args[i]
		if w.dyn || w.glob {
			return iv.failf("argument %s is only known at run time", w.val)
		}
		v := w.val
		var flags, valued string
		switch {
		case strings.HasPrefix(v, "--"):
			name, _, hasVal := strings.Cut(v[2:], "=")
			takes, ok := psLong[name]
			if !ok {
				return iv.failf("option --%s is not allowed", name)
			}
			if takes && !hasVal {
				i++ // the value
			}
			continue
		case strings.HasPrefix(v, "-"):
			flags, valued, v = psDash, psValued, v[1:]
		case v != "" && strings.Trim(v, "0123456789,") == "":
			continue // process numbers
		default:
			flags, valued = psBSD, psBSDValued
		}
		if v == "" {
			return iv.failf("argument %s is not allowed", w.val)
		}
		for k := 0; k < len(v); k++ {
			c := v[k]
			switch {
			case strings.IndexByte(valued, c) >= 0:
				if k == len(v)-1 {
					i++ // the value is the next word
				}
				k = len(v)
			case c == 'E' || c == 'e' && flags == psBSD:
				// Not listed for what they do: say it.
				return iv.failf("%s prints process environments", w.val)
			case strings.IndexByte(flags, c) < 0:
				return iv.failf("%s: option %q is not allowed", w.val, c)
			}
		}
	}
	return ""
}

// The letters and long options ps may take (procps and BSD), without
// those that print environments (BSD e, macOS -E) or read or write
// files.
const (
	psDash      = "AadefFHjlLMNTwxyZcPmV"
	psBSD       = "auxwfjlvrThHcnmSsLgZXV"
	psBSDValued = "oOptUk"
)

// psValued are procps's short options that take a value; psLong maps
// its long options to whether they take one.
const psValued = "oOpuUgGtCqsk"

var psLong = map[string]bool{"format": true, "sort": true, "pid": true, "ppid": true, "user": true,
	"User": true, "group": true, "Group": true, "tty": true, "sid": true, "cols": true, "columns": true,
	"lines": true, "rows": true, "width": true, "quick-pid": true,
	"forest": false, "no-headers": false, "no-heading": false, "headers": false, "deselect": false, "help": false,
	"version": false, "cumulative": false, "info": false}

// checkLsof accepts lsof's options from allowlists (see the table's
// comment): clusters of flags after "-" (lsofDash) or "+" (lsofPlus),
// where a letter that takes a value (lsofValued) or may take one
// (lsofOptional) ends the cluster; a required value missing from the
// cluster is the next word, which may not look like an option. Other
// words are files whose users lsof lists.
func checkLsof(iv *invocation) string {
	for i := 0; i < len(iv.args); i++ {
		w := iv.args[i]
		if w.dyn || w.lead {
			return iv.failf("argument %s is only known at run time", w.val)
		}
		v := w.val
		var flags string
		switch {
		case v == "--":
			return ""
		case strings.HasPrefix(v, "-") && len(v) > 1:
			flags = lsofDash
		case strings.HasPrefix(v, "+") && len(v) > 1:
			flags = lsofPlus
		default:
			continue
		}
	cluster:
		for k := 1; k < len(v); k++ {
			c := v[k]
			switch {
			case strings.IndexByte(lsofValued, c) >= 0 && strings.IndexByte(flags, c) >= 0:
				if k == len(v)-1 {
					i++
					if i >= len(iv.args) || iv.args[i].dyn || strings.HasPrefix(iv.args[i].val, "-") || strings.HasPrefix(iv.args[i].val, "+") {
						return iv.failf("%s needs a value", w.val)
					}
				}
				break cluster
			case strings.IndexByte(lsofOptional, c) >= 0 && strings.IndexByte(flags, c) >= 0:
				break cluster
			case strings.IndexByte(flags, c) < 0:
				return iv.failf("%s: option %q is not allowed", w.val, c)
			}
		}
	}
	return ""
}

// lsof's letters: those allowed after "-" and after "+"; of them, those
// that take a value, and those that may.
const (
	lsofDash     = "?abCcdEFgHhiKLlNnOoPprRSsTtUuVvwXxZz"
	lsofPlus     = "cdDEfLrw"
	lsofValued   = "cdDpu"
	lsofOptional = "fFgiKLorsSTxzZ"
)

// checkTee: tee writes its operands; only /dev/null is harmless.
var teeOpts = compileOpts("a i p append ignore-interrupts output-error::", false)

func checkTee(iv *invocation) string {
	pa, pe := parseGNU(teeOpts, nil, iv.args, false, false)
	if pe != nil {
		return iv.failf("%s", pe.why)
	}
	for _, w := range pa.ops {
		if !w.is("/dev/null") {
			iv.a.out.Writes = append(iv.a.out.Writes, iv.sc.paths(w.val)...)
			return iv.failf("writes to %s", w.val)
		}
	}
	return ""
}

// checkPrintf: printf -v assigns a variable (and its name may hold a
// subscript that runs code), so the format must be static and not an
// option; the remaining arguments are only printed.
func checkPrintf(iv *invocation) string {
	args := iv.args
	if len(args) > 0 && args[0].is("--") {
		args = args[1:]
	}
	if len(args) == 0 {
		return iv.failf("needs a format")
	}
	if f := args[0]; f.dyn || f.glob || strings.HasPrefix(f.val, "-") {
		return iv.failf("format %s must be static and not an option", f.val)
	}
	return ""
}

// checkTest: test/[ with -v or -R evaluate array subscripts, which can run
// code. A run-time value could land in operator position, so quoted
// run-time words are accepted only where POSIX's argument-count rules
// make them operands: [ "$x" ], [ -n "$x" ], [ "$x" = "$y" ]. Unquoted ones
// may split into several words and are never accepted.
func checkTest(iv *invocation) string {
	args := iv.args
	if iv.name == "[" {
		if len(args) == 0 || !args[len(args)-1].is("]") {
			return iv.failf("missing ]")
		}
		args = args[:len(args)-1]
	}
	for _, w := range args {
		if w.split || w.glob {
			return iv.failf("argument %s may split into several words", w.val)
		}
		if w.is("-v") || w.is("-R") {
			return iv.failf("%s evaluates subscripts", w.val)
		}
	}
	static := func(ws ...wordInfo) bool {
		for _, w := range ws {
			if w.dyn {
				return false
			}
		}
		return true
	}
	switch len(args) {
	case 0, 1:
		return ""
	case 2:
		if static(args[0]) && testUnary[args[0].val] {
			return ""
		}
	case 3:
		if static(args[1]) && testBinary[args[1].val] {
			return ""
		}
		// [ ! -f "$x" ]: with a first "!" and a second word that is no
		// binary operator, the last is the negated unary test's operand.
		if static(args[0], args[1]) && args[0].val == "!" && testUnary[args[1].val] && args[1].val != "!" {
			return ""
		}
	}
	if !static(args...) {
		return iv.failf("run-time arguments are only allowed as operands")
	}
	return ""
}

var testUnary = map[string]bool{"!": true, "-a": true, "-b": true, "-c": true, "-d": true, "-e": true, "-f": true,
	"-g": true, "-h": true, "-k": true, "-p": true, "-r": true, "-s": true, "-t": true, "-u": true, "-w": true, "-x": true,
	"-G": true, "-L": true, "-N": true, "-O": true, "-S": true, "-z": true, "-n": true, "-o": true}

var testBinary = map[string]bool{"=": true, "==": true, "!=": true, "<": true, ">": true, "-eq": true, "-ne": true,
	"-lt": true, "-le": true, "-gt": true, "-ge": true, "-nt": true, "-ot": true, "-ef": true}

// checkRead: read assigns variables; names must be plain (a[$(cmd)] would
// run cmd) and the script's own (localName): an exported one, such as
// https_proxy, reaches the programs started after it. Where the names
// count as set is the analysis's (readNames).
func checkRead(iv *invocation) string {
	for _, w := range iv.pa.ops {
		if w.dyn || !isName(w.val) {
			return iv.failf("variable name %s is not plain", w.val)
		}
		if !localName(w.val) {
			return iv.failf("sets %s, which the shell or the programs it starts may read", w.val)
		}
	}
	return ""
}

// specialVar reports a variable whose value steers the shell or the
// programs it starts (PATH, HOME, CDPATH, IFS, GIT_*, LD_*...): setting
// it from data makes later read-only commands run or read something else.
// Every upper-case name counts; lower-case ones are the script's own.
func specialVar(name string) bool {
	switch name {
	case "path", "cdpath", "fpath", "manpath", "module_path", "mailpath", "fignore", "psvar":
		// zsh ties these to PATH, CDPATH, FPATH...
		return true
	}
	return name != "" && strings.ToUpper(name) == name && strings.ContainsAny(name, "ABCDEFGHIJKLMNOPQRSTUVWXYZ")
}

// noFilesFrom refuses --files0-from, whose file's content error messages
// print, in any abbreviation GNU getopt accepts (--f, --files0).
func noFilesFrom(iv *invocation) string {
	for _, w := range iv.args {
		name, _, _ := strings.Cut(w.val, "=")
		if len(name) > 2 && (strings.HasPrefix("--files0-from", name) || strings.HasPrefix("--files-from", name)) {
			return iv.failf("%s reads names from a file", w.val)
		}
	}
	return ""
}

// checkXxd parses xxd's single-dash options; a second operand is an output
// file.
var (
	xxdFlags = map[string]bool{"-a": true, "-autoskip": true, "-b": true, "-bits": true, "-C": true, "-capitalize": true,
		"-d": true, "-e": true, "-E": true, "-EBCDIC": true, "-h": true, "-help": true, "-i": true, "-include": true,
		"-p": true, "-ps": true, "-postscript": true, "-plain": true, "-r": true, "-revert": true, "-u": true, "-v": true, "-version": true}
	xxdValued = []string{"-c", "-cols", "-g", "-groupsize", "-l", "-len", "-o", "-s", "-seek", "-n", "-name", "-R"}
)

func checkXxd(iv *invocation) string {
	flags, valued := xxdFlags, xxdValued
	var ops []wordInfo
	for i := 0; i < len(iv.args); i++ {
		w := iv.args[i]
		if w.dyn || w.glob {
			return iv.failf("argument %s is only known at run time", w.val)
		}
		switch {
		case flags[w.val]:
			continue
		case len(w.val) > 1 && w.val[0] == '-':
			ok := false
			for _, v := range valued {
				if w.val == v {
					i++
					ok = i < len(iv.args)
					break
				}
			}
			if !ok && len(w.val) > 2 && strings.Contains("+-0123456789", w.val[2:3]) {
				for _, v := range valued {
					ok = ok || len(v) == 2 && w.val[:2] == v // stuck value: -c8, -s+16
				}
			}
			if !ok {
				return iv.failf("option %s is not allowed", w.val)
			}
		default:
			ops = append(ops, w)
		}
	}
	if len(ops) > 1 {
		iv.a.out.Writes = append(iv.a.out.Writes, iv.sc.paths(ops[1].val)...)
		return iv.failf("writes to %s", ops[1].val)
	}
	iv.files = ops
	return ""
}
