package knowledge

import (
	"path"
	"strings"
)

// secretShape is a group of file-name globs whose content must not be
// printed into an agent's transcript without asking, with example names
// that a name pattern (find -name, a search tool's glob filter) is tried
// against. Every example matches one of its group's globs (tested).
type secretShape struct {
	why      string
	globs    []string
	examples []string
}

// secretShapes are secret-shaped file names: matched anywhere, inside the
// read roots too (a project's .env is as secret as the home's). Globs are
// folded and matched with Match.
var secretShapes = []secretShape{
	{why: "environment files hold the project's secrets",
		globs:    []string{".env", ".env.*", "*.env", ".envrc", ".flaskenv"},
		examples: []string{".env", ".env.local", ".env.production", "prod.env", ".envrc"}},
	{why: "private keys and key stores",
		globs: []string{"id_rsa", "id_dsa", "id_ecdsa", "id_ed25519", "id_ecdsa_sk", "id_ed25519_sk", "id_xmss",
			"*.pem", "*.key", "*_key", "*-key", "*.p12", "*.pfx", "*.jks", "*.keystore", "*.kdbx", "*.ppk", "*.p8",
			"*.gpg", "*.pgp", "*.asc", "*.ovpn", "*.age", "*.mobileprovision", "secring.*", "*.snk"},
		examples: []string{"id_rsa", "id_ed25519", "key.pem", "server.key", "tls.key", "ssh_host_rsa_key", "cert.p12",
			"cert.pfx", "keystore.jks", "vault.kdbx", "private-key"}},
	{why: "credential and token files of tools and services",
		globs: []string{".netrc", "_netrc", ".npmrc", ".yarnrc", ".yarnrc.yml", ".pypirc", ".pgpass", ".git-credentials",
			".vault-token", ".boto", ".s3cfg", ".my.cnf", ".mylogin.cnf", ".htpasswd", ".dockercfg", ".claude.json",
			".credentials.json", "credentials", "credentials.*", "*credential*", "*secret*", "*passw*", "*.token",
			"token", "token.*", "tokens", "tokens.*", "*_token", "*-token", "*_token.*", "*-token.*", "auth.json",
			"oauth_creds.json", "*.tfstate", "*.tfstate.*", "*.tfvars", "terraform.rc", ".terraformrc", "kubeconfig",
			"*.kubeconfig", "service-account*.json", "serviceaccount*.json", "*-sa.json", "shadow", "shadow-",
			"gshadow", "gshadow-", "master.passwd", "*.keytab", "sealed-secrets*", "vault.yml", "vault.yaml"},
		examples: []string{".netrc", ".npmrc", ".pypirc", ".pgpass", ".git-credentials", "credentials",
			"credentials.json", "client_secret.json", "secrets.yml", "passwords.txt", "token", "token.json",
			"auth.json", ".claude.json", ".credentials.json", "terraform.tfstate", "prod.tfvars", "shadow",
			"kubeconfig", "service-account.json"}},
	{why: "shell and REPL histories hold pasted tokens",
		globs: []string{".*_history", ".history", ".*history", ".lesshst", ".viminfo", ".wget-hsts", "*.histfile",
			".histfile", "history.db", "fish_history"},
		examples: []string{".bash_history", ".zsh_history", ".history", ".python_history", ".node_repl_history",
			".psql_history", ".mysql_history", ".sqlite_history", ".irb_history", ".lesshst", ".viminfo", "fish_history"}},
	{why: "browser profiles hold saved passwords and session cookies",
		globs:    []string{"cookies", "cookies.sqlite", "cookies.sqlite-*", "login data", "login data-*", "web data", "key3.db", "key4.db", "logins.json", "local state"},
		examples: []string{"Cookies", "cookies.sqlite", "Login Data", "Web Data", "key4.db", "logins.json"}},
}

// secretNotShaped are names that match a secret shape but hold none by
// convention: committed templates and public halves of keys.
var secretNotShaped = []string{"*.example", "*.sample", "*.template", "*.dist", "*.tmpl", "*.pub", "*.md"}

// codeExtensions exempt names matched only by the broad word shapes
// (*secret*, *credential*, *passw*, *_token.*): source code about secrets
// is code, and refusing every secret_test.go would send ordinary reads to
// the classifier for nothing.
var codeExtensions = []string{".go", ".py", ".js", ".mjs", ".cjs", ".ts", ".tsx", ".jsx", ".rs", ".java", ".kt", ".rb",
	".c", ".h", ".cc", ".cpp", ".hpp", ".cs", ".swift", ".php", ".scala", ".ex", ".exs", ".erl", ".clj", ".lua",
	".sh", ".html", ".css", ".vue", ".svelte", ".rst", ".txt.go", ".snap", ".proto"}

// broadWords are the globs whose match alone is not enough for a code file.
var broadWords = map[string]bool{"token.*": true, "tokens.*": true, "credentials.*": true, "*credential*": true, "*secret*": true, "*passw*": true, "*_token.*": true, "*-token.*": true}

// SecretName reports whether a file name (one component) is secret-shaped,
// or a backup, swap or autosave copy of one (.env~, #.env#, id_rsa.bak,
// .netrc.orig, .id_rsa.swp): a copy holds what the file held.
func SecretName(name string) bool { return secretName(Fold(name), 4) }

