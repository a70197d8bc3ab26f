package shell

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
)

func TestSedScripts(t *testing.T) {
	ok := []string{
		"sed -n '1,20p' f", "sed 's/a/b/g' f", "sed -e 's/a/b/' -e '/x/d' f", "sed -n '/x/{p;q}' f", "sed '1d;$d' f",
		"sed -n '/start/,/end/p' f", "sed 's|a|b|g' f", "sed -E 's/(a)/\\1/' f", "sed 'y/abc/xyz/' f", "sed -n '$=' f",
		"sed 'N;P;D' f", "sed '1~2d' f", "sed '0,/re/d' f", "sed -n '/x/I p' f", "sed '/x/,+2d' f", "sed 's/a/b/2g' f",
		"sed --expression=p -n f", "sed 's#/usr/#/opt/#g' f", "sed 's/a\\/b/c/' f", "sed -n '\\,x,p' f",
		"sed -e '/x/{' -e p -e '}' f", "sed 's/x/y/ # comment' f", "sed --debug -n p f", "sed -z 's/\\n/,/g' f",
		"sed '2q' f", "sed 'q5' f", "sed -n 'l 40' f", "sed 's/\\x1b\\[[0-9;]*m//g' f", "sed --version", "git log | sed 1d",
		"sed '/^$/d;s/  */ /g' f", "sed -n '/x/!p' f", "sed '1!G;h;$!d' f", "sed -n '2,${p}' f",
		// Bracket expressions are read whole: the delimiter inside one
		// does not end the regex, as in GNU sed.
		"sed 's/[/]/x/' f", "sed 's/[]/]/x/g' f", "sed 's/[^]/]/x/' f", "sed 's/[[:alpha:]/]/x/' f", "sed -n '/[/]/p' f",
		"sed 's/[[.-.]/]/x/' f", "sed 's/[[=a=]/]/x/' f", "sed -n '/[/]w f/p' f", "sed 's/[\\]/x/' f",
	}
	bad := []string{
		// Commands that run programs, read or write files.
		"sed '1e id' f", "sed 's/x/y/e' f", "sed 's/[/]/x/w /tmp/f' f", "sed '/x/w f' f", "sed 's/x/y/w out' f",
		"sed 'r /etc/passwd' f", "sed 'R f' f", "sed 'W out' f", "sed 's/x/y/;e' f", "sed 's/[/]/x/e' f",
		"sed 's/[[:alpha:]/]/x/w f' f", "sed 's/a/b/ w f' f", "sed 's/a/b/gw f' f", "sed 's/a/b/ge' f", "sed '1!e id' f",
		"sed -e '/x/{' -e 'w f' -e '}' f", "sed '$!{e id' -e '}' f", "sed 's/[\\]/x/e' f", "sed 's/[]]/x/w f' f",
		"sed 's/[^]]/x/w f' f", "sed 's/[[:a]/]/x/w f' f", "sed '0r /etc/shadow' f", "sed 'y/a/b/;w f' f",
		"sed 's/x/y/\ne id' f", "sed $'s/x/y/\\ne id' f", "sed \"s/x/$y/\" f", "sed 's/x/y/;1e id' f",
		// Text commands, labels and anything unknown.
		"sed 'a foo' f", "sed 'i\\\nfoo' f", "sed 'c x' f", "sed ':a;N;ba' f", "sed ':a;b a' f", "sed F f", "sed v f",
		"sed 'L' f", "sed 's/é/e/' f",
		// Malformed scripts.
		"sed 's/x/y' f", "sed -n '/[/]p/' f", "sed '0p' f", "sed '}' f", "sed '{p' f", "sed 'snanbn' f", "sed '1!!p' f",
		"sed 's/a/b/pp' f", "sed 'y/abc/xyz/w' f", "sed 'p x' f", "sed '+1p' f",
		// Options: in place, script files, --posix; globs in scripts.
		"sed -i s/a/b/ f", "sed -f s.sed f", "sed --file=s.sed f", "sed --in-place=.bak p f", "sed -ni p f",
		"sed --posix p f", "sed 1* f", "sed -e 1* f", "sed -n p *.txt", "sed --version f",
	}
	for _, line := range ok {
		if a := Analyze(line); !a.ReadOnly {
			t.Errorf("Analyze(%q): not read-only (%s), want read-only", line, a.Reason)
		}
	}
	for _, line := range bad {
		if a := Analyze(line); a.ReadOnly {
			t.Errorf("Analyze(%q): read-only, want not", line)
		}
	}
}

