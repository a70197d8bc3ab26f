package shell

import (
	"fmt"
	"strings"
)

// checkYq accepts an expression only when yqExpr reads all of it. yq
// takes its first operand for a file when a file of that name exists
// (yq .env prints .env), so the expression is also a read target, like
// the files after it.
func checkYq(iv *invocation) string {
	ops := iv.pa.ops
	if len(ops) > 0 && (ops[0].is("e") || ops[0].is("eval") || ops[0].is("ea") || ops[0].is("eval-all")) {
		ops = ops[1:]
	}
	if len(ops) == 0 {
		if iv.ic.implicit {
			return iv.failf("xargs would supply the expression")
		}
		return ""
	}
	x := ops[0]
	if x.dyn {
		return iv.failf("expression %s is only known at run time", x.val)
	}
	if why := yqExpr(x.val); why != "" {
		return iv.failf("%s", why)
	}
	iv.files = ops
	return ""
}

// yqFuncs are yq's operators and functions that compute from the
// documents alone. Left out: env, strenv, envsubst (the environment),
// load, load_str, load_xml, load_props, load_base64 (files), eval (an
// expression from data), and anything not listed.
var yqFuncs = func() map[string]bool {
	m := map[string]bool{}
	for _, n := range strings.Fields(`add alias all all_c any any_c anchor and array_to_map as capture collect column
		contains del di document_index downcase each elif else end entries error explode false fi file_index filename
		first flatten foot_comment format_datetime from_base64 from_csv from_entries from_json from_props from_tsv
		from_unix from_uri from_xml from_yaml group_by has head_comment if ireduce join key keys kind last length line
		line_comment map map_values match max min not now null omit or parent parents path pick pivot reduce
		reverse select shuffle sort sort_by sort_keys split split_doc style sub tag test then to_base64 to_csv
		to_entries to_json to_number to_props to_string to_tsv to_unix to_uri to_xml to_yaml tostring trim true type tz
		unique unique_by upcase with with_dtf with_entries`) {
		m[n] = true
	}
	return m
}()

// yqFormats are the @format names of yq's encoders.
var yqFormats = map[string]bool{"yaml": true, "json": true, "props": true, "csv": true, "tsv": true, "xml": true,
	"base64": true, "base64d": true, "uri": true, "urid": true, "sh": true}

// maxYqExpr bounds the expression read.
const maxYqExpr = 64 << 10

// yqExpr reads a yq expression token by token: paths (.a, ."a", .[0],
// .[], ..), double-quoted strings without interpolation, numbers, $names
// an "as" binds, @formats, operator characters, and names, which must be
// in yqFuncs. Anything else (a character yq reads otherwise, a comment,
// an unlisted name) is refused.
func yqExpr(src string) string {
	if len(src) > maxYqExpr {
		return "expression too long to read"
	}
	bound := map[string]bool{}
	var prevName string
	for i := 0; i < len(src); {
		c := src[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n':
			i++
			continue
		case c == '"':
			j := i + 1
			for ; j < len(src) && src[j] != '"'; j++ {
				if src[j] == '\\' {
					j++
					if j < len(src) && src[j] == '(' {
						return "string interpolation is not read here"
					}
				}
			}
			if j >= len(src) {
				return "unterminated string"
			}
			i = j + 1
		case c == '.':
			// A path: . .. .a .a_b ."a" .[...] (the brackets are read as
			// operators next).
			i++
			for i < len(src) && yqIdentByte(src[i], false) {
				i++
			}
		case c >= '0' && c <= '9':
			for i < len(src) && (src[i] >= '0' && src[i] <= '9' || src[i] == '.' || src[i] == 'e' || src[i] == 'E') {
				i++
			}
		case c == '$':
			j := i + 1
			for j < len(src) && yqIdentByte(src[j], j == i+1) {
				j++
			}
			name := src[i+1 : j]
			switch {
			case name == "":
				return "$ without a variable name"
			case prevName == "as":
				bound[name] = true
			case !bound[name]:
				return "$" + name + " is not bound by the expression"
			}
			i = j
			prevName = ""
			continue
		case c == '@':
			j := i + 1
			for j < len(src) && yqIdentByte(src[j], false) {
				j++
			}
			if !yqFormats[src[i+1:j]] {
				return fmt.Sprintf("format @%s is not a known encoder", src[i+1:j])
			}
			i = j
		case yqIdentByte(c, true):
			j := i
			for j < len(src) && yqIdentByte(src[j], false) {
				j++
			}
			name := src[i:j]
			if !yqFuncs[name] {
				return name + " is not a known pure yq operator"
			}
			i = j
			prevName = name
			continue
		case strings.IndexByte("|,()[]{}:;=!<>+-*/%?", c) >= 0:
			i++
		default:
			return fmt.Sprintf("character %q is not read here", c)
		}
		prevName = ""
	}
	return ""
}

func yqIdentByte(c byte, first bool) bool {
	return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || !first && c >= '0' && c <= '9'
}