func secretName(n string, depth int) bool {
	if n == "" || n == "." || n == ".." || notShapedSet.any(n) {
		return false
	}
	if strictShapeSet.any(n) || (broadShapeSet.any(n) && !hasCodeExtension(n)) {
		return true
	}
	return anyCopiedName(n, func(orig string) bool {
		return depth == 0 || secretName(orig, depth-1) // a copy of a secret, or copies too deep to tell
	})
}

// backupSuffixes are what editors, tools and people append to a file's
// name for a copy of it.
var backupSuffixes = []string{"~", ".bak", ".backup", ".old", ".orig", ".save", ".sav", ".prev", ".tmp", ".copy", ",v", ".swp", ".swo", ".swn", ".swx", ".un~", ".rej"}

// anyCopiedName reports whether f holds for a name a copy's name may
// have been made from: a backup suffix taken off, Emacs's #name# and
// .#name, Vim's .name.swp. (No slice: it runs for every name a tree
// walk meets.)
func anyCopiedName(n string, f func(string) bool) bool {
	if len(n) > 2 && n[0] == '#' && n[len(n)-1] == '#' && f(n[1:len(n)-1]) {
		return true
	}
	if rest, ok := strings.CutPrefix(n, ".#"); ok && rest != "" && f(rest) {
		return true
	}
	for _, suf := range backupSuffixes {
		if rest, ok := strings.CutSuffix(n, suf); ok && rest != "" {
			if f(rest) || len(rest) > 1 && rest[0] == '.' && f(rest[1:]) { // Vim's swap files: .name.swp
				return true
			}
		}
	}
	return false
}

// The secret shapes compiled: the globs a code file may match without
// being secret (broadWords) apart from the rest.
var notShapedSet, strictShapeSet, broadShapeSet = func() (globSet, globSet, globSet) {
	var strict, broad []string
	for i := range secretShapes {
		for _, g := range secretShapes[i].globs {
			if broadWords[g] {
				broad = append(broad, g)
			} else {
				strict = append(strict, g)
			}
		}
	}
	return newGlobSet(secretNotShaped), newGlobSet(strict), newGlobSet(broad)
}()

func hasCodeExtension(n string) bool {
	for _, ext := range codeExtensions {
		if strings.HasSuffix(n, ext) {
			return true
		}
	}
	return false
}

// secretDirs are directory names whose whole content is secret wherever
// they appear (a project's secrets/ too).
var secretDirs = []string{".ssh", ".gnupg", ".aws", ".azure", ".password-store", "keyrings", ".secrets", "secrets",
	".kube", ".docker", ".vault", ".terraform.d"}

var secretDirSet = func() map[string]bool {
	m := map[string]bool{}
	for _, d := range secretDirs {
		m[d] = true
	}
	return m
}()

// SecretPath reports whether any component of p (as written, not resolved)
// is a secret-shaped name or a secret directory, or whether p names a
// credential store (see IsCredentialPath). Callers try both the path as
// written and as resolved.
func SecretPath(p, home string) bool {
	if IsCredentialPathLiteral(p, home) {
		return true
	}
	for _, c := range strings.Split(p, "/") {
		if c == "" {
			continue
		}
		if SecretName(c) {
			return true
		}
		if secretDirSet[Fold(c)] {
			return true
		}
	}
	return false
}

// DirPicksSecret reports whether a one-component glob can name a secret
// directory (one whose every file is secret) or an unsupported pattern.
func DirPicksSecret(pattern string) bool {
	if !GlobSupported(pattern) {
		return true
	}
	for _, d := range secretDirs {
		if m, _ := Match(pattern, d); m {
			return true
		}
	}
	return false
}

// NamePicksSecret reports whether a file-name pattern (a glob, or a plain
// name) can match a secret-shaped name, read as ripgrep, find and Gemini
// CLI read patterns: braces expand ({.env,x}), [!x] is a negated set, case
// is ignored. A pattern too large to expand, or outside the syntax Match
// reads exactly, counts as picking one.
func NamePicksSecret(pattern string) bool {
	if len(pattern) > maxNamePattern {
		return true
	}
	alts, ok := ExpandBraces(pattern, 64)
	if !ok {
		return true
	}
	for _, a := range alts {
		base := path.Base(a)
		if !HasMeta(base) {
			if SecretName(base) || SecretPath(a, "") || Fold(base) == ".git" {
				return true
			}
			continue
		}
		if !GlobSupported(base) {
			return true
		}
		// These readers match a leading dot with * and ? (fnmatch without
		// FNM_PERIOD, globset, node-glob's dot:true): ?env is .env.
		fb := Fold(base)
		for _, n := range secretExamples {
			if m, _ := match(fb, n); m {
				return true
			}
		}
	}
	return false
}

// maxNamePattern bounds the name patterns NamePicksSecret judges: longer
// than PATH_MAX, a pattern names no file, and judging it would cost its
// length for every example name.
const maxNamePattern = 4096

// secretExamples are the names NamePicksSecret tries a pattern against,
// folded: the secretShapes' examples, the secretDirs and .git (a filter
// that keeps .git makes a search enter it, and its config may hold
// tokens).
var secretExamples = func() []string {
	var out []string
	for i := range secretShapes {
		for _, n := range secretShapes[i].examples {
			out = append(out, Fold(n))
		}
	}
	for _, d := range append(secretDirs[:len(secretDirs):len(secretDirs)], ".git") {
		out = append(out, Fold(d))
	}
	return out
}()
