package rules

import "testing"

func readCall(paths ...string) Call { return Call{Tool: "Read", Kind: "read", Paths: paths} }

func TestPathPatterns(t *testing.T) {
	// testEnv: Cwd /home/dev/proj, Root /etc/toolgate, Home /home/dev.
	tests := []struct {
		spec        string
		path        string
		allow, deny bool
	}{
		// "//": absolute.
		{"//etc/passwd", "/etc/passwd", true, true},
		{"//etc/passwd", "/etc/passwd.bak", false, false},
		{"//etc/passwd", "/etc", false, false},
		{"//etc/passwd", "/etc/passwd/x", true, true}, // below a matching name
		{"//etc/passwd", "/ETC/Passwd", false, true},  // deny folds case
		{"//etc/passwd", "/home/dev/proj/etc/passwd", false, false},
		{"//etc/*.conf", "/etc/a.conf", true, true},
		{"//etc/*.conf", "/etc/ssh/a.conf", false, false}, // '*' stays in its segment
		{"//etc/*", "/etc/hosts", true, true},
		{"//etc/*", "/etc/ssh/sshd_config", true, true}, // /etc/ssh matches, so what is below it does
		{"//etc/*", "/etc", false, false},
		{"//", "/anything/at/all", true, true},
		{"//", "/", true, true},
		{"//**", "/anything", true, true},
		// "~/": home.
		{"~/.ssh/**", "/home/dev/.ssh/id_rsa", true, true},
		{"~/.ssh/**", "/home/dev/.ssh/keys/id_rsa", true, true},
		{"~/.ssh/**", "/home/dev/.ssh", true, true}, // the directory itself
		{"~/.ssh/**", "/home/dev/.sshx/id", false, false},
		{"~/.ssh/**", "/root/.ssh/id_rsa", false, false},
		{"~/.ssh/**", "/home/dev/proj/.ssh/id_rsa", false, false},
		{"~/.ssh/**", "/home/dev/proj/../.ssh/id_rsa", true, true}, // cleaned first
		{"./**", "/home/dev/proj/../.ssh/id_rsa", false, false},
		{"~", "/home/dev/notes.txt", true, true},
		{"~/Documents/*.pdf", "/home/dev/Documents/a.pdf", true, true},
		{"~/Documents/*.pdf", "/home/dev/Documents/x/a.pdf", false, false},
		// "/": policy root.
		{"/config/*.yaml", "/etc/toolgate/config/a.yaml", true, true},
		{"/config/*.yaml", "/etc/toolgate/config/sub/a.yaml", false, false},
		{"/config/*.yaml", "/etc/toolgate/config/a.yml", false, false},
		{"/config/*.yaml", "/home/dev/proj/config/a.yaml", false, false},
		{"/config/*.yaml", "/config/a.yaml", false, false},
		// "./" and bare: working directory.
		{"./src/**", "/home/dev/proj/src/a.go", true, true},
		{"./src/**", "/home/dev/proj/src/a/b/c.go", true, true},
		{"./src/**", "/home/dev/proj/src", true, true},
		{"./src/**", "/home/dev/proj/srcx/a.go", false, false},
		{"./src/**", "/home/dev/proj/lib/src/a.go", false, false}, // anchored: has a slash
		{"src/*.go", "/home/dev/proj/src/main.go", true, true},
		{"src/*.go", "/home/dev/proj/src/a/b.go", false, false},
		{"src/*.go", "/home/dev/proj/x/src/main.go", false, false},
		{"**/*.env", "/home/dev/proj/.env", true, true},
		{"**/*.env", "/home/dev/proj/a/b/prod.env", true, true},
		{"**/*.env", "/home/dev/other/.env", false, false},
		{"*.md", "/home/dev/proj/README.md", true, true},
		{"*.md", "/home/dev/proj/docs/guide.md", true, true}, // no slash: any depth
		{"*.md", "/home/dev/README.md", false, false},
		{"*.md", "/home/dev/proj/README.mdx", false, false},
		{".env", "/home/dev/proj/.env", true, true},
		{".env", "/home/dev/proj/sub/.env", true, true},
		{".env", "/home/dev/proj/.env.local", false, false},
		{"./.env", "/home/dev/proj/sub/.env", false, false},
		{"./file?.txt", "/home/dev/proj/file1.txt", true, true},
		{"./file?.txt", "/home/dev/proj/file10.txt", false, false},
		{"./file[0-9].txt", "/home/dev/proj/file7.txt", true, true},
		{"./file[0-9].txt", "/home/dev/proj/filex.txt", false, false},
		{"./a/**/b", "/home/dev/proj/a/b", true, true},
		{"./a/**/b", "/home/dev/proj/a/x/y/b", true, true},
		{"./a/**/b", "/home/dev/proj/a/x/y/bb", false, false},
		{"./*", "/home/dev/proj/x", true, true},
		{"./*", "/home/dev/other", false, false},
		{".", "/home/dev/proj/any/thing", true, true},
		{"**", "/home/dev/proj/any/thing", true, true},
		{"**", "/home/dev/x", false, false},
		{"../shared/**", "/home/dev/shared/x", true, true},
		{"../shared/**", "/home/dev/proj/shared/x", false, false},
		{"./a/../b/*", "/home/dev/proj/b/x", true, true},
		// Directory patterns.
		{"./secrets", "/home/dev/proj/secrets", true, true},
		{"./secrets", "/home/dev/proj/secrets/x", true, true},
		{"./secrets", "/home/dev/proj/secrets/a/b", true, true},
		{"./secrets", "/home/dev/proj/secretsx", false, false},
		{"./secrets/", "/home/dev/proj/secrets/x", true, true},
		{"./secrets/", "/home/dev/proj/secrets", true, true},
		{"secrets/", "/home/dev/proj/a/secrets/x", true, true},
		{"./secrets/**", "/home/dev/proj/secrets/x", true, true},
		// "*" alone: any path anywhere.
		{"*", "/etc/shadow", true, true},
		// Relative and odd subjects.
		{"./src/**", "src/a.go", false, true},
		{"./src/**", "", false, false},
	}
	for _, tt := range tests {
		t.Run(tt.spec+" "+tt.path, func(t *testing.T) {
			allow, deny := verdicts(t, "Read("+tt.spec+")", readCall(tt.path), testEnv)
			if allow != tt.allow || deny != tt.deny {
				t.Errorf("Read(%s) on %q: allow %v deny %v; want allow %v deny %v", tt.spec, tt.path, allow, deny, tt.allow, tt.deny)
			}
		})
	}
}

