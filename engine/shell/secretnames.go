package shell

import (
	"path"
	"strings"
)

// secretNames are file names whose content must not be printed: a name
// pattern (a find -name, a grep --include or rg -g filter, a Grep tool
// glob, a glob operand) is tried against them.
var secretNames = []string{".env", ".env.local", ".env.production", ".envrc", ".netrc", ".npmrc", ".pypirc",
	".git-credentials", "credentials", "id_rsa", "id_ed25519", "id_ecdsa", "secrets.yml",
	"key.pem", "server.key", "tls.key", "cert.p12", "cert.pfx", "keystore.jks", "auth.json", ".credentials.json", "config",
	".bash_history", ".zsh_history", ".sh_history", ".history", ".python_history", ".node_repl_history",
	".psql_history", ".mysql_history", ".sqlite_history", ".irb_history"}

// NamePicksSecret reports whether a file-name pattern (a glob, or a plain
// name) can match one of the secret names, read as ripgrep, find and
// Gemini CLI read patterns: braces expand ({.env,x}), [!x] is a negated
// set, case is ignored. A pattern too large to expand, or one Go cannot
// read, counts as picking one.
func NamePicksSecret(pattern string) bool {
	alts, ok := expandBraces(pattern, 64)
	if !ok {
		return true
	}
	for _, a := range alts {
		base := strings.ToLower(path.Base(strings.ReplaceAll(a, "[!", "[^")))
		for _, n := range secretNames {
			if m, err := path.Match(base, n); m || err != nil {
				return true
			}
		}
	}
	return false
}

// expandBraces returns the alternatives of a glob's brace sets, nested
// ones included, at most limit of them (ok false beyond that, or for an
// unclosed brace).
func expandBraces(g string, limit int) ([]string, bool) {
	open := strings.IndexByte(g, '{')
	if open < 0 {
		return []string{g}, true
	}
	depth, end := 0, -1
	var cuts []int
	for i := open; i < len(g) && end < 0; i++ {
		switch g[i] {
		case '{':
			depth++
		case '}':
			depth--
			if depth == 0 {
				end = i
			}
		case ',':
			if depth == 1 {
				cuts = append(cuts, i)
			}
		}
	}
	if end < 0 {
		return nil, false
	}
	var parts []string
	prev := open + 1
	for _, c := range cuts {
		parts = append(parts, g[prev:c])
		prev = c + 1
	}
	parts = append(parts, g[prev:end])
	var out []string
	for _, p := range parts {
		alts, ok := expandBraces(g[:open]+p+g[end+1:], limit-len(out))
		if !ok {
			return nil, false
		}
		out = append(out, alts...)
		if len(out) > limit {
			return nil, false
		}
	}
	return out, true
}
