package knowledge

import "testing"

func TestIsCredentialPath(t *testing.T) {
	tests := []struct {
		p, home string
		want    bool
	}{
		{"~/.ssh/id_rsa", "", true},
		{"~/.ssh/id_ed25519", "", true},
		{"~/.ssh/config", "", true},
		{"~/.ssh/authorized_keys", "", true},
		{"~/.ssh", "", true},
		{"~/.ssh/", "", true},
		{"$HOME/.ssh/id_rsa", "", true},
		{"${HOME}/.ssh/id_rsa", "", true},
		{"/home/dev/.ssh/id_rsa", "/home/dev", true},
		{"/home/other/.ssh/id_rsa", "/home/dev", true},
		{"/root/.ssh/id_ed25519", "", true},
		{"/Users/me/.ssh/id_rsa", "", true},
		{"/var/lib/jenkins/.ssh/id_rsa", "/var/lib/jenkins", true},
		{"~dev/.ssh/id_rsa", "", true},
		{"~/.aws/credentials", "", true},
		{"~/.aws/sso/cache/abc.json", "", true},
		{"~/.aws", "", true},
		{"~/.netrc", "", true},
		{"~/.docker/config.json", "", true},
		{"~/.kube/config", "", true},
		{"~/.git-credentials", "", true},
		{"~/.config/git/credentials", "", true},
		{"~/.npmrc", "", true},
		{"~/.pypirc", "", true},
		{"/opt/me/.npmrc", "/opt/me", true},
		{"../.npmrc", "", true},
		{"~/.gnupg/pubring.kbx", "", true},
		{"~/.gnupg", "", true},
		{"~/.config/gh/hosts.yml", "", true},
		{"~/.config/gcloud/application_default_credentials.json", "", true},
		{"~/.azure/msal_token_cache.json", "", true},
		{"~/.cargo/credentials.toml", "", true},
		{"~/.pgpass", "", true},
		{"../../.ssh/id_rsa", "", true},
		{".ssh/id_rsa", "", true},
		{"~/proj/../.ssh/id_rsa", "", true},
		{"/home/dev//.ssh/./id_rsa", "", true},
		{"/srv/homes/dev/.ssh/id_rsa", "", true},
		{"~/.SSH/Id_Rsa", "", true},
		{"~/.ss?/id_rsa", "", true},
		{"~/.*/credentials", "", true},
		{"~/.ssh/*", "", true},
		{"/proc/self/root/root/.ssh/id_rsa", "", true},
		{"~/.ssh/id_rsa.pub", "", false},
		{"~/.ssh/*.pub", "", false},
		{"~/.ssh/known_hosts", "", false},
		{"~/.aws/config", "", false},
		{".env", "", false},
		{"./.npmrc", "", false},
		{"web/.npmrc", "", false},
		{"/etc/passwd", "", false},
		{"README.md", "", false},
		{"~/project/main.go", "", false},
		{"~/*/x", "", false},
		{"src/*", "", false},
		{"~", "", false},
		{"/home/dev", "/home/dev", false},
		{"", "", false},
		{"[", "", false},
	}
	for _, tt := range tests {
		if got := IsCredentialPath(tt.p, tt.home); got != tt.want {
			t.Errorf("IsCredentialPath(%q, %q) = %v, want %v", tt.p, tt.home, got, tt.want)
		}
	}
}

func TestIsCredentialAncestor(t *testing.T) {
	tests := map[string]bool{
		"~": true, "~/": true, "$HOME": true, "~/.config": true, "~/.local/share": true, "/": true, "/home": true,
		"/home/dev": true, "/root": true, "/Users/me": true, "..": true, "../..": true, "~/..": true,
		"src": false, ".": false, "/etc": false, "~/project": false, "/work/main": false, "": false,
	}
	for p, want := range tests {
		if got := isCredentialAncestor(p); got != want {
			t.Errorf("isCredentialAncestor(%q) = %v, want %v", p, got, want)
		}
	}
}