// TestSedAgainstGNU checks the parser against GNU sed itself: for every
// script the parser accepts, sed --sandbox (which refuses e, r, w and the
// like) must accept it too, and sed --debug must print the program the
// parser read, command for command. TOOLGATE_SED_SCRIPTS sets how many
// scripts are generated.
func TestSedAgainstGNU(t *testing.T) {
	const sed = "/usr/bin/sed"
	out, err := exec.Command(sed, "--version").Output()
	if err != nil || !bytes.Contains(out, []byte("GNU sed")) {
		t.Skip("GNU sed is not at " + sed)
	}
	if err := exec.Command(sed, "--debug", "-n", "p", "/dev/null").Run(); err != nil {
		t.Skip("this sed has no --debug")
	}
	n := 500
	if v, err := strconv.Atoi(os.Getenv("TOOLGATE_SED_SCRIPTS")); err == nil {
		n = v
	}
	scripts := append([][]string{}, sedCrossCases...)
	r := rand.New(rand.NewPCG(12, 7))
	for len(scripts) < n {
		scripts = append(scripts, []string{sedRandomScript(r)})
	}
	accepted, missed := 0, 0
	for _, s := range scripts {
		cmds, why := sedParse(s)
		args := []string{"--sandbox", "--debug", "-n"}
		for _, e := range s {
			args = append(args, "-e", e)
		}
		cmd := exec.Command(sed, args...)
		cmd.Env = []string{"LC_ALL=C", "PATH=/usr/bin:/bin"}
		cmd.Stdin = strings.NewReader("")
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		runErr := cmd.Run()
		if why != "" {
			if runErr == nil {
				missed++
			}
			continue
		}
		accepted++
		if runErr != nil {
			msg := stderr.String()
			if sedSemanticError(msg) {
				continue
			}
			t.Errorf("script %q: accepted, but GNU sed refuses it: %s", s, msg)
			continue
		}
		want := "SED PROGRAM:\n" + sedRender(cmds)
		if got := stdout.String(); got != want {
			t.Errorf("script %q: sed reads\n%s\nthe parser reads\n%s", s, got, want)
		}
	}
	t.Logf("%d scripts: %d accepted and confirmed; %d refused that sed --sandbox runs", len(scripts), accepted, missed)
}

// sedSemanticError reports errors sed finds after the script is split
// into commands (in regexes, back-references, y lengths): the parser does
// not look inside those, and a script sed refuses runs nothing.
func sedSemanticError(msg string) bool {
	for _, s := range []string{"Invalid", "Unmatched", "Trailing backslash", "invalid reference", "different lengths",
		"Regular expression too big", "recursive escaping after \\c not allowed", "Memory exhausted", "character class syntax is"} {
		if strings.Contains(msg, s) {
			return true
		}
	}
	return false
}

// sedCrossCases are scripts (each a list of -e values) worth checking
// whatever the random generator makes.
var sedCrossCases = [][]string{
	{"s/[/]/x/"}, {"s/[/]/x/w /tmp/f"}, {"s/[]/]/x/g"}, {"s/[^]/]/x/"}, {"s/[[:alpha:]/]/x/"}, {"s/[[:a]/]/x/"},
	{"/[/]/p"}, {"/[/]p/"}, {"\\,[,],p"}, {"s,[,],x,"}, {"s/[[.-.]/]/x/"}, {"s/[[=a=]/]/x/"}, {"s/[[:alpha:]]/x/g"},
	{"s/[\\]/x/"}, {"s/[\\/]/x/"}, {"s/a\\/b/c\\/d/"}, {"s|a\\|b|c|"}, {"s&a&\\&&"}, {"s/a/\\\nb/"}, {"s/a\\\nb/c/"},
	{"/x/{", "p", "}"}, {"/x/{p;q}"}, {"$!N;P;D"}, {"1~3p"}, {"1 ~ 3 p"}, {"2~0p"}, {"1~p"}, {"0~4p"}, {"0,/x/p"},
	{"/x/I,+3p"}, {"/x/M,~4!p"}, {"$p"}, {"/x/ I p"}, {"s/x/y/ g p 3"}, {"s/x/y/I;s//z/"}, {"s//z/"}, {"l"}, {"l 0"},
	{"l5;q7"}, {"=;n;N;d"}, {"y/abc/xyz/"}, {"y,a\\,b,xyz,"}, {"y/a\\/b/x\\ny/"}, {"s/x/y/#c"}, {"p#c\np"}, {"#n\np"},
	{"s/\\n/ /g"}, {"s/\\t/\\x41/"}, {"s/x/\\U&\\E-\\l\\1/"}, {"s/\\(a\\)\\(b\\)/\\2\\1/"}, {"s/x/a\\&b/"}, {"s/x/\\d065/"},
	{"s/[a-z]*/(&)/2"}, {"/a/,/b/{/c/!d}"}, {"1d;$d"}, {"h;G;x;g;H;z"}, {"s/x/y/;}"}, {"{p};p"}, {"{{p}}"},
}

