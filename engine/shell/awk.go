package shell

import (
	"fmt"
	"strings"
)

// checkAwk accepts an awk run whose program passes awkProgram. The
// operands after the program are files it reads, except var=value
// assignments; -v assignments and operand assignments may not set the
// variables that steer what awk opens (ARGV, ARGC) or expose the
// environment.
func checkAwk(iv *invocation) string {
	if iv.pa.has("version", "V", "help") {
		if len(iv.args) != 1 {
			return iv.failf("--version and --help take no other arguments")
		}
		return ""
	}
	ops := iv.pa.ops
	if len(ops) == 0 {
		return iv.failf("needs a program")
	}
	if ops[0].glob {
		return iv.failf("glob %s may expand to another program", ops[0].val)
	}
	for _, v := range iv.pa.values("v", "assign") {
		name, _, ok := strings.Cut(v, "=")
		if !ok || !awkIdent(name) || awkReserved(name) {
			return iv.failf("-v %s does not assign a plain variable", v)
		}
		if awkDenied[name] {
			return iv.failf("-v assigns %s", name)
		}
	}
	if why := awkProgram(ops[0].val); why != "" {
		return iv.failf("%s", why)
	}
	for _, op := range ops[1:] {
		if name, _, ok := strings.Cut(op.val, "="); ok && !op.dyn && awkIdent(name) {
			if awkDenied[name] {
				return iv.failf("operand %s assigns %s", op.val, name)
			}
			if !awkReserved(name) {
				continue // an assignment, not a file
			}
		}
		iv.files = append(iv.files, op)
	}
	return ""
}

// awkBuiltins are the functions of gawk, mawk and the one true awk that
// only compute: no I/O, no programs.
var awkBuiltins = map[string]bool{
	"length": true, "substr": true, "index": true, "split": true, "sub": true, "gsub": true, "match": true, "sprintf": true,
	"tolower": true, "toupper": true, "int": true, "sqrt": true, "exp": true, "log": true, "sin": true, "cos": true,
	"atan2": true, "rand": true, "srand": true, "gensub": true, "strftime": true, "systime": true, "mktime": true,
	"asort": true, "asorti": true, "patsplit": true, "strtonum": true, "and": true, "or": true, "xor": true, "compl": true,
	"lshift": true, "rshift": true, "typeof": true, "isarray": true, "mkbool": true,
}

// awkDenied are names that run programs or do I/O (system, close,
// fflush, getline, gettext's catalog readers), expose the environment
// (ENVIRON, PROCINFO, SYMTAB, FUNCTAB reach any variable), or choose the
// files awk opens (ARGV, ARGC).
var awkDenied = map[string]bool{
	"system": true, "close": true, "fflush": true, "getline": true, "bindtextdomain": true, "dcgettext": true,
	"dcngettext": true, "ENVIRON": true, "PROCINFO": true, "SYMTAB": true, "FUNCTAB": true, "ARGV": true, "ARGC": true,
	"TEXTDOMAIN": true,
}

// awkKeywords are the keywords allowed in programs; switch, case and
// default (gawk only) are not.
var awkKeywords = map[string]bool{
	"BEGIN": true, "END": true, "BEGINFILE": true, "ENDFILE": true, "function": true, "func": true, "if": true,
	"else": true, "while": true, "for": true, "do": true, "break": true, "continue": true, "next": true,
	"nextfile": true, "exit": true, "return": true, "delete": true, "in": true, "print": true, "printf": true,
}

func awkIdent(s string) bool {
	if s == "" || s[0] >= '0' && s[0] <= '9' {
		return false
	}
	for i := 0; i < len(s); i++ {
		if !awkIdentByte(s[i]) {
			return false
		}
	}
	return true
}

func awkIdentByte(c byte) bool {
	return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}

// awkReserved reports names that are not plain variables.
func awkReserved(s string) bool {
	return awkKeywords[s] || awkBuiltins[s] || awkDenied[s] || s == "switch" || s == "case" || s == "default"
}

