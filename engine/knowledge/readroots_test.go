package knowledge

import "testing"

func TestRootsWithin(t *testing.T) {
	rs := CompileRoots([]string{"/p", "/usr/lib/python3.*", "~/go/pkg/mod", "relative", "~other/x"}, "/home/u")
	for _, p := range []string{"/p", "/p/src/a.go", "/usr/lib/python3.11/os.py", "/home/u/go/pkg/mod/x@v1/a.go"} {
		if !rs.Within(p) {
			t.Errorf("Within(%q) = false, want true", p)
		}
	}
	for _, p := range []string{"/", "/pp", "/P/src", "/usr/lib/python2.7/os.py", "/home/u/go/bin/x", "/home/u", "relative/x",
		"/usr/lib/python3", "/home/other/go/pkg/mod"} {
		if rs.Within(p) {
			t.Errorf("Within(%q) = true, want false", p)
		}
	}
	if CompileRoots([]string{"~/go/pkg/mod"}, "").Within("/go/pkg/mod") {
		t.Error("a ~ root without a home must not compile")
	}
}

// TestAgentTaskOutputRoots: this project's background output is a read
// root; other projects', other users' tmp trees and the rest of the
// agent's temporary directory are not.
func TestAgentTaskOutputRoots(t *testing.T) {
	for _, tc := range []struct {
		p, cwd string
		want   bool
	}{
		{"/tmp/claude-0/-tmp-proj/8d2c9a4e-1b7f-4c3e-9a55-0f6b2d1e3c47/tasks/b3x9k2.output", "/tmp/proj", true},
		{"/private/tmp/claude-502/-Users-dev-proj/tasks/bcc53f3.output", "/Users/dev/proj", true},
		{"/private/var/folders/xk/1q2w3e4r/T/claude-501/-Users-dev-my-proj/abc/tasks/b1.output", "/Users/dev/my.proj", true},
		{"/tmp/claude-0/-home-bob-payroll/tasks/b1.output", "/tmp/proj", false},
		{"/tmp/claude-0/-tmp-proj/notes.txt", "/tmp/proj", false},
		{"/tmp/claude-0/-tmp-proj/a/b/tasks/x.output", "/tmp/proj", false},
		{"/tmp/claude-0x/-tmp-proj/tasks/x.output", "/tmp/proj", false},
		{"/tmp/claude-/-tmp-proj/tasks/x.output", "/tmp/proj", false},
		{"/tmp/other/-tmp-proj/tasks/x.output", "/tmp/proj", false},
		{"/tmp/claude-0/-tmp-proj/tasks/x.output", "proj", false},
	} {
		if got := InAgentTasks(tc.p, tc.cwd); got != tc.want {
			t.Errorf("InAgentTasks(%q, %q) = %v, want %v", tc.p, tc.cwd, got, tc.want)
		}
	}
}

func TestDefaultReadRootsHoldNoSecretShapes(t *testing.T) {
	for _, r := range DefaultReadRoots {
		if SecretPath(r, "") {
			t.Errorf("default read root %s is secret-shaped", r)
		}
	}
}

func TestHarmlessVar(t *testing.T) {
	for _, n := range []string{"HOME", "PATH", "PWD", "LC_ALL", "?", "1", "10", "@", "GOPATH"} {
		if !HarmlessVar(n) {
			t.Errorf("HarmlessVar(%q) = false", n)
		}
	}
	for _, n := range []string{"DB_PASS", "AWS_SECRET_ACCESS_KEY", "DATABASE_URL", "SLACK_WEBHOOK", "GPG_PASSPHRASE", "JWT",
		"HTTP_PROXY", "GOPROXY", "NPM_CONFIG_REGISTRY", "LC_x", "", "home", "X"} {
		if HarmlessVar(n) {
			t.Errorf("HarmlessVar(%q) = true", n)
		}
	}
}