// sedRandomScript builds a script from pieces that the parser must get
// right: delimiters, escapes, brackets and the commands around them.
func sedRandomScript(r *rand.Rand) string {
	pick := func(xs ...string) string { return xs[r.IntN(len(xs))] }
	chars := func(alphabet string, max int) string {
		var b strings.Builder
		for range r.IntN(max + 1) {
			switch r.IntN(8) {
			case 0:
				b.WriteString(pick("[/]", "[]/]", "[^]/]", "[[:alpha:]/]", "[[:a]", "[[.-.]/]", "[[=a=]/]", "[\\]", "[a-z]", "[[]",
					"[[:]/]", "[", "]", "[^", "[]", "[:x:]"))
			case 1:
				b.WriteString("\\" + string(alphabet[r.IntN(len(alphabet))]))
			default:
				b.WriteByte(alphabet[r.IntN(len(alphabet))])
			}
		}
		return b.String()
	}
	const alpha = "ab/\\[]^$.*|,;:=!{}()&n1e w#\nIMgp"
	var b strings.Builder
	if r.IntN(4) == 0 {
		// Short strings over the characters that decide where a command
		// ends.
		const raw = "s//[]^:.=\\pew ;\n{}1$!,xIy#"
		b.WriteString(pick("s/", "/", "s|", "y/", "1", "\\,"))
		for range r.IntN(12) {
			b.WriteByte(raw[r.IntN(len(raw))])
		}
		return b.String()
	}
	for range 1 + r.IntN(3) {
		if r.IntN(3) > 0 {
			b.WriteString(pick("1", "$", "0", "12", "1~2", "2~0", "1 ~ 3", "/x/", "/a[/]b/", "\\,x,", "/x/I", "/x/ M", "//",
				"\\;a;", "/"+chars(alpha, 5)+"/", "\\|"+chars(alpha, 4)+"|"))
			if r.IntN(2) == 0 {
				b.WriteString(pick(",", " , ") + pick("5", "$", "/y/", "+2", "~4", " +3", "/"+chars(alpha, 4)+"/"))
			}
			b.WriteString(pick("", "", "", "!", " ! "))
		}
		if r.IntN(20) == 0 {
			b.WriteString(pick("!", "!!", "+0", "~0"))
		}
		switch r.IntN(5) {
		case 0:
			b.WriteString(pick("p", "P", "=", "l", "l 20", "l5", "q", "q 3", "Q", "d", "D", "n", "N", "g", "G", "h", "H", "x",
				"z", "{p}", "{p;d}", "}", "{", "#c", "y/ab/cd/", "y/a"+chars("ab/\\n,", 3)+"/b/"))
		case 1:
			b.WriteString(pick("e id", "w f", "r f", "R f", "W f", "a x", "i\\\nx", "c x", ":a", "b a", "F", "v"))
		default:
			d := pick("/", "/", "|", ",", "#", ";", "[", "]", "&", "!", "{")
			b.WriteString("s" + d + chars(alpha, 6) + d + chars(alpha, 5) + d)
			for range r.IntN(3) {
				if r.IntN(4) == 0 {
					b.WriteString(pick("e", "w f", "0", "x", "#", "}", "gg", "pp"))
				} else {
					b.WriteString(pick("g", "p", "i", "I", "m", "M", "2", " "))
				}
			}
		}
		b.WriteString(pick(";", "\n", " ; ", "", "}", " "))
	}
	return b.String()
}