// Token kinds of the awk lexer.
const (
	awkOp      = iota // operators and punctuation
	awkNum            // number
	awkStr            // "string"
	awkRegex          // /regex/
	awkName           // identifier
	awkNewline        // newline
)

type awkTok struct {
	kind int
	text string
	call bool // a name directly followed by "("
}

// awkProgram accepts a program only when every token of it is known and
// harmless: no I/O statement (getline in any form, output redirection
// and pipes after print and printf), no function outside awkBuiltins and
// the program's own, none of the awkDenied names, no gawk directives or
// indirect calls (@). Where awk implementations split the text
// differently (a "/" that may start a regex or divide, a "/" inside a
// bracket expression of a regex literal), the program is refused.
func awkProgram(src string) string {
	toks, why := awkLex(src)
	if why != "" {
		return why
	}
	funcs := map[string]bool{}
	for i, t := range toks {
		if t.kind == awkName && (t.text == "function" || t.text == "func") && i+1 < len(toks) && toks[i+1].kind == awkName {
			funcs[toks[i+1].text] = true
		}
	}
	depth := 0
	inPrint, printDepth := false, 0
	for i, t := range toks {
		prev := awkTok{kind: awkNewline}
		if i > 0 {
			prev = toks[i-1]
		}
		switch t.kind {
		case awkName:
			switch {
			case awkDenied[t.text]:
				return t.text + " is not allowed"
			case awkKeywords[t.text]:
				if t.text == "print" || t.text == "printf" {
					inPrint, printDepth = true, depth
				}
			case awkBuiltins[t.text]:
			case t.call && !funcs[t.text]:
				return t.text + " is not a known function"
			case awkReserved(t.text):
				return t.text + " is not allowed"
			}
		case awkOp:
			// Only parentheses hide a ">" from print: gawk and mawk read
			// print a[1 > 2] as a redirection.
			switch t.text {
			case "(":
				depth++
			case ")":
				depth--
			case ";", "}":
				if depth <= printDepth {
					inPrint = false
				}
			case ">", ">>", ">=":
				if inPrint && depth <= printDepth {
					return "print and printf may not redirect their output"
				}
			}
		case awkNewline:
			// A newline after a comma, an operator or an opening
			// bracket continues the statement in some awks.
			if depth <= printDepth && awkEndsOperand(prev) {
				inPrint = false
			}
		}
	}
	return ""
}

// awkEndsOperand reports tokens after which an expression may be
// complete.
func awkEndsOperand(t awkTok) bool {
	switch t.kind {
	case awkNum, awkStr, awkRegex:
		return true
	case awkName:
		return !awkKeywords[t.text] || t.text == "next" || t.text == "nextfile" || t.text == "exit" ||
			t.text == "return" || t.text == "break" || t.text == "continue" || t.text == "print" || t.text == "printf"
	case awkOp:
		return t.text == ")" || t.text == "]" || t.text == "++" || t.text == "--" || t.text == "}" || t.text == ";"
	}
	return false
}

// awkOps are the operators, longest first.
var awkOps = []string{
	"**=", "&&", "||", "==", "!=", "<=", ">=", ">>", "!~", "++", "--", "+=", "-=", "*=", "/=", "%=", "^=", "**",
	"{", "}", "(", ")", "[", "]", ";", ",", "+", "-", "*", "/", "%", "^", "!", ">", "<", "~", "?", ":", "=", "$",
}

