package shell

import (
	"fmt"
)

// checkSed accepts a sed run only when every script parses completely in
// a small grammar, read the way GNU sed's compiler reads it (compile.c):
// addresses (N, $, first~step, /re/ and \cREc with I and M, and N,+M or
// N,~M ranges), and commands that only print or edit the pattern and hold
// spaces: { } # = d D g G h H l n N p P q Q x z s y. Everything that runs
// a program (e, s///e), reads or writes a file (r R w W, s///w), or whose
// text argument other seds delimit differently (a i c, labels) is
// refused, as is anything the parser does not know.
func checkSed(iv *invocation) string {
	if iv.pa.has("version", "help") {
		if len(iv.args) != 1 {
			return iv.failf("--version and --help take no other arguments")
		}
		return ""
	}
	scripts := iv.pa.values("e", "expression")
	files := iv.pa.ops
	if len(scripts) == 0 {
		if len(files) == 0 {
			return iv.failf("needs a script")
		}
		scripts = []string{files[0].val}
		files = files[1:]
	}
	// A script word with a live glob may expand to another script: 1*
	// matches a file named "1e id".
	isFile := map[int]bool{}
	for _, f := range files {
		if f.pos >= 0 {
			isFile[f.pos] = true
		}
	}
	for _, w := range iv.args {
		if w.glob && (w.pos < 0 || !isFile[w.pos]) {
			return iv.failf("glob %s may expand to another script", w.val)
		}
	}
	if _, why := sedParse(scripts); why != "" {
		return iv.failf("%s", why)
	}
	iv.files = files
	return ""
}

// sedCmd is one command as GNU sed compiles it. Only the tests look past
// the verdict: they print it the way sed --debug prints programs.
type sedCmd struct {
	a1, a2 *sedAddr
	bang   bool
	cmd    byte
	arg    int // q, Q, l: exit code or line length; -1 when absent
	re     sedRegex
	text   [2]string // s: replacement; y: source and target, as read
	global bool
	print  bool
	numb   int
}

// sedAddr kinds.
const (
	sedNum    = iota // N
	sedNumMod        // first~step
	sedLast          // $
	sedRe            // /re/
	sedPlus          // ,+N
	sedTilde         // ,~N
)

type sedAddr struct {
	kind    int
	n, step int
	re      sedRegex
}

// sedRegex is a regex as match_slash leaves it (delimiter escapes
// removed), with its I/i and M/m flags.
type sedRegex struct {
	pat          string
	icase, mline bool
}

const sedEOF = -1

// sedParser follows compile_program. Brace depth spans the -e
// scripts, which sed compiles one after the other into one program.
type sedParser struct {
	s     string
	i     int
	depth int
	cmds  []sedCmd
}

// sedParse parses the -e scripts of one sed run; it returns a reason to
// refuse, or the commands.
func sedParse(scripts []string) ([]sedCmd, string) {
	p := &sedParser{}
	for _, s := range scripts {
		// Multibyte characters change how sed splits a script in some
		// locales; control characters are not worth the doubt.
		for i := 0; i < len(s); i++ {
			if c := s[i]; (c < ' ' || c > '~') && c != '\n' && c != '\t' {
				return nil, fmt.Sprintf("script has byte %#x, which is not printable ASCII", c)
			}
		}
		p.s, p.i = s, 0
		if why := p.program(); why != "" {
			return nil, why
		}
	}
	if p.depth != 0 {
		return nil, "unmatched {"
	}
	return p.cmds, ""
}

func (p *sedParser) in() int {
	if p.i >= len(p.s) {
		return sedEOF
	}
	p.i++
	return int(p.s[p.i-1])
}

// unread is savchar: EOF is not pushed back.
func (p *sedParser) unread(c int) {
	if c != sedEOF {
		p.i--
	}
}

// nonblank is in_nonblank: blanks are spaces and tabs only.
func (p *sedParser) nonblank() int {
	for {
		if c := p.in(); c != ' ' && c != '\t' {
			return c
		}
	}
}

func sedDigit(c int) bool { return c >= '0' && c <= '9' }

// integer is in_integer: digits from c on, the first non-digit pushed
// back; no digits give 0. Long numbers overflow in sed: refused.
func (p *sedParser) integer(c int) (int, bool) {
	n, digits := 0, 0
	for sedDigit(c) {
		n = n*10 + c - '0'
		digits++
		c = p.in()
	}
	p.unread(c)
	return n, digits <= 9
}

// endOfCmd is read_end_of_cmd.
func (p *sedParser) endOfCmd() string {
	switch c := p.nonblank(); c {
	case '}', '#':
		p.unread(c)
	case sedEOF, '\n', ';':
	default:
		return fmt.Sprintf("unexpected %q after a command", rune(c))
	}
	return ""
}