// sedRender prints commands the way GNU sed's --debug prints a program
// (debug.c), with regexes and replacements as sed's compiler leaves them.
func sedRender(cmds []sedCmd) string {
	var b strings.Builder
	level := 1
	for _, c := range cmds {
		if c.cmd == '}' {
			level--
		}
		b.WriteString(strings.Repeat("  ", level))
		sedRenderAddr(&b, c.a1)
		if c.a2 != nil {
			b.WriteByte(',')
			sedRenderAddr(&b, c.a2)
		}
		if c.bang {
			b.WriteByte('!')
		}
		if c.a1 != nil {
			b.WriteByte(' ')
		}
		b.WriteByte(c.cmd)
		switch c.cmd {
		case 'l', 'q', 'Q':
			if c.arg != -1 {
				fmt.Fprintf(&b, " %d", c.arg)
			}
		case 's':
			sedRenderRegex(&b, c.re.pat)
			sedRenderReplacement(&b, sedNormalize(c.text[0], sedTextReplacement))
			b.WriteByte('/')
			if c.re.icase {
				b.WriteByte('i')
			}
			if c.re.mline {
				b.WriteByte('m')
			}
			if c.global {
				b.WriteByte('g')
			}
			if c.print {
				b.WriteByte('p')
			}
			if c.numb != 0 {
				fmt.Fprintf(&b, "%d", c.numb)
			}
		case 'y':
			src, dst := sedNormalize(c.text[0], sedTextBuffer), sedNormalize(c.text[1], sedTextBuffer)
			var tr [256]byte
			for i := range tr {
				tr[i] = byte(i)
			}
			for i := 0; i < len(src) && i < len(dst); i++ {
				tr[src[i]] = dst[i]
			}
			b.WriteByte('/')
			for i := range tr {
				if tr[i] != byte(i) {
					b.WriteByte(byte(i))
				}
			}
			b.WriteByte('/')
			for i := range tr {
				if tr[i] != byte(i) {
					b.WriteByte(tr[i])
				}
			}
			b.WriteByte('/')
		}
		b.WriteByte('\n')
		if c.cmd == '{' {
			level++
		}
	}
	return b.String()
}

func sedRenderAddr(b *strings.Builder, a *sedAddr) {
	if a == nil {
		return
	}
	switch a.kind {
	case sedNum:
		fmt.Fprintf(b, "%d", a.n)
	case sedNumMod:
		fmt.Fprintf(b, "%d~%d", a.n, a.step)
	case sedLast:
		b.WriteByte('$')
	case sedPlus:
		fmt.Fprintf(b, "+%d", a.step)
	case sedTilde:
		fmt.Fprintf(b, "~%d", a.step)
	case sedRe:
		sedRenderRegex(b, a.re.pat)
		if a.re.icase {
			b.WriteByte('I')
		}
		if a.re.mline {
			b.WriteByte('M')
		}
	}
}

func sedRenderRegex(b *strings.Builder, pat string) {
	if pat == "" {
		b.WriteString("//")
		return
	}
	b.WriteByte('/')
	for _, c := range []byte(sedNormalize(pat, sedTextRegex)) {
		if c == '/' {
			b.WriteString("\\/")
			continue
		}
		sedRenderChar(b, c)
	}
	b.WriteByte('/')
}

// sedRenderChar is debug_print_char in the C locale.
func sedRenderChar(b *strings.Builder, c byte) {
	if c >= ' ' && c <= '~' && c != '\\' {
		b.WriteByte(c)
		return
	}
	b.WriteByte('\\')
	switch c {
	case '\a':
		b.WriteByte('a')
	case '\f':
		b.WriteByte('f')
	case '\r':
		b.WriteByte('r')
	case '\t':
		b.WriteByte('t')
	case '\v':
		b.WriteByte('v')
	case '\n':
		b.WriteByte('n')
	case '\\':
		b.WriteByte('\\')
	default:
		fmt.Fprintf(b, "o%03o", c)
	}
}

