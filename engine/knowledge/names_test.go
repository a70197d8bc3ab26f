package knowledge

import "testing"

// Every example of a shape is secret-shaped: the examples are what name
// patterns are tried against, so one that no glob matches would let a
// pattern pick a shape's files unnoticed.
func TestSecretShapeExamples(t *testing.T) {
	for _, s := range secretShapes {
		for _, n := range s.examples {
			if !SecretName(n) {
				t.Errorf("example %q of %q is not secret-shaped", n, s.why)
			}
		}
		for _, g := range s.globs {
			if !GlobSupported(g) {
				t.Errorf("glob %q of %q is outside the supported syntax", g, s.why)
			}
		}
	}
}

func TestSecretName(t *testing.T) {
	secret := []string{".env", ".ENV", ".env.local", ".env.production", "staging.env", ".envrc", "id_rsa", "ID_ED25519",
		"server.key", "tls.pem", "ssh_host_ecdsa_key", "cert.p12", "store.jks", ".netrc", ".npmrc", ".pypirc", ".pgpass",
		".git-credentials", ".vault-token", "credentials", "credentials.json", "client_secret.json", "app-secrets.yaml",
		"db_password.txt", "token", "github_token", "access_token.json", ".bash_history", ".zsh_history", ".python_history",
		".node_repl_history", ".psql_history", ".lesshst", "Cookies", "Login Data", "key4.db", "logins.json",
		"terraform.tfstate", "terraform.tfstate.backup", "prod.tfvars", "shadow", "gshadow", ".claude.json", ".my.cnf",
		"kubeconfig", "service-account-prod.json", "krb5.keytab", "backup.gpg"}
	for _, n := range secret {
		if !SecretName(n) {
			t.Errorf("SecretName(%q) = false, want true", n)
		}
	}
	harmless := []string{"main.go", "README.md", ".env.example", ".env.sample", ".env.template", "id_rsa.pub",
		"secret_test.go", "secrets.py", "tokenizer.py", "tokens.go", "password_reset.tsx", "credentials.md",
		"Makefile", "package.json", "go.mod", ".gitignore", "environment.ts", "keys.go", "monkey.txt", "history.go",
		"env.go", "keyboard.c", "config.yaml", ".eslintrc", "pems.txt"}
	for _, n := range harmless {
		if SecretName(n) {
			t.Errorf("SecretName(%q) = true, want false", n)
		}
	}
}

func TestSecretPath(t *testing.T) {
	for _, p := range []string{"/p/.env", "/p/config/.env.local", "/p/secrets/db.yaml", "/home/u/.ssh/config",
		"/p/.aws/config", "~/.aws/credentials", "/etc/shadow", "/p/.git/config", "/p/deploy/tls.key"} {
		if !SecretPath(p, "/home/u") {
			t.Errorf("SecretPath(%q) = false, want true", p)
		}
	}
	for _, p := range []string{"/p/src/main.go", "/p/.github/workflows/ci.yml", "/usr/include/stdio.h", "/p/.git/HEAD",
		"/p/docs/keys.md", "/p/.env.example"} {
		if SecretPath(p, "/home/u") {
			t.Errorf("SecretPath(%q) = true, want false", p)
		}
	}
}

func TestNamePicksSecret(t *testing.T) {
	picks := []string{"*", ".*", "*.env", ".env*", ".e*", "*.pem", "*.p?m", "id_*", "{a,.env}", "*.[kp]e[my]", "*key",
		"*[[:alpha:]]", "[.]env", "*.{json,pem}", ".??v", "*history", "*_rsa", "secrets", "*cred*", "**",
		// A leading wildcard matches the dot for these readers.
		"?env", "?env*", "?git", "?netrc", "*ssh", "?aws"}
	for _, p := range picks {
		if !NamePicksSecret(p) {
			t.Errorf("NamePicksSecret(%q) = false, want true", p)
		}
	}
	clean := []string{"*.go", "*.py", "*_test.go", "src/*.ts", "*.md", "*.{js,ts}", "Makefile", "[abc].txt", "*.json.go"}
	for _, p := range clean {
		if NamePicksSecret(p) {
			t.Errorf("NamePicksSecret(%q) = true, want false", p)
		}
	}
}

func TestMatch(t *testing.T) {
	tests := []struct {
		g, n     string
		want, ok bool
	}{
		{"*.go", "main.go", true, true},
		{"*.go", ".main.go", false, true},
		{".*", ".env", true, true},
		{"[.]env", ".env", true, true},
		{"?env", ".env", false, true},
		{"[!a]x", "bx", true, true},
		{"[^a]x", "ax", false, true},
		{"[a-c]", "b", true, true},
		{"[]]", "]", true, true},
		{"[", "[", true, true},
		{"a[b", "a[b", true, true},
		{"[[:alpha:]]", "a", false, false},
		{"[[=a=]]", "a", false, false},
		{"*.PEM", "key.pem", true, true},
		{"a*b*c*d", "aXbXcXd", true, true},
		{"x*[[:digit:]]", "y", false, false},
	}
	for _, tt := range tests {
		got, ok := Match(tt.g, tt.n)
		if got != tt.want || ok != tt.ok {
			t.Errorf("Match(%q, %q) = %v, %v; want %v, %v", tt.g, tt.n, got, ok, tt.want, tt.ok)
		}
	}
}

func TestDirPicksSecret(t *testing.T) {
	for _, p := range []string{".*", "secret*", "[.]ssh", ".s?h", "*s", "[[:alpha:]]*"} {
		if !DirPicksSecret(p) {
			t.Errorf("DirPicksSecret(%q) = false, want true", p)
		}
	}
	for _, p := range []string{"src*", "doc?", "[abc]"} {
		if DirPicksSecret(p) {
			t.Errorf("DirPicksSecret(%q) = true, want false", p)
		}
	}
}

// TestSecretCopies: a backup, swap or autosave copy of a secret file is
// as secret as the file; copies of ordinary files stay ordinary.
func TestSecretCopies(t *testing.T) {
	for name, want := range map[string]bool{
		".env~": true, "#.env#": true, ".#.env": true, "id_ed25519.bak": true, ".netrc.orig": true, ".npmrc~": true,
		".pgpass.old": true, ".id_rsa.swp": true, "..env.swp": true, "credentials.json.save": true, "id_rsa.bak.orig": true,
		"secrets.yaml,v": true, "key.pem.tmp": true,
		"main.go~": false, "notes.md.bak": false, "#README#": false, "config.old": false,
		".bashrc.swp": false, "~": false, ".bak": false, "#": false,
	} {
		if got := SecretName(name); got != want {
			t.Errorf("SecretName(%q) = %v, want %v", name, got, want)
		}
	}
}
