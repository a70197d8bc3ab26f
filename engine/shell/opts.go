package shell

import (
	"strings"
)

// argKind says whether and how an option takes a value.
type argKind uint8

const (
	argNone argKind = iota + 1 // a flag: -a, --all
	argReq                     // value stuck (-n5, --lines=5) or in the next word
	argOpt                     // value only when stuck (-M50%, --color=auto)
	argNext                    // git's default-able value: the next word unless absent or an option
	argTwo                     // two values in the next words (jq --arg NAME VALUE)
)

// optset is a compiled set of options. Options are written in a small
// language so that the program table stays data:
//
//	a        short flag -a            all       long flag --all
//	n:       -n VALUE or -nVALUE      lines:    --lines VALUE or --lines=VALUE
//	M::      -M or -MVALUE only       color::   --color or --color=VALUE only
//	n~       -n [VALUE]               merged~   --merged [VALUE] (value if the next word is not an option)
//	arg:2    --arg NAME VALUE
//	#        -NUM (head -20, git log -5)
//
// With goStyle, every name is a long option spelled -name or --name.
type optset struct {
	short   [128]argKind
	long    map[string]argKind
	numeric bool
}

// compileOpts parses the option language; it panics on malformed input
// because the table is static and tested.
func compileOpts(dsl string, goStyle bool) *optset {
	o := &optset{long: map[string]argKind{}}
	for _, tok := range strings.Fields(dsl) {
		if tok == "#" {
			o.numeric = true
			continue
		}
		kind := argNone
		switch {
		case strings.HasSuffix(tok, ":2"):
			kind, tok = argTwo, strings.TrimSuffix(tok, ":2")
		case strings.HasSuffix(tok, "::"):
			kind, tok = argOpt, strings.TrimSuffix(tok, "::")
		case strings.HasSuffix(tok, ":"):
			kind, tok = argReq, strings.TrimSuffix(tok, ":")
		case strings.HasSuffix(tok, "~"):
			kind, tok = argNext, strings.TrimSuffix(tok, "~")
		}
		if tok == "" || strings.ContainsAny(tok, ":~=") {
			panic("shell: bad option spec " + dsl)
		}
		if len(tok) == 1 && !goStyle {
			if tok[0] >= 128 || o.short[tok[0]] != 0 {
				panic("shell: bad or duplicate short option " + tok)
			}
			o.short[tok[0]] = kind
			continue
		}
		if _, dup := o.long[tok]; dup {
			panic("shell: duplicate option " + tok + " in " + dsl)
		}
		o.long[tok] = kind
	}
	return o
}

// known reports whether name is an option of the set.
func (o *optset) known(name string) bool {
	if len(name) == 1 && name[0] < 128 && o.short[name[0]] != 0 {
		return true
	}
	return o.long[name] != 0
}

// popt is one parsed option.
type popt struct {
	name string // "n", "lines", or "#" for -NUM
	val  string
	has  bool // a value was given
	// glob: the word holding the value has an unquoted glob
	// metacharacter, so bash may replace it with file names first.
	glob bool
}

// parsedArgs is a command's arguments split into options and operands.
type parsedArgs struct {
	opts []popt
	ops  []wordInfo
	// beforeDD is how many operands came before a "--" (len(ops) when
	// there was none).
	beforeDD int
	sawDD    bool
	// optsEnd is how many operands came before the program stopped
	// reading options: at a "--", or at the first static operand for a
	// program whose options end there (posix); -1 when it never stopped.
	// A run-time word is an operand for sure only from there on: before
	// it, it may start with "-".
	optsEnd int
}

// has reports whether any of the named options was given.
func (pa *parsedArgs) has(names ...string) bool {
	for _, o := range pa.opts {
		for _, n := range names {
			if o.name == n {
				return true
			}
		}
	}
	return false
}

// values returns the values given to any of the named options.
func (pa *parsedArgs) values(names ...string) []string {
	var vs []string
	for _, o := range pa.opts {
		for _, n := range names {
			if o.name == n && o.has {
				vs = append(vs, o.val)
			}
		}
	}
	return vs
}

// staticValues returns the values given to any of the named options
// that bash passes as written: not those in words with an unquoted glob,
// which bash may replace with file names.
func (pa *parsedArgs) staticValues(names ...string) []string {
	var vs []string
	for _, o := range pa.opts {
		if !o.has || o.glob {
			continue
		}
		for _, n := range names {
			if o.name == n {
				vs = append(vs, o.val)
			}
		}
	}
	return vs
}

// parseError is a reason to reject, with the file an output option names.
type parseError struct {
	why   string
	write string
}

// startsOption reports whether w may be read as an option by getopt.
func startsOption(w *wordInfo) bool { return !w.dyn && len(w.val) > 1 && w.val[0] == '-' }

