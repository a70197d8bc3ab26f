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
		if SecretPath(r.Path, "") {
			t.Errorf("default read root %s is secret-shaped", r.Path)
		}
		if r.Kinds == AnyFile {
			t.Errorf("default read root %s admits any file: a default root says which kinds it holds", r.Path)
		}
	}
}

// TestDefaultReadRootsAdmit: inside the default roots, published source,
// headers and documentation are read; the live configuration that lands
// in toolchain prefixes and caches is not, whether because its subtree is
// no root or because it is no such file.
func TestDefaultReadRootsAdmit(t *testing.T) {
	const home = "/home/u"
	rs := CompileReadRoots([]string{"/opt/vendor-sdk"}, home)
	admit := func(p string) bool {
		in, kinds := rs.Place(p)
		return in && Admits(kinds, p)
	}
	for _, p := range []string{
		"/usr/include/stdio.h", "/usr/include/c++/12/vector", "/usr/include/x86_64-linux-gnu/sys/types.h",
		"/usr/share/man/man1/ls.1.gz", "/usr/share/man/man3/printf.3p.gz", "/usr/share/info/coreutils.info.gz",
		"/usr/share/doc/git/README.Debian", "/usr/share/doc/git/changelog.Debian.gz", "/usr/share/doc/git/copyright",
		"/usr/share/common-licenses/GPL-3", "/usr/local/go/src/net/http/server.go", "/usr/lib/go-1.22/src/go.mod",
		"/usr/lib/python3.11/json/__init__.py", "/usr/lib/python3/dist-packages/yaml/__init__.py",
		"/home/u/.pyenv/versions/3.12.1/lib/python3.12/site-packages/requests/api.py",
		"/home/u/.pyenv/versions/3.12.1/lib/python3.12/site-packages/requests-2.31.0.dist-info/METADATA",
		"/home/u/.nvm/versions/node/v20.11.0/lib/node_modules/npm/package.json",
		"/home/u/.nvm/versions/node/v20.11.0/lib/node_modules/typescript/lib/lib.d.ts",
		"/home/u/go/pkg/mod/github.com/spf13/cobra@v1.8.0/command.go",
		"/home/u/go/pkg/mod/golang.org/x/net@v0.20.0/LICENSE",
		"/home/u/.cargo/registry/src/index.crates.io-6f17d22bba15001f/serde-1.0.195/Cargo.toml",
		"/home/u/.m2/repository/org/slf4j/slf4j-api/2.0.9/slf4j-api-2.0.9.pom",
		"/home/u/.rustup/toolchains/stable-x86_64-unknown-linux-gnu/lib/rustlib/src/rust/library/core/src/lib.rs",
		"/opt/vendor-sdk/etc/settings.conf", // a policy's own root: any file
	} {
		if !admit(p) {
			t.Errorf("%s is not read locally, want it read", p)
		}
	}
	for _, p := range []string{
		// Live configuration in toolchain prefixes: outside the narrowed roots.
		"/home/u/.nvm/versions/node/v20.11.0/etc/npmrc",
		"/home/u/.pyenv/versions/venv-prod/pip.conf",
		"/home/u/.pyenv/versions/3.12.1/envs/tools/pip.conf",
		"/home/u/.local/share/uv/python/cpython-3.12-linux/pip.conf",
		"/usr/local/go/go.env", "/home/u/sdk/go1.22.0/go.env",
		"/home/u/go/pkg/mod/cache/vcs/4c1a2f3e/config", "/home/u/go/pkg/mod/cache/download/x/@v/list",
		"/home/u/.cache/go-build/3f/3f2a-d", "/usr/lib/jvm/java-17-openjdk/conf/management/jmxremote.access",
		"/usr/share/zoneinfo/UTC", "/usr/share/java/junit.jar",
		// Inside them, files that are not source, headers or documentation.
		"/usr/local/lib/node_modules/npm/npmrc", "/usr/lib/node_modules/npm/.npmrc",
		"/usr/lib/python3.11/distutils/distutils.cfg", "/usr/local/lib/python3.11/site-packages/pip.ini",
		"/home/u/.local/lib/python3.12/site-packages/pkg/settings.properties",
		"/home/u/.cargo/git/checkouts/dep-1a2b3c/4d5e6f7/.git/config",
		"/home/u/.cargo/git/checkouts/dep-1a2b3c/4d5e6f7/.git/hooks/x.sh",
		"/usr/share/doc/pkg/security.conf", "/usr/share/doc/pkg/examples/app.conf",
		"/usr/include/x.conf", "/usr/share/man/whatis",
	} {
		if admit(p) {
			t.Errorf("%s is read locally, want it refused", p)
		}
	}
}

func TestKindOf(t *testing.T) {
	for _, tc := range []struct {
		name string
		want FileKinds
	}{
		{"main.go", Source}, {"stdio.h", Header}, {"vector", Plain}, {"README.md", Doc}, {"README", Doc | Plain},
		{"LICENSE-MIT", Doc | Plain}, {"COPYING.LIB", Doc}, {"ls.1.gz", Doc}, {"openssl.1ssl", Doc}, {"Makefile", Source | Plain},
		{"CMakeLists.txt", Source | Doc}, {"install.sh", Source}, {"package.json", Source},
		{".npmrc", 0}, {"npmrc", Plain}, {"pip.conf", 0}, {"pip.ini", 0}, {"settings.xml", 0}, {"gradle.properties", 0},
		{"security.conf", 0}, {"x.gz", Plain}, {".gz", 0}, {"", 0}, {"..", 0},
	} {
		if got := KindOf(tc.name); got != tc.want {
			t.Errorf("KindOf(%q) = %b, want %b", tc.name, got, tc.want)
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