// Text kinds of normalize_text.
const (
	sedTextBuffer = iota
	sedTextReplacement
	sedTextRegex
)

// sedNormalize is normalize_text outside POSIX mode: \a \f \n \r \t \v,
// \dNNN \oNNN \xHH and \cX become the characters they name; any other
// escape keeps its backslash except in plain text.
func sedNormalize(s string, kind int) string {
	var q []byte
	for p := 0; p < len(s); {
		if s[p] == '\\' && p+1 < len(s) {
			p++
			switch c := s[p]; c {
			case 'a', 'f', '\n', 'n', 'r', 't', 'v':
				q = append(q, map[byte]byte{'a': '\a', 'f': '\f', '\n': '\n', 'n': '\n', 'r': '\r', 't': '\t', 'v': '\v'}[c])
				p++
				continue
			case 'd', 'x', 'o':
				base := map[byte]int{'d': 10, 'x': 16, 'o': 8}[c]
				n, max, i := 0, 1, p+1
				for ; i < len(s) && max <= 255; i, max = i+1, max*base {
					d, err := strconv.ParseInt(s[i:i+1], 16, 8)
					if err != nil || int(d) >= base {
						break
					}
					n = n*base + int(d)
				}
				ch := c
				if i > p+1 {
					ch = byte(n)
				}
				if kind == sedTextReplacement && (ch == '&' || ch == '\\') {
					q = append(q, '\\')
				}
				q = append(q, ch)
				p = i
				continue
			case 'c':
				if p+1 < len(s) {
					p++
					q = append(q, strings.ToUpper(s[p : p+1])[0]^0x40)
					if s[p] == '\\' {
						p++
					}
					p++
					continue
				}
				if kind != sedTextBuffer {
					q = append(q, '\\')
				}
				p++
				continue
			default:
				if kind != sedTextBuffer {
					q = append(q, '\\')
				}
			}
		}
		q = append(q, s[p])
		p++
	}
	return string(q)
}

// sedRenderReplacement is setup_replacement followed by
// debug_print_subst_replacement.
func sedRenderReplacement(b *strings.Builder, t string) {
	const (
		asis, upper, lower, upperFirst, lowerFirst = 0, 1, 2, 4, 8
	)
	type part struct {
		prefix string
		id     int
		typ    int
	}
	var parts []part
	base, typ, save := 0, asis, asis
	for p := 0; p < len(t); p++ {
		switch t[p] {
		case '\\':
			parts = append(parts, part{prefix: t[base:p], id: -1, typ: typ})
			tail := &parts[len(parts)-1]
			typ = save
			p++
			if p == len(t) {
				tail.prefix += "\\"
				base = p + 1
				continue
			}
			switch c := t[p]; {
			case c >= '0' && c <= '9':
				tail.id = int(c - '0')
			case c == 'L':
				typ, save = lower, lower
			case c == 'U':
				typ, save = upper, upper
			case c == 'E':
				typ, save = asis, asis
			case c == 'l':
				save, typ = typ, typ|lowerFirst
			case c == 'u':
				save, typ = typ, typ|upperFirst
			default:
				tail.prefix += string(c)
			}
			base = p + 1
		case '&':
			parts = append(parts, part{prefix: t[base:p], id: 0, typ: typ})
			typ = save
			base = p + 1
		}
	}
	if base < len(t) {
		parts = append(parts, part{prefix: t[base:], id: -1, typ: typ})
	}
	last := asis
	for _, p := range parts {
		if p.typ != last {
			b.WriteByte('\\')
			switch {
			case p.typ == asis:
				b.WriteByte('E')
			case p.typ == upper:
				b.WriteByte('U')
			case p.typ == lower:
				b.WriteByte('L')
			case p.typ&(upperFirst|lowerFirst) == upperFirst:
				b.WriteByte('u')
			case p.typ&(upperFirst|lowerFirst) == lowerFirst:
				b.WriteByte('l')
			}
			last = p.typ
		}
		b.WriteString(p.prefix)
		if p.id == 0 {
			b.WriteByte('&')
		} else if p.id > 0 {
			fmt.Fprintf(b, "\\%d", p.id)
		}
	}
}
