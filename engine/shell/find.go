package shell

import (
	"regexp"
	"strings"
)

// findPrimaries lists the find primaries, operators and options that only
// test or print, with the number of arguments each takes. -exec, -execdir,
// -ok, -okdir (run programs), -delete, and -fprint, -fprint0, -fprintf,
// -fls (write files) are left out.
var findPrimaries = map[string]int{
	"-name": 1, "-iname": 1, "-path": 1, "-ipath": 1, "-wholename": 1, "-iwholename": 1, "-regex": 1, "-iregex": 1,
	"-lname": 1, "-ilname": 1, "-type": 1, "-xtype": 1, "-size": 1, "-mtime": 1, "-mmin": 1, "-atime": 1, "-amin": 1,
	"-ctime": 1, "-cmin": 1, "-used": 1, "-newer": 1, "-anewer": 1, "-cnewer": 1, "-perm": 1, "-user": 1, "-group": 1,
	"-uid": 1, "-gid": 1, "-links": 1, "-inum": 1, "-samefile": 1, "-maxdepth": 1, "-mindepth": 1, "-regextype": 1,
	"-fstype": 1, "-context": 1, "-printf": 1,
	"-nouser": 0, "-nogroup": 0, "-empty": 0, "-readable": 0, "-writable": 0, "-executable": 0, "-depth": 0, "-d": 0,
	"-prune": 0, "-print": 0, "-print0": 0, "-ls": 0, "-quit": 0, "-true": 0, "-false": 0, "-follow": 0, "-mount": 0,
	"-xdev": 0, "-noleaf": 0, "-daystart": 0, "-ignore_readdir_race": 0, "-noignore_readdir_race": 0, "-warn": 0,
	"-nowarn": 0, "-not": 0, "!": 0, "-a": 0, "-and": 0, "-o": 0, "-or": 0, "(": 0, ")": 0, ",": 0,
	"-help": 0, "--help": 0, "-version": 0, "--version": 0,
}

// findWrites lists the primaries that write the file named by their first
// argument, to report it.
var findWrites = map[string]bool{"-fprint": true, "-fprint0": true, "-fprintf": true, "-fls": true}

var findNewerXY = regexp.MustCompile(`^-newer[aBcmt][aBcmt]$`)

// checkFind parses find [-H|-L|-P|-D opts|-Olevel] [paths] [expression]
// and accepts only expressions made of the primaries, operators and
// options in findPrimaries, each with its arguments. The start points
// are the directories it lists (iv.files).
func checkFind(iv *invocation) string {
	args := iv.args
	for _, w := range args {
		// A glob may expand to several words, and one starting with "-"
		// to a primary: a file named -delete matches -*.
		if w.lead || w.glob && strings.HasPrefix(w.val, "-") {
			return iv.failf("glob %s may expand to a find expression", w.val)
		}
	}
	i := 0
	for i < len(args) {
		v := args[i].val
		switch {
		case v == "-H" || v == "-L" || v == "-P":
			i++
			continue
		case v == "-D":
			i += 2
			continue
		case strings.HasPrefix(v, "-O") && allDigits(v[2:]):
			i++
			continue
		}
		break
	}
	for i < len(args) && !findExprStart(args[i].val) {
		iv.files = append(iv.files, args[i]) // start points
		i++
	}
	for i < len(args) {
		v := args[i].val
		n, ok := findPrimaries[v]
		switch {
		case ok:
		case findNewerXY.MatchString(v):
			n = 1
		case findWrites[v]:
			if i+1 < len(args) {
				iv.a.out.Writes = append(iv.a.out.Writes, iv.sc.paths(args[i+1].val)...)
			}
			return iv.failf("%s writes a file", v)
		case v == "-exec" || v == "-execdir" || v == "-ok" || v == "-okdir":
			return iv.failf("%s runs a program", v)
		case v == "-delete":
			return iv.failf("-delete removes files")
		default:
			return iv.failf("%s is not an allowed find primary", v)
		}
		if i+n >= len(args) {
			return iv.failf("%s needs an argument", v)
		}
		i += 1 + n
	}
	return ""
}

// findExprStart reports whether v starts find's expression.
func findExprStart(v string) bool {
	return strings.HasPrefix(v, "-") || v == "(" || v == "!" || v == ")" || v == ","
}
