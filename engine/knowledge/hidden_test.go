package knowledge

import (
	"path"
	"strings"
	"testing"
)

func TestHiddenNotInert(t *testing.T) {
	for _, tc := range []struct {
		p, want string
	}{
		// Inert: listed dot-files, and the files below listed directories.
		{"tmp/proj/.gitignore", ""},
		{"tmp/proj/sub/.gitignore", ""},
		{"tmp/proj/.GitIgnore", ""},
		{"tmp/proj/.editorconfig", ""},
		{"tmp/proj/web/.nvmrc", ""},
		{"tmp/proj/.github/ISSUE_TEMPLATE/bug.yml", ""},
		{"tmp/proj/.github/pull_request_template.md", ""},
		{"tmp/proj/.changeset/brave-cats.md", ""},
		{"tmp/proj/.spec-workflow/specs/login/tasks.md", ""},
		{"tmp/proj/src/main.go", ""},
		{"tmp/proj/a..b/x.go", ""},
		// Not inert: unlisted hidden files and directories, wherever.
		{"tmp/proj/.helix/languages.toml", ".helix"},
		{"tmp/proj/.zed/settings.json", ".zed"},
		{"tmp/proj/.newagent/rules/style.md", ".newagent"},
		{"tmp/proj/.prettierrc", ".prettierrc"},
		{"tmp/proj/.gitattributes", ".gitattributes"},
		{"tmp/proj/.github/workflows/ci.yml", ".github"},
		{"tmp/proj/.github/copilot-instructions.md", ".github"},
		{"tmp/proj/.github/CODEOWNERS", ".github"},
		{"tmp/proj/.changeset/config.json", ".changeset"},
		{"tmp/proj/.spec-workflow/approvals/x/a.json", ".spec-workflow"},
		{"tmp/proj/.spec-workflow/specs/login/.hooks.md", ".spec-workflow"},
		{"tmp/proj/.github/ISSUE_TEMPLATE/.x/y.md", ".x"},
		// A listed name as a directory is not the file it names.
		{"tmp/proj/.gitignore/run.sh", ".gitignore"},
		// The whole path counts: a project inside a hidden directory.
		{"home/u/.config/nvim/init.lua", ".config"},
		{"home/u/.dotfiles/.gitignore", ".dotfiles"},
	} {
		if got := HiddenNotInert(strings.Split(tc.p, "/")); got != tc.want {
			t.Errorf("HiddenNotInert(%q) = %q, want %q", tc.p, got, tc.want)
		}
	}
}

// TestInertHiddenGroupsWellFormed: every pattern compiles, names a hidden
// component, and is tested to be inert by the case above's shape.
func TestInertHiddenGroupsWellFormed(t *testing.T) {
	seen := map[string]bool{}
	for _, g := range InertHiddenGroups {
		if g.Name == "" || g.Why == "" || len(g.Sources) == 0 || len(g.Patterns) == 0 {
			t.Errorf("group %q: name, why, sources and patterns are all required", g.Name)
		}
		for _, s := range g.Sources {
			if !strings.HasPrefix(s, "https://") {
				t.Errorf("group %q: source %q is not an https URL", g.Name, s)
			}
		}
		for _, p := range g.Patterns {
			if seen[p] {
				t.Errorf("pattern %q twice", p)
			}
			seen[p] = true
			if !strings.HasPrefix(p, ".") {
				t.Errorf("pattern %q does not start with a hidden component", p)
			}
			for _, c := range strings.Split(strings.TrimSuffix(p, "/"), "/") {
				if _, err := path.Match(c, ""); err != nil || c == "" {
					t.Errorf("pattern %q: bad component %q", p, c)
				}
			}
			// A file below a directory pattern, or the file itself, is inert.
			target := strings.ReplaceAll(p, "*", "x")
			if strings.HasSuffix(p, "/") {
				target += "f.md"
			}
			if h := HiddenNotInert(strings.Split("proj/"+target, "/")); h != "" {
				t.Errorf("pattern %q does not cover %q (%q)", p, target, h)
			}
		}
	}
}

// TestInertNotProtected: no inert pattern names a file the protected set
// lists; the two lists must not disagree.
func TestInertNotProtected(t *testing.T) {
	for _, g := range InertHiddenGroups {
		for _, p := range g.Patterns {
			target := strings.ReplaceAll(strings.TrimSuffix(p, "/"), "*", "x")
			for _, pg := range ProtectedGroups {
				for _, pp := range pg.Patterns {
					pc := strings.Split(Fold(strings.TrimSuffix(pp, "/")), "/")
					tc := strings.Split(Fold(target), "/")
					for i := 0; i+len(pc) <= len(tc); i++ {
						ok := true
						for j := range pc {
							if m, _ := path.Match(pc[j], tc[i+j]); !m {
								ok = false
								break
							}
						}
						if ok {
							t.Errorf("inert %q is protected by %q (%s)", p, pp, pg.Name)
						}
					}
				}
			}
		}
	}
}