func TestPathEnv(t *testing.T) {
	tests := []struct {
		name        string
		spec        string
		env         Env
		path        string
		allow, deny bool
	}{
		{"root empty uses cwd", "/config/*.yaml", Env{Cwd: "/w", Home: "/h"}, "/w/config/a.yaml", true, true},
		{"root empty not root", "/config/*.yaml", Env{Cwd: "/w", Home: "/h"}, "/config/a.yaml", false, false},
		{"home unknown", "~/.ssh/**", Env{Cwd: "/w"}, "/root/.ssh/id_rsa", false, true},
		{"home unknown other", "~/.ssh/**", Env{Cwd: "/w"}, "/root/.sshx/id_rsa", false, false},
		{"home relative", "~/.ssh/**", Env{Cwd: "/w", Home: "home"}, "/home/.ssh/id_rsa", false, true},
		{"cwd unknown", "./secrets/**", Env{}, "/any/secrets/x", false, true},
		{"cwd unknown floating", "*.env", Env{}, "/any/where/.env", false, true},
		{"cwd with glob characters", "./src/*", Env{Cwd: "/tmp/a[b]*"}, "/tmp/a[b]*/src/x", true, true},
		{"cwd with glob characters literal", "./src/*", Env{Cwd: "/tmp/a[b]*"}, "/tmp/ab/src/x", false, false},
		{"cwd unclean", "./src/*", Env{Cwd: "/w/./x/../"}, "/w/src/a", true, true},
		{"root filesystem cwd", "./etc/*", Env{Cwd: "/"}, "/etc/passwd", true, true},
		{"up from root", "../../../etc/*", Env{Cwd: "/w"}, "/etc/passwd", true, true},
		{"relative subject without cwd", "//x/**", Env{}, "x/y", false, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			allow, deny := verdicts(t, "Read("+tt.spec+")", readCall(tt.path), tt.env)
			if allow != tt.allow || deny != tt.deny {
				t.Errorf("Read(%s) on %q in %+v: allow %v deny %v; want allow %v deny %v", tt.spec, tt.path, tt.env, allow, deny, tt.allow, tt.deny)
			}
		})
	}
}