// awkLex splits a program into tokens.
func awkLex(src string) ([]awkTok, string) {
	var toks []awkTok
	// Parentheses that follow if, while and for: after their ")", gawk
	// reads "/" as a regex and mawk as a division. Blanks, newlines and
	// comments after the ")" do not change that.
	var parens []bool
	controlClose := false
	for i := 0; i < len(src); {
		c := src[i]
		if (c < ' ' || c > '~') && c != '\n' && c != '\t' {
			return nil, fmt.Sprintf("byte %#x is not printable ASCII", c)
		}
		switch {
		case c == ' ' || c == '\t':
			i++
			continue
		case c == '\\':
			return nil, "backslash outside strings and regexes"
		case c == '\n':
			toks = append(toks, awkTok{kind: awkNewline, text: "\n"})
			i++
			continue
		case c == '#':
			for i < len(src) && src[i] != '\n' {
				if src[i] < ' ' && src[i] != '\t' || src[i] > '~' {
					return nil, fmt.Sprintf("byte %#x is not printable ASCII", src[i])
				}
				i++
			}
			continue
		case c == '"':
			j, why := awkString(src, i)
			if why != "" {
				return nil, why
			}
			toks = append(toks, awkTok{kind: awkStr, text: src[i:j]})
			i, controlClose = j, false
			continue
		case c == '/':
			switch why := awkDivides(toks, controlClose); why {
			case "":
				goto operator
			case "regex":
			default:
				return nil, why
			}
			j, why := awkRegexLit(src, i)
			if why != "" {
				return nil, why
			}
			toks = append(toks, awkTok{kind: awkRegex, text: src[i:j]})
			i, controlClose = j, false
			continue
		case c >= '0' && c <= '9' || c == '.' && i+1 < len(src) && src[i+1] >= '0' && src[i+1] <= '9':
			j := i
			for j < len(src) && (src[j] >= '0' && src[j] <= '9' || src[j] == '.') {
				j++
			}
			if j < len(src) && (src[j] == 'e' || src[j] == 'E') {
				k := j + 1
				if k < len(src) && (src[k] == '+' || src[k] == '-') {
					k++
				}
				if k < len(src) && src[k] >= '0' && src[k] <= '9' {
					for j = k; j < len(src) && src[j] >= '0' && src[j] <= '9'; j++ {
					}
				}
			}
			// 0x1A is a number to gawk and 0 followed by x1A to mawk.
			if j < len(src) && (awkIdentByte(src[j]) || src[j] == '.') {
				return nil, "number " + src[i:j+1] + " is read differently by different awks"
			}
			toks = append(toks, awkTok{kind: awkNum, text: src[i:j]})
			i, controlClose = j, false
			continue
		case awkIdentByte(c):
			j := i
			for j < len(src) && awkIdentByte(src[j]) {
				j++
			}
			name := src[i:j]
			if j < len(src) && src[j] == '"' && name == "_" {
				return nil, "gawk's translated strings read message catalogs"
			}
			toks = append(toks, awkTok{kind: awkName, text: name, call: j < len(src) && src[j] == '('})
			i, controlClose = j, false
			continue
		}
	operator:
		controlClose = false
		op := ""
		for _, o := range awkOps {
			if strings.HasPrefix(src[i:], o) {
				op = o
				break
			}
		}
		switch {
		case op == "" && c == '|':
			return nil, "| pipes to or from a command"
		case op == "" && c == '@':
			return nil, "@ starts a gawk directive or an indirect call"
		case op == "":
			return nil, fmt.Sprintf("character %q is not allowed", c)
		case op == ":" && strings.HasPrefix(src[i:], "::"):
			return nil, ":: names a gawk namespace"
		}
		switch op {
		case "(":
			parens = append(parens, len(toks) > 0 && toks[len(toks)-1].kind == awkName &&
				(toks[len(toks)-1].text == "if" || toks[len(toks)-1].text == "while" || toks[len(toks)-1].text == "for"))
		case ")":
			if len(parens) == 0 {
				return nil, "unbalanced )"
			}
			controlClose = parens[len(parens)-1]
			parens = parens[:len(parens)-1]
		}
		toks = append(toks, awkTok{kind: awkOp, text: op})
		i += len(op)
	}
	return toks, ""
}

