package shell

import (
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// A for loop over static words (for f in src/*.go docs/a.md) binds its
// variable to each word in turn, globs expanded by bash to file names
// that start with the glob's static text. In the loop's body, a word that
// is exactly "$f" (quoted: unquoted it splits at blanks in a file name)
// is then one of those words, and the body is judged once for each, the
// word taking its place: head -5 "$f" reads src/*.go. A body that may
// set the variable itself is judged the old way, the word known only at
// run time.

// loopBinding is a loop variable and the word it stands for.
type loopBinding struct {
	name string
	w    wordInfo
}

// maxLoopWords bounds the words a loop is judged for, one pass of its
// body each.
const maxLoopWords = 8

// loopWords returns the words a for loop's items bind its variable to,
// or nil when they are not all static words that cannot expand to an
// option (no expansion, brace, leading glob or "-"), or too many.
func loopWords(l *syntax.WordIter, body []*syntax.Stmt, src string) []wordInfo {
	if l.Name == nil || len(l.Items) == 0 || len(l.Items) > maxLoopWords {
		return nil
	}
	ws := make([]wordInfo, len(l.Items))
	for i, it := range l.Items {
		w := wordOf(it, src)
		if w.dyn || w.brace || w.lead || w.ansi || w.val == "" || strings.HasPrefix(w.val, "-") {
			return nil
		}
		ws[i] = w
	}
	if setsName(body, l.Name.Value) {
		return nil
	}
	return ws
}

// setsName reports whether anything in the statements may set the
// variable name: an assignment, a nested loop, ${name:=..}, or a command
// that names it (read name, printf -v name, declare, unset, export).
func setsName(list []*syntax.Stmt, name string) bool {
	found := false
	params := map[*syntax.Lit]bool{} // the names parameter expansions read
	for _, s := range list {
		syntax.Walk(s, func(n syntax.Node) bool {
			switch n := n.(type) {
			case *syntax.Assign:
				found = found || n.Name != nil && n.Name.Value == name
			case *syntax.WordIter:
				found = found || n.Name != nil && n.Name.Value == name
			case *syntax.ParamExp:
				found = found || n.Param != nil && n.Param.Value == name && n.Exp != nil &&
					(n.Exp.Op == syntax.AssignUnset || n.Exp.Op == syntax.AssignUnsetOrNull)
				params[n.Param] = true
			case *syntax.Lit:
				// A literal that names it, as an argument or in one
				// (read name, printf -vname, declare name=x, name+=).
				v := n.Value
				found = found || !params[n] && (v == name || strings.HasSuffix(v, name) ||
					strings.HasPrefix(v, name+"=") || strings.HasPrefix(v, name+"+") || strings.HasPrefix(v, name+"["))
			}
			return !found
		})
		if found {
			return true
		}
	}
	return false
}

// boundWord returns the loop word that w, exactly "$name" in double
// quotes, stands for, at w's place in the source.
func (sc *scope) boundWord(w *syntax.Word) (wordInfo, bool) {
	if len(sc.loops) == 0 || len(w.Parts) != 1 {
		return wordInfo{}, false
	}
	dq, ok := w.Parts[0].(*syntax.DblQuoted)
	if !ok || dq.Dollar || len(dq.Parts) != 1 {
		return wordInfo{}, false
	}
	p, ok := dq.Parts[0].(*syntax.ParamExp)
	if !ok || p.Param == nil || !simpleParam(p) || p.Exp != nil || p.Length {
		return wordInfo{}, false
	}
	for i := len(sc.loops) - 1; i >= 0; i-- {
		if sc.loops[i].name == p.Param.Value {
			b := sc.loops[i].w
			b.pos, b.end = int(w.Pos().Offset()), int(w.End().Offset())
			return b, true
		}
	}
	return wordInfo{}, false
}
