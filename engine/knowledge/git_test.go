package knowledge

import "testing"

func TestGitURLCarriesCredentials(t *testing.T) {
	for url, want := range map[string]bool{
		"https://github.com/acme/app.git":   false,
		"git@github.com:acme/app.git":       false,
		"ssh://git@github.com/acme/app.git": false,
		"/srv/git/app.git":                  false,
		"../other":                          false,
		"":                                  false,
		"https://x-access-token:ghs_abc@github.com/a/b.git": true,
		"https://ghp_abc@github.com/a/b.git":                true,
		"HTTPS://TOKEN@github.com/a/b":                      true,
		"http://user:pw@host/x":                             true,
		"ssh://git:hunter2@host/x":                          true,
		"ftp://u@host/x":                                    true,
		"https://host/x?access_token=abc":                   true,
		"https://host/x#frag":                               true,
		"user:pw@host:path":                                 true,
		"host:path?x=1":                                     true,
		"https://[::1":                                      true, // does not parse
	} {
		if got := GitURLCarriesCredentials(url); got != want {
			t.Errorf("GitURLCarriesCredentials(%q) = %v, want %v", url, got, want)
		}
	}
}

func TestGitConfigInert(t *testing.T) {
	for _, tc := range []struct {
		sec, sub, key, val string
		want               bool
	}{
		{"core", "", "bare", "false", true},
		{"CORE", "", "FileMode", "true", true},
		{"remote", "origin", "url", "x", true},
		{"credential", "https://example.com", "helper", "store", true},
		{"user", "", "email", "a@x", true},
		{"color", "diff", "meta", "blue", true},
		{"advice", "", "detachedHead", "false", true},
		{"alias", "", "st", "status", true},
		{"filter", "lfs", "clean", "git-lfs clean -- %f", true},
		{"filter", "lfs", "required", "true", true},
		// Programs git runs for read-only commands, or that change what they print.
		{"core", "", "fsmonitor", "x", false},
		{"core", "", "pager", "less", false},
		{"core", "", "alternateRefsCommand", "x", false},
		{"core", "", "worktree", "/", false},
		{"core", "", "sshCommand", "x", false},
		{"pager", "", "log", "x", false},
		{"diff", "", "external", "x", false},
		{"diff", "foo", "textconv", "x", false},
		{"diff", "foo", "command", "x", false},
		{"filter", "lfs", "clean", "sh -c id", false},
		{"filter", "x", "clean", "cat", false},
		{"log", "", "showSignature", "true", false},
		{"pretty", "", "mine", "%GG", false},
		{"format", "", "pretty", "x", false},
		{"extensions", "", "partialClone", "origin", false},
		{"remote", "origin", "promisor", "true", false},
		{"remote", "origin", "uploadpack", "x", false},
		{"help", "", "autocorrect", "1", false},
		{"blame", "", "ignoreRevsFile", "x", false},
		{"somethingnew", "", "key", "x", false},
		{"core", "x", "bare", "false", false}, // core.x.bare is not core.bare
	} {
		if got := GitConfigInert(tc.sec, tc.sub, tc.key, tc.val); got != tc.want {
			t.Errorf("GitConfigInert(%s, %q, %s, %q) = %v, want %v", tc.sec, tc.sub, tc.key, tc.val, got, tc.want)
		}
	}
}

func TestGitConfigPrintable(t *testing.T) {
	for name, want := range map[string]bool{
		"user.name": true, "USER.Email": true, "core.compression": true, "core.bare": true, "init.defaultBranch": true,
		"branch.main.remote": true, "pull.rebase": true,
		"remote.origin.url": false, "remote.origin.pushurl": false, "submodule.lib.url": false, "lfs.url": false,
		"url.https://tok@host/.insteadof": false, "credential.helper": false, "credential.https://h.username": false,
		"http.sslverify": false, "sendemail.smtpuser": false, "core.fsmonitor": false, "core.pager": false,
		"alias.x": true, "filter.lfs.clean": false, "nosuch.key": false, "user": false, "user.": false, ".x": false,
	} {
		if got := GitConfigPrintable(name); got != want {
			t.Errorf("GitConfigPrintable(%q) = %v, want %v", name, got, want)
		}
	}
}
