package knowledge_test

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/toolgate/toolgate/engine/knowledge"
	"github.com/toolgate/toolgate/engine/pathcheck"
)

// protectedCases are, per group, paths inside a project that the group
// protects and nearby paths of ordinary work that no group protects. They
// are judged by pathcheck, the one matcher of protected patterns.
var protectedCases = []struct {
	group            string
	refused, allowed []string
}{
	{"version control",
		[]string{".git/config", "sub/.git/hooks/pre-commit", ".git", ".gitmodules", ".hg/hgrc", ".jj/repo/config.toml",
			"HEAD", "vendor/x.git/HEAD", "head", "fixtures/Head", "wt/commondir", "COMMONDIR"},
		[]string{".gitignore", ".gitattributes", "docs/git.md", "src/git/client.go", "hg/x", ".gitkeep", "HEAD.md",
			"src/head.go", "objects/x.go", "refs/notes.md", "config", "src/config/x.go", "header.h", "gitdir.md"}},
	{"agent instructions",
		[]string{"CLAUDE.md", "docs/CLAUDE.md", "claude.md", "CLAUDE.local.md", "AGENTS.md", "pkg/AGENTS.md",
			"AGENTS.override.md", "AGENT.md", "agent.md", "GEMINI.md", "QWEN.md", "WARP.md", "CRUSH.md", ".rules",
			".cursorrules", ".windsurfrules", ".clinerules", ".clinerules/style.md", ".roorules", ".goosehints",
			"CONVENTIONS.md", ".github/copilot-instructions.md", ".github/instructions/go.instructions.md",
			".github/prompts/review.prompt.md", ".github/chatmodes/plan.chatmode.md"},
		[]string{"README.md", "CONTRIBUTING.md", "docs/agents.txt", "src/agents/agent.go", "MY-CLAUDE.md",
			"CLAUDE.md.bak", "rules/x.md", "src/rules.go", ".github/CODEOWNERS", ".github/pull_request_template.md",
			"docs/conventions.txt", "instructions/x.md"}},
	{"agent configuration",
		[]string{".claude/settings.json", ".claude/commands/x.md", ".mcp.json", "sub/.mcp.json", ".gemini/settings.json",
			".qwen/settings.json", ".codex/config.toml", ".agents/skills/x/SKILL.md", ".cursor/mcp.json",
			".cursor/rules/x.mdc", ".windsurf/workflows/x.md", ".roo/mcp.json", ".roomodes", ".kilocode/rules/x.md",
			".continue/config.yaml", ".amazonq/rules/x.md", ".junie/guidelines.md", ".kiro/settings/mcp.json",
			".kiro/steering/x.md", ".opencode/plugins/x.ts", "opencode.json", "opencode.jsonc", ".crush.json",
			"crush.json", ".aider.conf.yml", ".aider.model.settings.yml", ".aiderignore", ".openhands/setup.sh",
			".github/hooks/hooks.json", ".github/agents/reviewer.agent.md"},
		[]string{"mcp.json", "src/mcp/server.go", "claude/x", "my.claude/x", "cursor.go", "agents/planner.py",
			"src/opencode.go", "aider.md", "docs/kiro.md", ".github/dependabot.yml", "hooks/useAuth.ts"}},
	{"continuous integration",
		[]string{".github/workflows/ci.yml", "sub/.github/workflows/release.yaml", ".github/actions/setup/run.sh",
			"action.yml", "tools/lint/action.yaml", ".gitea/workflows/ci.yaml", ".forgejo/workflows/ci.yml",
			".gitlab-ci.yml", ".gitlab-ci.yaml", ".circleci/config.yml", ".travis.yml", "azure-pipelines.yml",
			"azure-pipelines.yaml", ".azure-pipelines/build.yml", "bitbucket-pipelines.yml", "Jenkinsfile",
			"Jenkinsfile.release", "deploy.jenkinsfile", ".buildkite/pipeline.yml", ".buildkite/hooks/pre-command",
			".drone.yml", ".drone.yaml", ".drone.star", ".drone.jsonnet", ".woodpecker.yml", ".woodpecker.yaml",
			".woodpecker/test.yml", "appveyor.yml", ".appveyor.yml", ".cirrus.yml", ".cirrus.star",
			".semaphore/semaphore.yml", ".teamcity/settings.kts", "codefresh.yml", ".tekton/push.yaml",
			"cloudbuild.yaml", "cloudbuild.yml", "cloudbuild.json", "buildspec.yml", "buildspec.yaml", ".build.yml",
			".builds/alpine.yml", "bamboo-specs/bamboo.yml"},
		[]string{"src/ci.go", "ci/README.md", "docs/ci.md", "workflows/ci.yml", "github/workflows/ci.yml",
			".github/ISSUE_TEMPLATE/bug.md", "actions.go", "src/action.ts", "action.yml.md", "jenkins/notes.md",
			"src/cloudbuild.go", "drone.go", "build.yml", "builds/x", "azure/pipelines.md", "Makefile", "Dockerfile",
			"Earthfile", "justfile", "Taskfile.yml"}},
	{"git hooks",
		[]string{".husky/pre-commit", "lefthook.yml", "lefthook.yaml", "lefthook.toml", "lefthook-local.yml",
			".lefthook.yml", ".lefthook-local.json", ".config/lefthook.yml", ".lefthook/pre-commit/lint.sh",
			".lefthook-local/pre-push/x.sh", ".pre-commit-config.yaml", ".pre-commit-hooks.yaml", ".overcommit.yml",
			".simple-git-hooks.json", ".simple-git-hooks.cjs", "simple-git-hooks.js", ".githooks/pre-push",
			".git-hooks/commit-msg", ".cargo-husky/hooks/pre-commit", "hk.pkl", "captainhook.json",
			".lintstagedrc", ".lintstagedrc.json", "lint-staged.config.mjs"},
		[]string{"docs/husky.md", "husky/x", "src/lefthook/main.go", "lefthook", "vendor/lefthook/x.go",
			"simple-git-hooks/index.js", "hooks/pre-commit.md", "githooks.md", "docs/pre-commit.md",
			"lint-staged/index.js", "scripts/install-hooks.sh"}},
	{"editors and workspaces",
		[]string{".vscode/tasks.json", ".vscode/settings.json", "app.code-workspace", ".idea/workspace.xml",
			".zed/settings.json", ".zed/tasks.json", ".devcontainer/devcontainer.json", ".devcontainer.json",
			".gitpod.yml", ".gitpod.Dockerfile", ".replit", "replit.nix", ".idx/dev.nix", ".idx/airules.md"},
		[]string{"vscode/extension.ts", "docs/vscode.md", "idea/x", "devcontainer/README.md", "gitpod.md",
			"src/zed.rs", "workspace.json", "code-workspace.md"}},
	{"startup files",
		[]string{".irbrc", ".pryrc", ".Rprofile", ".Renviron", ".gdbinit", ".lldbinit", ".exrc", ".nvimrc",
			".nvim.lua", ".dir-locals.el", ".dir-locals-2.el", "_exrc", "_vimrc", "_gvimrc", ".vimrc", ".gvimrc"},
		[]string{"irbrc.md", "lib/pry.rb", "R/profile.R", "gdb/x.py", "nvim/init.lua", "dir-locals.md"}},
	{"shell environments",
		[]string{".envrc", ".direnv/python-3.12/bin/python", "mise.toml", "mise.local.toml", ".mise.toml",
			".mise.dev.toml", ".mise/tasks/build", ".config/mise/config.toml", ".config/mise.toml", "flake.nix",
			"shell.nix", "devenv.nix", "devenv.yaml", "devenv.local.nix", ".devenv/profile/bin/x",
			".venv/bin/python", ".venv/lib/python3.12/site-packages/x.pth", "env/pyvenv.cfg"},
		[]string{"default.nix", "pkgs/foo/default.nix", "flake.lock", "nix/overlay.nix", "src/mise.go",
			"venv.md", "docs/direnv.md", ".tool-versions", ".nvmrc", ".python-version", "envrc.md", "mise/README"}},
	{"package managers and build wrappers",
		[]string{".npmrc", "packages/web/.npmrc", ".yarnrc", ".yarnrc.yml", ".yarn/releases/yarn-4.1.0.cjs",
			".yarn/plugins/x.cjs", ".pnp.cjs", ".pnp.loader.mjs", ".pnpmfile.cjs", ".pnpmfile.mjs", "bunfig.toml",
			".bunfig.toml", ".cargo/config.toml", ".cargo/config", "rust-toolchain", "rust-toolchain.toml", "uv.toml",
			".bundle/config", ".mvn/jvm.config", ".mvn/extensions.xml", ".mvn/wrapper/maven-wrapper.properties",
			"mvnw", "mvnw.cmd", "gradle/wrapper/gradle-wrapper.properties", "gradle/wrapper/gradle-wrapper.jar",
			"gradlew", "gradlew.bat", "tools/bazel", "tools/bazel.sh", ".bazelversion", ".bazeliskrc"},
		[]string{"package.json", "package-lock.json", "pnpm-workspace.yaml", "yarn.lock", "Cargo.toml",
			"Cargo.lock", "build.rs", "src/cargo.rs", "pyproject.toml", "setup.py", "setup.cfg", "Gemfile",
			"Gemfile.lock", "pom.xml", "build.gradle", "build.gradle.kts", "settings.gradle", "gradle.properties",
			"gradle/libs.versions.toml", "npmrc.md", "src/yarn/x.js", "bundle/x.js"}},
	{"environment files",
		[]string{".env", ".env.local", "config/.env.prod", ".ENV.local", ".env.example"},
		[]string{"env.txt", "x.env.go", "environment/x", "src/env.go", "docs/env.md"}},
}

