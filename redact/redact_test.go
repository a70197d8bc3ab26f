package redact

import (
	"strings"
	"testing"
)

func TestString(t *testing.T) {
	tests := []struct {
		name   string
		in     string
		secret string // must be gone
		keep   string // must survive
	}{
		{"openai key", "curl -H 'x: sk-proj-abcdefghijklmnop1234' api", "abcdefghijklmnop1234", "curl -H"},
		{"bearer header", "Authorization: Bearer eyAbc.def-ghi_jkl123", "eyAbc.def-ghi_jkl123", "Authorization"},
		{"aws key id", "export AWS_ACCESS_KEY_ID=AKIAIOSFODNN7EXAMPLE", "AKIAIOSFODNN7EXAMPLE", "export"},
		{"aws secret", "aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", "wJalrXUtnFEMI/K7MDENG", "aws_secret_access_key"},
		{"private key", "x -----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA\n-----END OPENSSH PRIVATE KEY----- y", "b3BlbnNzaC1rZXktdjEAAAAA", " y"},
		{"private key in JSON", `{"content":"-----BEGIN RSA PRIVATE KEY-----\nMIIEpAIBAAKCAQEA\n-----END RSA PRIVATE KEY-----"}`, "MIIEpAIBAAKCAQEA", `{"content":"`},
		{"password in URL", "git clone https://alice:hunter2secret@example.com/r.git", "hunter2secret", "alice"},
		{"password in JSON URL", `"url":"postgres:\/\/bob:s3cr3tpass@db:5432\/x"`, "s3cr3tpass", "bob"},
		{"github token", "GH=ghp_0123456789abcdefghijABCDEFGHIJ", "ghp_0123456789abcdefghij", "GH="},
		{"slack token", "xoxb-1234567890-abcdefghij", "1234567890-abcdefghij", ""},
		{"jwt", "tok eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U", "dozjgNryP4J3jVmNHl0w5N", "tok"},
		{"password assignment", "mysql -u root --password=Sup3rS3cret!", "Sup3rS3cret!", "mysql -u root"},
		{"json secret field", `{"api_key": "abc123def456"}`, "abc123def456", `"api_key"`},
		{"env line", "DB_PASSWORD=correcthorse\nOTHER=1", "correcthorse", "OTHER=1"},
		{"env line in JSON", `{"content":"DB_PASSWORD=correcthorse\nOTHER=1"}`, "correcthorse", `\nOTHER=1`},
		{"password flag with a space", "mysql --password hunter2 -h db", "hunter2", "-h db"},
		{"curl user", "curl -u alice:hunter2 https://x", "hunter2", "alice"},
		{"double-escaped JSON", `{\\\"password\\\":\\\"xyzzy-secret\\\"}`, "xyzzy-secret", "password"},
		{"PGP private key", "-----BEGIN PGP PRIVATE KEY BLOCK-----\nlQOYBGXYZpgpsecretbody\n-----END PGP PRIVATE KEY BLOCK-----", "pgpsecretbody", ""},
		{"URL password, empty user", "redis-cli --url redis://:hunter2pw@cache:6379", "hunter2pw", "cache:6379"},
		{"URL password holding an @", "psql postgres://u:p@ssw0rd@db/x", "ssw0rd", "db/x"},
		{"token as URL user", "git clone https://glpat-abcdefghij0123456789@gitlab.com/x.git", "abcdefghij0123456789", "gitlab.com"},
		{"gitlab token", "GL=glpat-abcdefghij0123456789", "abcdefghij0123456789", "GL="},
		{"stripe key", "STRIPE=sk_live_abcdefghij0123456789", "abcdefghij0123456789", "STRIPE="},
		{"hugging face token", "hf_abcdefghijklmnopqrstuvwxyz0123456789", "abcdefghijklmnopqrstuvwxyz0123", ""},
		{"bare authorization header", `curl -H "Authorization: 0123secretvalue" https://x`, "0123secretvalue", "https://x"},
		{"cookie header", `curl -H 'Cookie: session=abcd1234secret' https://x`, "abcd1234secret", "https://x"},
		{"docker auth", `{"auths":{"r.io":{"auth":"dXNlcjpodW50ZXIy"}}}`, "dXNlcjpodW50ZXIy", "r.io"},
		{"passphrase", "PASSPHRASE=open-sesame-words", "open-sesame-words", "PASSPHRASE"},
		{"mysql -p", "mysql -u root -pS3cretPw db", "S3cretPw", "mysql -u root"},
		{"curl -U", "curl -U proxyuser:proxypw123 https://x", "proxypw123", "proxyuser"},
		{"curl --proxy-user", "curl --proxy-user bob:proxypw456 https://x", "proxypw456", "bob"},
		{"kubernetes env", `{"env":[{"name":"DB_PASSWORD","value":"kube-secret-1"}]}`, "kube-secret-1", "DB_PASSWORD"},
		{"password flag in a JSON list", `{"args":["--password","list-secret-2"]}`, "list-secret-2", "--password"},
		{"password list value", `{"password":["list-secret-3"]}`, "list-secret-3", "password"},
		{"password with spaces", "password: correct horse battery staple", "battery staple", "password:"},
		{"password with a semicolon", "DB_PASSWORD=abc;defLeak", "defLeak", "DB_PASSWORD"},
		{"quoted password with spaces", `PASSWORD="pw with spaces"`, "with spaces", "PASSWORD"},
		{"password with an escaped backslash", `{"password":"abc\\defghij"}`, "defghij", "password"},
		{"password with an apostrophe", `{"password": "it's-a-long-secret"}`, "a-long-secret", "password"},
		{"key with an escaped quote", `{"api_key":"x\"yyyyzzzz"}`, "yyyyzzzz", "api_key"},
		{"mysql -p in a JSON argv", `{"command":["mysql","-uroot","-pS3cretPw","db"]}`, "S3cretPw", "-uroot"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := String(tt.in)
			if strings.Contains(got, tt.secret) {
				t.Errorf("secret survived: %q", got)
			}
			if !strings.Contains(got, Mask) {
				t.Errorf("nothing masked: %q", got)
			}
			if !strings.Contains(got, tt.keep) {
				t.Errorf("over-redacted, %q lost: %q", tt.keep, got)
			}
		})
	}
}

func TestKnownAndHarmless(t *testing.T) {
	if got := String("key is zq9-custom-key-value here", "zq9-custom-key-value"); strings.Contains(got, "zq9") {
		t.Errorf("known literal survived: %q", got)
	}
	// Short literals would mask ordinary words.
	if got := String("a short abc", "abc"); got != "a short abc" {
		t.Errorf("short literal masked: %q", got)
	}
	for _, s := range []string{"go test ./...", "git log --oneline -5", `{"file_path":"/work/app/main.go"}`, "npm run build && npm test"} {
		if got := String(s); got != s {
			t.Errorf("harmless text changed: %q -> %q", s, got)
		}
	}
}

// A long tool input without secrets (a file's content) is the common case
// on the audit path.
func BenchmarkStringLongContent(b *testing.B) {
	s := `{"content":"` + strings.Repeat("func main() { fmt.Println(x) }\n", 2000) + `","file_path":"/p/main.go"}`
	for b.Loop() {
		String(s)
	}
}