// awkDivides says how a "/" after toks reads: "" for a division,
// "regex" for the start of a regex, or a reason to refuse when awks
// differ.
func awkDivides(toks []awkTok, afterControl bool) string {
	if afterControl {
		return "/ after the condition of if, while or for is read differently by different awks"
	}
	if len(toks) == 0 {
		return "regex"
	}
	t := toks[len(toks)-1]
	switch t.kind {
	case awkNum, awkStr:
		return ""
	case awkRegex:
		return "/ after a regex is read differently by different awks"
	case awkNewline:
		return "regex"
	case awkName:
		switch {
		case t.text == "print" || t.text == "printf" || t.text == "return" || t.text == "do" || t.text == "else":
			return "regex"
		case awkKeywords[t.text] || awkBuiltins[t.text]:
			// length / 2 divides in gawk and starts a regex in mawk.
			return "/ after " + t.text + " is read differently by different awks"
		}
		return ""
	}
	switch t.text {
	case ")", "]":
		return ""
	case "$", "++", "--":
		return "/ after " + t.text + " is read differently by different awks"
	}
	return "regex"
}

// awkString returns the end of the string literal starting at i.
func awkString(src string, i int) (int, string) {
	for j := i + 1; j < len(src); j++ {
		switch src[j] {
		case '\\':
			j++
			if j >= len(src) || src[j] == '\n' {
				return 0, "a backslash-newline in a string continues it in some awks only"
			}
		case '"':
			return j + 1, ""
		case '\n':
			return 0, "unterminated string"
		}
	}
	return 0, "unterminated string"
}

// awkRegexLit returns the end of the regex literal starting at i. Awks
// differ on whether "/" inside a bracket expression ends the literal, and
// on what ends a bracket expression; the literal is accepted only when it
// ends at its first unescaped "/" under every reading.
func awkRegexLit(src string, i int) (int, string) {
	j := i + 1
	for ; j < len(src) && src[j] != '/'; j++ {
		switch src[j] {
		case '\\':
			j++
			if j >= len(src) || src[j] == '\n' {
				return 0, "a backslash-newline in a regex continues it in some awks only"
			}
		case '\n':
			return 0, "unterminated regex"
		}
	}
	if j >= len(src) {
		return 0, "unterminated regex"
	}
	body := src[i+1 : j]
	for _, posix := range []bool{false, true} {
		for _, escapes := range []bool{false, true} {
			if awkBracketOpen(body, posix, escapes) {
				return 0, "a regex with an unclosed bracket expression ends differently in different awks"
			}
		}
	}
	if awkNestedBracketOpen(body) {
		return 0, "a regex with an unclosed bracket expression ends differently in different awks"
	}
	return j + 1, ""
}

// awkBracketOpen reports whether a bracket expression is still open at
// the end of a regex body. posix reads "]" first in a bracket as a member
// and "[:", "[." and "[=" as classes; escapes reads a backslash inside a
// bracket as escaping the next character.
func awkBracketOpen(body string, posix, escapes bool) bool {
	in := false
	for k := 0; k < len(body); k++ {
		c := body[k]
		if !in {
			switch c {
			case '\\':
				k++
			case '[':
				in = true
				if posix {
					if k+1 < len(body) && body[k+1] == '^' {
						k++
					}
					if k+1 < len(body) && body[k+1] == ']' {
						k++
					}
				}
			}
			continue
		}
		switch {
		case c == '\\' && escapes:
			k++
		case c == ']':
			in = false
		case c == '[' && posix && k+1 < len(body) && strings.IndexByte(":.=", body[k+1]) >= 0:
			end := strings.Index(body[k+2:], string(body[k+1])+"]")
			if end < 0 {
				return true
			}
			k += 2 + end + 1
		}
	}
	return in
}

// awkNestedBracketOpen follows gawk's lexer, which counts "[" at the
// start and before ":" and "]" not first in the bracket.
func awkNestedBracketOpen(body string) bool {
	depth, start := 0, 0
	for k := 0; k < len(body); k++ {
		switch c := body[k]; {
		case c == '\\':
			k++
		case c == '[':
			if depth == 0 || k+1 < len(body) && body[k+1] == ':' {
				depth++
				start = k
			}
		case c == ']' && depth > 0:
			if k == start+1 || k == start+2 && body[k-1] == '^' {
				continue
			}
			depth--
		}
	}
	return depth > 0
}
