// Package redact hides credentials in text bound for logs and debug dumps.
// It errs towards hiding too much: a dump with a hole in it is fine, a
// dump with a key in it is not.
package redact

import (
	"regexp"
	"strings"
)

// Mask replaces what was hidden.
const Mask = "[REDACTED]"

type rule struct {
	re   *regexp.Regexp
	repl string
	// hints: the rule can only match text whose lower-case form holds one
	// of these. Checking them first keeps long, ordinary tool inputs (file
	// contents) from paying for every regexp.
	hints []string
}

// secretName is a name that says its value is a credential.
const secretName = `(?:password|passwd|passphrase|pwd|secret|token|api[_-]?key|access[_-]?key|private[_-]?key|credential|auth[_-]?key)`

// rules are ordered: whole blocks first, then shapes, then key=value.
var rules = []rule{
	{regexp.MustCompile(`-----BEGIN[A-Z ]*PRIVATE KEY(?: BLOCK)?-----[\s\S]*?(-----END[A-Z ]*PRIVATE KEY(?: BLOCK)?-----|$)`), Mask, []string{"private key"}},
	// user:password@ in URLs (JSON may escape the slashes); the user may be
	// empty (redis://:pw@host) and the password may hold an @ (the last
	// one before the host ends it).
	{regexp.MustCompile(`([a-zA-Z][a-zA-Z0-9+.-]*:(?:\\?/){2}[^/\s:@"'\\]*):[^\s/"'\\]+@`), "${1}:" + Mask + "@", []string{"@"}},
	// A token as the whole user info (https://glpat-...@gitlab.com).
	{regexp.MustCompile(`([a-zA-Z][a-zA-Z0-9+.-]*:(?:\\?/){2})[A-Za-z0-9_.~-]{20,}@`), "${1}" + Mask + "@", []string{"@"}},
	{regexp.MustCompile(`(?i)\b(bearer|basic|token)(\s+)[A-Za-z0-9._~+/=-]{8,}`), "${1}${2}" + Mask, []string{"bearer", "basic", "token"}},
	// Header values that are credentials whatever their scheme.
	{regexp.MustCompile(`(?i)\b((?:proxy-)?authorization|cookie|set-cookie|x-api-key|api-key|x-auth-token)(\\*["'])?\s*:\s*(\\*["'])?((?:bearer|basic|token|digest)\s+)?([^"'\\\n]+)`), "${1}${2}: ${3}${4}" + Mask, []string{"authorization", "cookie", "api-key", "auth-token"}},
	{regexp.MustCompile(`\bsk-[A-Za-z0-9_-]{16,}`), Mask, []string{"sk-"}},                                                     // OpenAI, Anthropic
	{regexp.MustCompile(`\b(AKIA|ASIA|AGPA|AIDA|AROA)[0-9A-Z]{16}\b`), Mask, []string{"akia", "asia", "agpa", "aida", "aroa"}}, // AWS access key ids
	{regexp.MustCompile(`\b(ghp|gho|ghu|ghs|ghr)_[A-Za-z0-9]{20,}`), Mask, []string{"ghp_", "gho_", "ghu_", "ghs_", "ghr_"}},   // GitHub tokens
	{regexp.MustCompile(`\bgithub_pat_[A-Za-z0-9_]{20,}`), Mask, []string{"github_pat_"}},                                      // GitHub fine-grained
	{regexp.MustCompile(`\bglpat-[A-Za-z0-9_-]{20,}`), Mask, []string{"glpat-"}},                                               // GitLab
	{regexp.MustCompile(`\b[rs]k_(?:live|test)_[A-Za-z0-9]{16,}`), Mask, []string{"k_live_", "k_test_"}},                       // Stripe
	{regexp.MustCompile(`\bhf_[A-Za-z0-9]{30,}`), Mask, []string{"hf_"}},                                                       // Hugging Face
	{regexp.MustCompile(`\bnpm_[A-Za-z0-9]{36}`), Mask, []string{"npm_"}},                                                      // npm
	{regexp.MustCompile(`\bxox[abprs]-[A-Za-z0-9-]{10,}`), Mask, []string{"xox"}},                                              // Slack
	{regexp.MustCompile(`\bAIza[0-9A-Za-z_-]{35}`), Mask, []string{"aiza"}},                                                    // Google API keys
	{regexp.MustCompile(`\beyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}`), Mask, []string{"eyj"}},                // JWTs
	// curl -u user:pass, --user, -U and --proxy-user.
	{regexp.MustCompile(`((?:^|\s)(?:-[uU]\s*|--(?:proxy-)?user[=\s]\s*)["']?[^:\s"']+):([^\s"'\\]+)`), "${1}:" + Mask, []string{"-u", "-user"}},
	// mysql -pSECRET (no space: the password itself), in a command line
	// or as an element of a JSON argv list.
	{regexp.MustCompile(`(?i)(\b(?:mysql|mariadb|mysqldump|mysqladmin)\b[^\n"]*?\s-p)([^\s"'\\]+)`), "${1}" + Mask, []string{"mysql", "mariadb"}},
	{regexp.MustCompile(`(?i)(\b(?:mysql|mariadb|mysqldump|mysqladmin)\b[^\n]*?(?:\\*")\s*,\s*(?:\\*")-p)([^"\\]+)`), "${1}" + Mask, []string{"mysql", "mariadb"}},
	// --password value, --token value: after a space, or as the next
	// element of a JSON list (["--password","value"]).
	{regexp.MustCompile(`(?i)(--?(?:password|passwd|passphrase|pass|token|api-key|apikey|secret|access-token)(?:\s+|(?:\\*")\s*,\s*(?:\\*")))([^\s"'\\-][^\s"'\\]*)`), "${1}" + Mask, []string{"pass", "token", "api", "secret"}},
	// A name/value pair whose name says secret (Kubernetes env lists).
	{regexp.MustCompile(`(?i)("name"\s*:\s*"[A-Za-z0-9_.-]*` + secretName + `[A-Za-z0-9_.-]*"\s*,\s*"value"\s*:\s*")([^"\\]*)`), "${1}" + Mask, []string{"\"value\""}},
	// Docker's config.json: "auth": "base64(user:password)".
	{regexp.MustCompile(`("auth"\s*:\s*")([^"\\]+)`), "${1}" + Mask, []string{"\"auth\""}},
	// KEY=value and "key": "value" for names that say secret, also when the
	// quotes are escaped once or more (JSON inside JSON) and when the value
	// is a list. The value runs to an unescaped double quote or the end of
	// the line (a real or a JSON-escaped newline): escaped quotes,
	// backslashes and apostrophes inside it are hidden too, and an unquoted
	// value loses the rest of its line. Errs towards hiding.
	{regexp.MustCompile(`(?i)([A-Za-z0-9_.-]*` + secretName + `[A-Za-z0-9_.-]*(?:\\*["'])?\s*[:=]\s*(?:\[\s*)?(?:\\*["'])?)((?:[^"\\\n]|\\[^n])+)`), "${1}" + Mask,
		[]string{"pass", "pwd", "secret", "token", "apikey", "api_key", "api-key", "accesskey", "access_key", "access-key", "privatekey", "private_key", "private-key", "credential", "authkey", "auth_key", "auth-key"}},
}

func (r rule) mayMatch(lower string) bool {
	for _, h := range r.hints {
		if strings.Contains(lower, h) {
			return true
		}
	}
	return false
}

// String hides credentials in s, and every literal in known (for example
// API keys read from the environment).
func String(s string, known ...string) string {
	for _, k := range known {
		if len(k) >= 8 {
			s = strings.ReplaceAll(s, k, Mask)
		}
	}
	lower := strings.ToLower(s)
	for _, r := range rules {
		if r.mayMatch(lower) {
			s = r.re.ReplaceAllString(s, r.repl)
			lower = strings.ToLower(s)
		}
	}
	return s
}