func TestPathEveryTarget(t *testing.T) {
	s := mustCompile(t, []string{"Edit(./secrets/**)"}, nil, []string{"Edit(./src/**)", "Edit(./docs/**)"})
	call := func(paths ...string) Call { return Call{Tool: "apply_patch", Kind: "patch", Paths: paths} }
	if m := s.Allow(call("/home/dev/proj/src/a.go", "/home/dev/proj/docs/a.md"), testEnv, false); !m.OK || m.Rule.Text != "Edit(./src/**)" {
		t.Errorf("Allow every path under allowed dirs = %+v", m)
	}
	if s.Allow(call("/home/dev/proj/src/a.go", "/home/dev/proj/Makefile"), testEnv, false).OK {
		t.Error("Allow with one path not covered = true")
	}
	if !s.Deny(call("/home/dev/proj/src/a.go", "/home/dev/proj/secrets/k"), testEnv).OK {
		t.Error("Deny with one denied path = false")
	}
	if s.Allow(call(), testEnv, false).OK {
		t.Error("Allow of a call without paths by a rule with a specifier = true")
	}
}

// The literal-segment filter only skips paths the segment match would
// refuse: over every pattern and path below, in both readings (allow and
// deny) and with and without a known anchor, filtered and unfiltered
// matching agree, and the filter does skip some pairs (so it is tested).
func TestHasNeededKeepsEveryMatch(t *testing.T) {
	patterns := []string{
		"//**/.ssh/id_*", "//**/.aws/credentials", "~/.config/gcloud/**", "/secrets/**", "./build/*.log",
		"*.pem", ".env", "src/**/*.go", "../other/**", "//etc/shadow", "~/**", "//**/.Git/config",
		`//**/a\*b`, "//**/[.]netrc", "docs/*/README.md", "//tmp/**/x/**/y",
	}
	paths := []string{
		"/home/u/.ssh/id_rsa", "/home/u/.SSH/ID_RSA", "/home/u/.aws/credentials", "/home/u/.config/gcloud/a/b",
		"/work/p/secrets/k", "/work/p/build/out.log", "/work/p/x/key.PEM", "/work/p/.env", "/work/p/src/a/b.go",
		"/work/other/f", "/etc/shadow", "/work/p/.git/config", "/work/p/a*b", "/home/u/.netrc", "/work/p/docs/x/README.md",
		"/tmp/q/x/r/y/z", "relative/.ssh/id_ed25519", "/", "/work/p",
	}
	envs := []Env{{Home: "/home/u", Cwd: "/work/p"}, {}}
	skipped := 0
	for _, spec := range patterns {
		p, problem := compilePath(spec)
		if problem != "" {
			t.Fatalf("%s: %s", spec, problem)
		}
		for _, x := range paths {
			for _, e := range envs {
				for _, deny := range []bool{true, false} {
					s, ok := newPathSubject(x, e, deny)
					if !ok {
						continue
					}
					if !p.hasNeeded(&s, deny) {
						skipped++
					}
					if got, want := p.matchSubject(&s, e, deny), p.matchSegments(&s, e, deny); got != want {
						t.Errorf("%s against %s (env %+v, deny %v): filtered %v, unfiltered %v", spec, x, e, deny, got, want)
					}
				}
			}
		}
	}
	if skipped == 0 {
		t.Error("the filter skipped no pair")
	}
}

// FuzzHasNeeded: for any pattern and path, the literal-segment filter
// never turns a match into no match.
func FuzzHasNeeded(f *testing.F) {
	f.Add("//**/.ssh/id_*", "/home/u/.SSH/id_rsa")
	f.Add("src/**/*.go", "/work/p/src/a.go")
	f.Add(`a\b/c`, "/work/p/a/c")
	f.Fuzz(func(t *testing.T, spec, x string) {
		p, problem := compilePath(spec)
		if problem != "" {
			return
		}
		for _, e := range []Env{{Home: "/home/u", Cwd: "/work/p"}, {}} {
			for _, deny := range []bool{true, false} {
				if s, ok := newPathSubject(x, e, deny); ok && p.matchSubject(&s, e, deny) != p.matchSegments(&s, e, deny) {
					t.Fatalf("%q against %q (env %+v, deny %v): the filter changed the answer", spec, x, e, deny)
				}
			}
		}
	})
}
