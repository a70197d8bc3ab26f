package shell

import (
	"fmt"
	"strings"
)

// checkSed accepts sed scripts made of addresses and commands that only
// print or edit the pattern space (p, d, s///, y///, q ...). Commands and
// flags that run programs (e), write files (w, W), read files (r, R) or
// whose text arguments are hard to delimit (a, i, c, labels) are rejected.
func checkSed(iv *invocation) string {
	scripts := iv.pa.values("e", "expression")
	files := iv.pa.ops
	if len(scripts) == 0 {
		if len(files) == 0 {
			return iv.failf("needs a script")
		}
		scripts = []string{files[0].val}
		files = files[1:]
	}
	for _, s := range scripts {
		if why := sedScript(s); why != "" {
			return iv.failf("%s", why)
		}
	}
	iv.files = files
	return ""
}

// sedScript validates a GNU sed script; it returns a reason to reject.
func sedScript(s string) string {
	p := sedParser{s: s}
	for {
		p.skip(" \t\n;")
		if p.eof() {
			return ""
		}
		if !p.address(true) {
			return "sed address not understood"
		}
		p.skip(" \t")
		if p.peek() == ',' {
			p.i++
			p.skip(" \t")
			if !p.address(false) {
				return "sed address not understood"
			}
		}
		p.skip(" \t")
		for p.peek() == '!' {
			p.i++
			p.skip(" \t")
		}
		if p.eof() {
			return "sed address without a command"
		}
		c := p.s[p.i]
		p.i++
		switch c {
		case 'p', 'P', '=', 'l', 'd', 'D', 'n', 'N', 'g', 'G', 'h', 'H', 'x', 'z', '}':
		case '{':
			continue
		case 'q', 'Q':
			p.skip(" \t")
			p.digits()
		case 's':
			if why := p.substitute(); why != "" {
				return why
			}
		case 'y':
			d, ok := p.delim()
			if !ok || !p.until(d) || !p.until(d) {
				return "sed y command not understood"
			}
		default:
			return fmt.Sprintf("sed command %q is not allowed", c)
		}
		p.skip(" \t")
		if !p.eof() && !strings.ContainsRune(";\n}", rune(p.peek())) {
			return fmt.Sprintf("sed: unexpected %q after a command", p.peek())
		}
	}
}

type sedParser struct {
	s string
	i int
}

func (p *sedParser) eof() bool { return p.i >= len(p.s) }

func (p *sedParser) peek() byte {
	if p.eof() {
		return 0
	}
	return p.s[p.i]
}

func (p *sedParser) skip(set string) {
	for !p.eof() && strings.IndexByte(set, p.s[p.i]) >= 0 {
		p.i++
	}
}

func (p *sedParser) digits() bool {
	start := p.i
	for !p.eof() && p.s[p.i] >= '0' && p.s[p.i] <= '9' {
		p.i++
	}
	return p.i > start
}

// until consumes up to and including the next unescaped d; a raw newline
// is not allowed.
func (p *sedParser) until(d byte) bool {
	for !p.eof() {
		c := p.s[p.i]
		p.i++
		switch {
		case c == '\\':
			p.i++
		case c == d:
			return true
		case c == '\n':
			return false
		}
	}
	return false
}

// delim consumes a delimiter for s, y or \cREGEXc.
func (p *sedParser) delim() (byte, bool) {
	if p.eof() {
		return 0, false
	}
	d := p.s[p.i]
	p.i++
	return d, d != '\\' && d != '\n'
}

// address consumes an optional address: N, $, first~step, /re/, \cREc
// (with I and M flags), or for the second address also +N and ~N.
func (p *sedParser) address(first bool) bool {
	switch c := p.peek(); {
	case c >= '0' && c <= '9':
		p.digits()
		if first && p.peek() == '~' {
			p.i++
			return p.digits()
		}
		return true
	case c == '$':
		p.i++
		return true
	case c == '/':
		p.i++
		if !p.until('/') {
			return false
		}
	case c == '\\':
		p.i++
		d, ok := p.delim()
		if !ok || !p.until(d) {
			return false
		}
	case !first && (c == '+' || c == '~'):
		p.i++
		return p.digits()
	default:
		return first
	}
	for p.peek() == 'I' || p.peek() == 'M' {
		p.i++
	}
	return true
}

// substitute consumes the rest of s/re/replacement/flags; the e and w
// flags run a program or write a file.
func (p *sedParser) substitute() string {
	d, ok := p.delim()
	if !ok || !p.until(d) || !p.until(d) {
		return "sed s command not understood"
	}
	for !p.eof() {
		c := p.s[p.i]
		switch {
		case strings.IndexByte("gpiImM", c) >= 0 || c >= '0' && c <= '9':
			p.i++
		case c == 'e' || c == 'w':
			return fmt.Sprintf("sed s///%c runs a command or writes a file", c)
		default:
			return ""
		}
	}
	return ""
}