// delim accepts the delimiters whose handling is the same in every
// version and locale: printable ASCII punctuation other than backslash.
func sedDelim(c int) bool {
	return c > ' ' && c <= '~' && c != '\\' && !(c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z')
}

// slash is match_slash: text up to an unescaped delimiter. A backslash
// before the delimiter is dropped (kept before & in a replacement), one
// before a newline is dropped and the newline kept; a raw newline ends
// the text unterminated. In a regex, a bracket expression is read whole:
// the delimiter inside it does not end the regex.
func (p *sedParser) slash(delim int, regex bool) (string, bool) {
	var b []byte
	c := 0
	for {
		c = p.in()
		if c == sedEOF || c == '\n' {
			break
		}
		if c == delim {
			return string(b), true
		}
		if c == '\\' {
			c = p.in()
			if c == sedEOF {
				break
			}
			if c != '\n' && (c != delim || !regex && c == '&') {
				b = append(b, '\\')
			}
		} else if c == '[' && regex {
			b = append(b, '[')
			c = p.bracket(&b)
			if c != ']' {
				break
			}
		}
		b = append(b, byte(c))
	}
	if c == '\n' {
		p.unread(c)
	}
	return "", false
}

// bracket is snarf_char_class: after "[", an optional "^", then "]" as
// the first member, then members up to the closing "]"; "[:", "[." and
// "[=" open a class, collating symbol or equivalence class that only the
// same character before "]" closes. It returns the closing "]", or EOF or
// newline when the bracket is unterminated.
func (p *sedParser) bracket(b *[]byte) int {
	c := p.in()
	if c == '^' {
		*b = append(*b, '^')
		c = p.in()
	}
	if c == ']' {
		*b = append(*b, ']')
		c = p.in()
	}
	// 0 outside a class, 1 after "[", 2 inside "[:" (or . =), 3 after
	// the closing ":" (or . =).
	state, open := 0, 0
	for {
		reset := true
		switch c {
		case sedEOF, '\n':
			return c
		case '.', ':', '=':
			if state == 1 {
				open, state, reset = c, 2, false
			} else if state == 2 && c == open {
				state, reset = 3, false
			}
		case '[':
			if state == 0 {
				state = 1
			}
			reset = false
		case ']':
			if state == 0 || state == 1 {
				return c
			}
			if state == 3 {
				state = 0
			}
		}
		if reset {
			state &^= 1
		}
		*b = append(*b, byte(c))
		c = p.in()
	}
}

// address is compile_address; it reports false, consuming nothing past c,
// when c starts no address.
func (p *sedParser) address(c int) (*sedAddr, bool, string) {
	switch {
	case c == '/' || c == '\\':
		if c == '\\' {
			c = p.in()
		}
		if !sedDelim(c) {
			return nil, false, "address delimiter not allowed"
		}
		pat, ok := p.slash(c, true)
		if !ok {
			return nil, false, "unterminated address regex"
		}
		a := &sedAddr{kind: sedRe, re: sedRegex{pat: pat}}
		for {
			c = p.nonblank()
			switch c {
			case 'I':
				a.re.icase = true
				continue
			case 'M':
				a.re.mline = true
				continue
			}
			p.unread(c)
			break
		}
		if pat == "" && (a.re.icase || a.re.mline) {
			return nil, false, "no previous regular expression"
		}
		return a, true, ""
	case sedDigit(c):
		n, ok := p.integer(c)
		if !ok {
			return nil, false, "line number too long"
		}
		a := &sedAddr{kind: sedNum, n: n}
		if c = p.nonblank(); c != '~' {
			p.unread(c)
			return a, true, ""
		}
		step, ok := p.integer(p.nonblank())
		if !ok {
			return nil, false, "step too long"
		}
		if step > 0 {
			a.kind, a.step = sedNumMod, step
		}
		return a, true, ""
	case c == '+' || c == '~':
		c2 := p.nonblank()
		if !sedDigit(c2) {
			return nil, false, "address step without a number"
		}
		step, ok := p.integer(c2)
		if !ok || step == 0 {
			return nil, false, "address step not allowed"
		}
		kind := sedPlus
		if c == '~' {
			kind = sedTilde
		}
		return &sedAddr{kind: kind, step: step}, true, ""
	case c == '$':
		return &sedAddr{kind: sedLast}, true, ""
	}
	return nil, false, ""
}

// program is compile_program for one script.
func (p *sedParser) program() string {
	for {
		c := p.in()
		for c == ';' || c == ' ' || c == '\t' || c == '\n' {
			c = p.in()
		}
		if c == sedEOF {
			return ""
		}
		cmd := sedCmd{arg: -1}
		a, ok, why := p.address(c)
		if why != "" {
			return why
		}
		if ok {
			if a.kind == sedPlus || a.kind == sedTilde {
				return "+N or ~N as the first address"
			}
			cmd.a1 = a
			c = p.nonblank()
			if c == ',' {
				a2, ok, why := p.address(p.nonblank())
				if why != "" {
					return why
				}
				if !ok {
					return "unexpected ,"
				}
				cmd.a2 = a2
				c = p.nonblank()
			}
			if a.kind == sedNum && a.n == 0 && (cmd.a2 == nil || cmd.a2.kind != sedRe) {
				return "invalid usage of line address 0"
			}
		}
		if c == '!' {
			if cmd.a1 == nil {
				return "! without an address"
			}
			cmd.bang = true
			if c = p.nonblank(); c == '!' {
				return "multiple !s"
			}
		}
		if c == sedEOF {
			return "missing command"
		}
		cmd.cmd = byte(c)
		switch c {
		case '#':
			if cmd.a1 != nil {
				return "comments don't accept any addresses"
			}
			for c != sedEOF && c != '\n' {
				c = p.in()
			}
			continue
		case '{':
			p.depth++
		case '}':
			if p.depth == 0 {
				return "unexpected }"
			}
			if cmd.a1 != nil {
				return "} doesn't want any addresses"
			}
			if why := p.endOfCmd(); why != "" {
				return why
			}
			p.depth--
		case ':', 'b', 't', 'T':
			// Other seds end labels elsewhere (BSD sed at the newline
			// only), and branches make loops that never end.
			return "labels and branches are not allowed"
		case 'q', 'Q', 'l':
			if c != 'l' && cmd.a2 != nil {
				return "command only uses one address"
			}
			if c = p.nonblank(); sedDigit(c) {
				if cmd.arg, ok = p.integer(c); !ok {
					return "number too long"
				}
			} else {
				p.unread(c)
			}
			if why := p.endOfCmd(); why != "" {
				return why
			}
		case '=', 'd', 'D', 'g', 'G', 'h', 'H', 'n', 'N', 'p', 'P', 'x', 'z':
			if why := p.endOfCmd(); why != "" {
				return why
			}
		case 's':
			if why := p.substitute(&cmd); why != "" {
				return why
			}
		case 'y':
			d := p.in()
			if !sedDelim(d) {
				return "y delimiter not allowed"
			}
			var ok1, ok2 bool
			cmd.text[0], ok1 = p.slash(d, false)
			cmd.text[1], ok2 = p.slash(d, false)
			if !ok1 || !ok2 {
				return "unterminated `y' command"
			}
			if why := p.endOfCmd(); why != "" {
				return why
			}
		case 'e':
			return "the e command runs a program"
		case 'r', 'R':
			return fmt.Sprintf("the %c command reads a file", c)
		case 'w', 'W':
			return fmt.Sprintf("the %c command writes a file", c)
		default:
			return fmt.Sprintf("command %q is not allowed", rune(c))
		}
		p.cmds = append(p.cmds, cmd)
	}
}

// substitute reads s after the "s": mark_subst_opts for the flags.
func (p *sedParser) substitute(cmd *sedCmd) string {
	d := p.in()
	if !sedDelim(d) {
		return "s delimiter not allowed"
	}
	var ok1, ok2 bool
	cmd.re.pat, ok1 = p.slash(d, true)
	if !ok1 {
		return "unterminated `s' command"
	}
	cmd.text[0], ok2 = p.slash(d, false)
	if !ok2 {
		return "unterminated `s' command"
	}
	for {
		c := p.nonblank()
		switch {
		case c == 'i' || c == 'I':
			cmd.re.icase = true
		case c == 'm' || c == 'M':
			cmd.re.mline = true
		case c == 'p':
			if cmd.print {
				return "multiple `p' options to `s' command"
			}
			cmd.print = true
		case c == 'g':
			if cmd.global {
				return "multiple `g' options to `s' command"
			}
			cmd.global = true
		case sedDigit(c):
			if cmd.numb != 0 {
				return "multiple number options to `s' command"
			}
			n, ok := p.integer(c)
			if !ok || n == 0 {
				return "number option to `s' command not allowed"
			}
			cmd.numb = n
		case c == 'e':
			return "s///e runs the pattern space as a command"
		case c == 'w':
			return "s///w writes a file"
		case c == '}' || c == '#':
			p.unread(c)
			return p.emptyRegex(cmd)
		case c == sedEOF || c == '\n' || c == ';':
			return p.emptyRegex(cmd)
		default:
			return fmt.Sprintf("unknown option to `s': %q", rune(c))
		}
	}
}

// emptyRegex: an empty regex reuses the last one, and takes no flags.
func (p *sedParser) emptyRegex(cmd *sedCmd) string {
	if cmd.re.pat == "" && (cmd.re.icase || cmd.re.mline) {
		return "no previous regular expression"
	}
	return ""
}