func newChecker(t *testing.T, root string, patterns []string) *pathcheck.Checker {
	t.Helper()
	c, err := pathcheck.New([]string{root}, patterns)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// projectRoot is a project directory that exists nowhere, so that
// pathcheck judges targets lexically, with no component of its own that a
// pattern could name.
func projectRoot(t *testing.T) string {
	t.Helper()
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return filepath.Join(root, "proj")
}

func TestProtectedGroups(t *testing.T) {
	root := projectRoot(t)
	c := newChecker(t, root, knowledge.ProtectedPatterns())
	groups := map[string]knowledge.ProtectedGroup{}
	for _, g := range knowledge.ProtectedGroups {
		groups[g.Name] = g
	}
	tested := map[string]bool{}
	for _, tc := range protectedCases {
		g, ok := groups[tc.group]
		if !ok {
			t.Fatalf("no group %q", tc.group)
		}
		tested[tc.group] = true
		if len(tc.refused) == 0 || len(tc.allowed) == 0 {
			t.Errorf("group %q: needs refused and allowed paths", tc.group)
		}
		for _, p := range tc.refused {
			v, err := c.Check(root, p)
			if err != nil || !v.Inside {
				t.Fatalf("Check(%q) = %+v, %v; want inside", p, v, err)
			}
			if !slices.Contains(g.Patterns, v.Protected) {
				t.Errorf("%s: Check(%q).Protected = %q, want a pattern of this group", tc.group, p, v.Protected)
			}
		}
		for _, p := range tc.allowed {
			v, err := c.Check(root, p)
			if err != nil || !v.Inside {
				t.Fatalf("Check(%q) = %+v, %v; want inside", p, v, err)
			}
			if v.Protected != "" {
				t.Errorf("%s: Check(%q) is protected by %q, want an ordinary edit", tc.group, p, v.Protected)
			}
		}
	}
	for _, g := range knowledge.ProtectedGroups {
		if !tested[g.Name] {
			t.Errorf("group %q has no test cases", g.Name)
		}
	}
}

// TestProtectedPatternsCovered checks every pattern protects one of its
// group's test paths on its own: no pattern is dead or mistyped.
func TestProtectedPatternsCovered(t *testing.T) {
	root := projectRoot(t)
	refused := map[string][]string{}
	for _, tc := range protectedCases {
		refused[tc.group] = tc.refused
	}
	for _, g := range knowledge.ProtectedGroups {
		for _, pat := range g.Patterns {
			c := newChecker(t, root, []string{pat})
			hit := false
			for _, p := range refused[g.Name] {
				if v, err := c.Check(root, p); err == nil && v.Protected == pat {
					hit = true
					break
				}
			}
			if !hit {
				t.Errorf("%s: pattern %q protects none of the group's test paths", g.Name, pat)
			}
		}
	}
}

func TestProtectedGroupsWellFormed(t *testing.T) {
	seen := map[string]string{}
	names := map[string]bool{}
	for _, g := range knowledge.ProtectedGroups {
		if g.Name == "" || g.Why == "" || len(g.Sources) == 0 || len(g.Patterns) == 0 {
			t.Errorf("group %q: name, why, sources and patterns are all required", g.Name)
		}
		if names[g.Name] {
			t.Errorf("group name %q twice", g.Name)
		}
		names[g.Name] = true
		for _, s := range g.Sources {
			if !strings.HasPrefix(s, "https://") {
				t.Errorf("group %q: source %q is not an https URL", g.Name, s)
			}
		}
		for _, p := range g.Patterns {
			if other, dup := seen[p]; dup {
				t.Errorf("pattern %q in %q and %q", p, other, g.Name)
			}
			seen[p] = g.Name
		}
	}
	if _, err := pathcheck.CompilePatterns(knowledge.ProtectedPatterns()); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(pathcheck.DefaultProtected, knowledge.ProtectedPatterns()) {
		t.Error("pathcheck.DefaultProtected is not knowledge.ProtectedPatterns()")
	}
	p := knowledge.ProtectedPatterns()
	p[0] = "changed"
	if knowledge.ProtectedPatterns()[0] == "changed" {
		t.Error("ProtectedPatterns shares its slice with the table")
	}
}