// parseGNU splits args the way GNU getopt_long does: options may follow
// operands unless posix is set, "--" ends options, short flags combine (-rn),
// and values may be stuck (-n5, --lines=5). An option that is not in o
// rejects the command: unknown long options, including abbreviations of
// known ones, are never guessed at. wo lists options that name an output
// file, only to report the file. safeOpts allows words that may expand to
// options at run time (leading globs), because every option of the
// program is harmless.
func parseGNU(o, wo *optset, args []wordInfo, posix, safeOpts bool) (parsedArgs, *parseError) {
	pa := parsedArgs{optsEnd: -1}
	dd := false
	for i := 0; i < len(args); i++ {
		w := &args[i]
		if dd || w.dyn {
			// A run-time word does not end the options for sure: the
			// program reads it as one if it starts with "-".
			pa.ops = append(pa.ops, *w)
			continue
		}
		if w.lead && !safeOpts {
			return pa, &parseError{why: "glob " + w.val + " may expand to an option"}
		}
		v := w.val
		if v == "--" {
			dd = true
			pa.beforeDD, pa.sawDD, pa.optsEnd = len(pa.ops), true, len(pa.ops)
			continue
		}
		if len(v) < 2 || v[0] != '-' {
			if posix {
				dd = true
				pa.optsEnd = len(pa.ops)
			}
			pa.ops = append(pa.ops, *w)
			continue
		}
		glob := w.glob
		next := func() (string, bool) {
			if i+1 >= len(args) {
				return "", false
			}
			i++
			glob = args[i].glob
			return args[i].val, true
		}
		if v[1] == '-' {
			name, val, eq := strings.Cut(v[2:], "=")
			k := o.long[name]
			if k == 0 {
				pe := &parseError{why: "option --" + name + " is not allowed"}
				if wk := writeKind(wo, name); wk != 0 {
					pe.why = "option --" + name + " writes files"
					if wk != argOpt {
						if !eq {
							val, _ = next()
						}
						pe.why, pe.write = "option --"+name+" writes to "+val, val
					}
				}
				return pa, pe
			}
			switch k {
			case argNone:
				if eq {
					return pa, &parseError{why: "option --" + name + " takes no value"}
				}
			case argReq:
				if !eq {
					if val, eq = next(); !eq {
						return pa, &parseError{why: "option --" + name + " needs a value"}
					}
				}
			case argNext:
				if !eq && i+1 < len(args) && !startsOption(&args[i+1]) {
					val, eq = next()
				}
			case argTwo:
				if eq {
					return pa, &parseError{why: "option --" + name + " takes two separate values"}
				}
				n1, ok1 := next()
				_, ok2 := next()
				if !ok1 || !ok2 {
					return pa, &parseError{why: "option --" + name + " needs two values"}
				}
				val, eq = n1, true
			}
			pa.opts = append(pa.opts, popt{name: name, val: val, has: eq, glob: glob})
			continue
		}
		if o.numeric && allDigits(v[1:]) {
			pa.opts = append(pa.opts, popt{name: "#", val: v[1:], has: true})
			continue
		}
		for j := 1; j < len(v); j++ {
			c := v[j]
			var k argKind
			if c < 128 {
				k = o.short[c]
			}
			name := string(c)
			if k == 0 {
				pe := &parseError{why: "option -" + name + " is not allowed"}
				if wk := writeKind(wo, name); wk != 0 {
					pe.why = "option -" + name + " writes files"
					if wk != argOpt {
						val := v[j+1:]
						if val == "" {
							val, _ = next()
						}
						pe.why, pe.write = "option -"+name+" writes to "+val, val
					}
				}
				return pa, pe
			}
			if k == argNone {
				pa.opts = append(pa.opts, popt{name: name})
				continue
			}
			val, has := v[j+1:], j+1 < len(v)
			switch {
			case has:
			case k == argReq || k == argTwo:
				if val, has = next(); !has {
					return pa, &parseError{why: "option -" + name + " needs a value"}
				}
			case k == argNext:
				if i+1 < len(args) && !startsOption(&args[i+1]) {
					val, has = next()
				}
			}
			pa.opts = append(pa.opts, popt{name: name, val: val, has: has, glob: glob})
			break
		}
	}
	return pa, nil
}

// writeKind returns how the write option name takes its file, or 0.
func writeKind(wo *optset, name string) argKind {
	switch {
	case wo == nil:
		return 0
	case len(name) == 1 && name[0] < 128:
		return wo.short[name[0]]
	}
	return wo.long[name]
}

// parseGoFlags splits args the way Go's flag package does: -name and
// --name are the same, values are "=value" or the next word for non-boolean
// flags, and parsing stops at the first operand.
func parseGoFlags(o *optset, args []wordInfo) (parsedArgs, *parseError) {
	pa := parsedArgs{optsEnd: -1}
	for i := 0; i < len(args); i++ {
		w := &args[i]
		if w.dyn || w.lead {
			return pa, &parseError{why: "argument " + w.val + " may expand to a flag"}
		}
		v := w.val
		if v == "--" {
			pa.ops = append(pa.ops, args[i+1:]...)
			break
		}
		if len(v) < 2 || v[0] != '-' {
			pa.ops = append(pa.ops, args[i:]...)
			break
		}
		name := strings.TrimPrefix(v[1:], "-")
		name, val, eq := strings.Cut(name, "=")
		switch o.long[name] {
		case argNone:
			if eq && val != "true" && val != "false" {
				return pa, &parseError{why: "flag -" + name + " takes no value"}
			}
		case argReq:
			if !eq {
				if i+1 >= len(args) {
					return pa, &parseError{why: "flag -" + name + " needs a value"}
				}
				i++
				val, eq = args[i].val, true
			}
		case argOpt:
		default:
			return pa, &parseError{why: "flag -" + name + " is not allowed"}
		}
		pa.opts = append(pa.opts, popt{name: name, val: val, has: eq})
	}
	for _, w := range pa.ops {
		if startsOption(&w) {
			return pa, &parseError{why: "flag " + w.val + " after operands"}
		}
	}
	return pa, nil
}
