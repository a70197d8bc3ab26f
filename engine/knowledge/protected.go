package knowledge

// ProtectedGroup is one reason an edit inside the project is not allowed
// locally: files that something runs, loads or obeys without the user
// asking for it, so that writing them is running code or instructing an
// agent.
type ProtectedGroup struct {
	Name string
	// Why says what happens to a file of this group once it is written.
	Why string
	// Sources are the documentation pages the patterns were taken from.
	Sources []string
	// Patterns use pathcheck's protected-pattern syntax: components
	// separated by "/", each a path.Match glob, matched case-folded
	// against every run of consecutive components of a target's path
	// (".git/" protects "sub/.git/hooks/x" and a file named ".git"). A
	// trailing "/" only documents a directory: what lies beneath a match
	// is protected either way.
	Patterns []string
}

// ProtectedGroups is the protected set that accept-edits keeps away from
// local approval, grouped by why.
//
// The line: a file is listed when a tool runs or obeys it on its own,
// when a folder is opened, a shell enters it, a commit or checkout
// happens, a push reaches CI, an agent session starts, or a package
// manager or build wrapper starts, with no request from the user to run
// that file. Build files that run only when the user asks for a build or
// a test (Makefile, package.json scripts, build.rs, Earthfile, Dockerfile,
// setup.py, conftest.py, Gemfile, default.nix, pnpm-workspace.yaml,
// tool configs that are code such as eslint.config.js) are not listed:
// they are the project's ordinary source, edited all the time, and code
// the agent writes is run by the user's next build anyway; protecting
// them would cost ordinary edits without closing that path. Files that
// only name versions (.tool-versions, .nvmrc, .python-version) run no
// project code and are not listed either.
//
// DirectoryMarkers are files that make the directory holding them, and so
// everything below it, something a tool runs or obeys: a write anywhere
// below a directory with one is protected (pathcheck).
// AboveProject says the marker counts in directories above the project
// too: a project inside a repository's directory (its hooks/, say) is
// part of it.
var DirectoryMarkers = []struct {
	Name, Why    string
	AboveProject bool
}{
	{"HEAD", "a directory git may take for a repository", true},
	{"pyvenv.cfg", "a Python virtual environment, whose interpreter and scripts editors and tools run", false},
}

// Order matters only for the pattern a verdict reports: the first match.
var ProtectedGroups = []ProtectedGroup{
	{
		Name: "version control",
		Why: "hooks and configuration inside a repository run commands on ordinary " +
			"commands (core.fsmonitor, core.pager, filters, aliases, Mercurial hooks, " +
			"jj's ui.pager), .gitmodules decides what a recursive clone fetches, and a " +
			"HEAD (with objects/ and refs/, or a commondir naming them) makes any " +
			"directory a repository whose config git obeys when run there or below " +
			"(pathcheck also protects everything below a directory holding a HEAD)",
		Sources: []string{
			"https://git-scm.com/docs/githooks",
			"https://git-scm.com/docs/git-config",
			"https://git-scm.com/docs/gitmodules",
			"https://git-scm.com/docs/gitrepository-layout",
			"https://github.com/git/git/blob/master/setup.c",
			"https://www.mercurial-scm.org/doc/hgrc.5.html",
			"https://jj-vcs.github.io/jj/latest/config/",
		},
		Patterns: []string{".git/", ".gitmodules", "HEAD", "commondir", ".hg/", ".jj/"},
	},
	{
		Name: "agent instructions",
		Why: "coding agents load these into their prompt at the start of every session " +
			"and follow them: writing one instructs every later session, of any agent",
		Sources: []string{
			"https://docs.anthropic.com/en/docs/claude-code/memory",
			"https://agents.md/",
			"https://developers.openai.com/codex/guides/agents-md",
			"https://github.com/google-gemini/gemini-cli/blob/main/docs/cli/gemini-md.md",
			"https://qwenlm.github.io/qwen-code-docs/en/users/configuration/settings",
			"https://ampcode.com/manual",
			"https://docs.warp.dev/knowledge-and-collaboration/rules",
			"https://github.com/charmbracelet/crush",
			"https://zed.dev/docs/ai/rules",
			"https://docs.cursor.com/context/rules",
			"https://docs.windsurf.com/windsurf/cascade/memories",
			"https://docs.cline.bot/features/cline-rules",
			"https://docs.roocode.com/features/custom-instructions",
			"https://block.github.io/goose/docs/guides/using-goosehints",
			"https://aider.chat/docs/usage/conventions.html",
			"https://docs.github.com/en/copilot/how-tos/configure-custom-instructions/add-repository-instructions",
		},
		Patterns: []string{
			"CLAUDE.md", "CLAUDE.local.md", // Claude Code
			"AGENTS.md", "AGENTS.override.md", "AGENT.md", // agents.md, Codex, Amp, Jules, Warp
			"GEMINI.md", "QWEN.md", "WARP.md", "CRUSH.md",
			".rules",                         // Zed
			".cursorrules", ".windsurfrules", // Cursor, Windsurf (legacy single files)
			".clinerules", ".roorules", ".goosehints", // Cline (file or directory), Roo, Goose
			"CONVENTIONS.md",                  // Aider's documented name for --read
			".github/copilot-instructions.md", // GitHub Copilot
			".github/instructions/",
			".github/prompts/",
			".github/chatmodes/",
		},
	},
	{
		Name: "agent configuration",
		Why: "agents' project settings start MCP servers (a command line each), run hooks " +
			"around tool calls, define commands, skills, subagents and plugins, and widen " +
			"the agent's own permissions",
		Sources: []string{
			"https://docs.anthropic.com/en/docs/claude-code/settings",
			"https://docs.anthropic.com/en/docs/claude-code/hooks",
			"https://docs.anthropic.com/en/docs/claude-code/mcp",
			"https://github.com/google-gemini/gemini-cli/blob/main/docs/get-started/configuration.md",
			"https://developers.openai.com/codex/skills",
			"https://docs.cursor.com/context/model-context-protocol",
			"https://docs.windsurf.com/windsurf/cascade/workflows",
			"https://docs.roocode.com/features/mcp/using-mcp-in-roo",
			"https://kilocode.ai/docs/advanced-usage/custom-rules",
			"https://docs.continue.dev/customize/deep-dives/rules",
			"https://docs.aws.amazon.com/amazonq/latest/qdeveloper-ug/context-project-rules.html",
			"https://www.jetbrains.com/help/junie/customize-guidelines.html",
			"https://kiro.dev/docs/steering/",
			"https://kiro.dev/docs/mcp/configuration/",
			"https://opencode.ai/docs/config/",
			"https://aider.chat/docs/config/aider_conf.html",
			"https://docs.openhands.dev/openhands/usage/microagents/microagents-overview",
			"https://docs.github.com/en/copilot/reference/hooks-configuration",
			"https://docs.github.com/en/copilot/how-tos/copilot-cli/customize-copilot/create-custom-agents-for-cli",
		},
		Patterns: []string{
			".claude/", ".mcp.json", // Claude Code
			".gemini/", ".qwen/", ".codex/", ".agents/", // Gemini CLI, Qwen Code, Codex, agent skills
			".cursor/", ".windsurf/", ".roo/", ".roomodes", ".kilocode/",
			".continue/", ".amazonq/", ".junie/", ".kiro/",
			".opencode/", "opencode.json", "opencode.jsonc",
			".crush.json", "crush.json",
			".aider*",     // .aider.conf.yml sets lint-cmd and test-cmd that Aider runs on its own
			".openhands/", // .openhands/setup.sh runs at the start of every session
			".github/hooks/",
			".github/agents/",
		},
	},
	{
		Name: "continuous integration",
		Why: "CI runs these on shared runners with the repository's secrets and tokens " +
			"once a branch is pushed, and they decide triggers, permissions and which " +
			"secrets a job sees",
		Sources: []string{
			"https://docs.github.com/en/actions/reference/workflows-and-actions/workflow-syntax",
			"https://docs.github.com/en/actions/reference/workflows-and-actions/metadata-syntax",
			"https://docs.gitea.com/usage/actions/overview",
			"https://forgejo.org/docs/latest/user/actions/",
			"https://docs.gitlab.com/ci/yaml/",
			"https://circleci.com/docs/configuration-reference/",
			"https://docs.travis-ci.com/user/customizing-the-build/",
			"https://learn.microsoft.com/en-us/azure/devops/pipelines/yaml-schema/",
			"https://support.atlassian.com/bitbucket-cloud/docs/bitbucket-pipelines-configuration-reference/",
			"https://www.jenkins.io/doc/book/pipeline/jenkinsfile/",
			"https://buildkite.com/docs/pipelines/configure/defining-steps",
			"https://docs.drone.io/pipeline/overview/",
			"https://woodpecker-ci.org/docs/usage/workflow-syntax",
			"https://www.appveyor.com/docs/build-configuration/",
			"https://cirrus-ci.org/guide/writing-tasks/",
			"https://docs.semaphoreci.com/reference/pipeline-yaml",
			"https://www.jetbrains.com/help/teamcity/kotlin-dsl.html",
			"https://codefresh.io/docs/docs/pipelines/what-is-the-codefresh-yaml/",
			"https://pipelinesascode.com/docs/guide/authoringprs/",
			"https://cloud.google.com/build/docs/build-config-file-schema",
			"https://docs.aws.amazon.com/codebuild/latest/userguide/build-spec-ref.html",
			"https://man.sr.ht/builds.sr.ht/",
			"https://confluence.atlassian.com/bamboo/bamboo-specs-894743906.html",
		},
		Patterns: []string{
			".github/workflows/", ".github/actions/", // GitHub Actions
			"action.yml", "action.yaml", // a local action, referenced by path from any directory
			".gitea/workflows/", ".forgejo/workflows/",
			".gitlab-ci.yml", ".gitlab-ci.yaml",
			".circleci/",
			".travis.yml",
			"azure-pipelines.yml", "azure-pipelines.yaml", ".azure-pipelines/",
			"bitbucket-pipelines.yml",
			"Jenkinsfile", "Jenkinsfile.*", "*.jenkinsfile",
			".buildkite/", // pipeline and agent hooks
			".drone.yml", ".drone.yaml", ".drone.star", ".drone.jsonnet",
			".woodpecker.yml", ".woodpecker.yaml", ".woodpecker/",
			"appveyor.yml", ".appveyor.yml",
			".cirrus.yml", ".cirrus.star",
			".semaphore/",
			".teamcity/",
			"codefresh.yml",
			".tekton/", // Pipelines as Code
			"cloudbuild.yaml", "cloudbuild.yml", "cloudbuild.json",
			"buildspec.yml", "buildspec.yaml", // AWS CodeBuild
			".build.yml", ".builds/", // SourceHut
			"bamboo-specs/",
		},
	},
	{
		Name: "git hooks",
		Why: "hook managers run these on commit, checkout, merge or push; the hooks read " +
			"them afresh each time, so a write takes effect at the next commit",
		Sources: []string{
			"https://typicode.github.io/husky/",
			"https://lefthook.dev/configuration/",
			"https://pre-commit.com/",
			"https://github.com/sds/overcommit",
			"https://github.com/toplenboren/simple-git-hooks",
			"https://git-scm.com/docs/git-config#Documentation/git-config.txt-corehooksPath",
			"https://github.com/rhysd/cargo-husky",
			"https://hk.jdx.dev/configuration.html",
			"https://docs.captainhook.info/configure-hooks.html",
			"https://github.com/lint-staged/lint-staged",
		},
		Patterns: []string{
			".husky/",
			"lefthook.*", "lefthook-local.*", ".lefthook.*", ".lefthook-local.*", ".lefthook/", ".lefthook-local/",
			".pre-commit-config.yaml", ".pre-commit-hooks.yaml",
			".overcommit.yml",
			".simple-git-hooks.*", "simple-git-hooks.*",
			".githooks/", ".git-hooks/", // the usual core.hooksPath directories
			".cargo-husky/",
			"hk.pkl",
			"captainhook.json",
			".lintstagedrc*", "lint-staged.config.*", // the commands a pre-commit hook runs on staged files
		},
	},
	{
		Name: "editors and workspaces",
		Why: "editors, dev containers and cloud workspaces run commands from these when " +
			"the folder is opened or the workspace starts: tasks that run on open, " +
			"settings that name the binaries language servers and linters start, " +
			"postCreateCommand and start tasks",
		Sources: []string{
			"https://code.visualstudio.com/docs/debugtest/tasks#_run-behavior",
			"https://code.visualstudio.com/docs/editing/workspaces/multi-root-workspaces",
			"https://www.jetbrains.com/help/idea/settings-tools-startup-tasks.html",
			"https://zed.dev/docs/configuring-zed#settings-files",
			"https://containers.dev/implementors/json_reference/",
			"https://www.gitpod.io/docs/configure/workspaces/tasks",
			"https://docs.replit.com/replit-workspace/configuring-repl",
			"https://firebase.google.com/docs/studio/customize-workspace",
		},
		Patterns: []string{
			".vscode/", "*.code-workspace",
			".idea/",
			".zed/",
			".devcontainer/", ".devcontainer.json",
			".gitpod.yml", ".gitpod.Dockerfile",
			".replit", "replit.nix",
			".idx/", // Firebase Studio: dev.nix onCreate/onStart hooks and airules.md
		},
	},
	{
		Name: "startup files",
		Why: "REPLs, debuggers and editors source these from the current directory when " +
			"started there: starting a console in the project runs them",
		Sources: []string{
			"https://ruby.github.io/irb/Configurations_md.html",
			"https://github.com/pry/pry/wiki/Pry-rc",
			"https://stat.ethz.ch/R-manual/R-devel/library/base/html/Startup.html",
			"https://sourceware.org/gdb/current/onlinedocs/gdb.html/Startup.html",
			"https://lldb.llvm.org/man/lldb.html#configuration-files",
			"https://neovim.io/doc/user/options.html#'exrc'",
			"https://www.gnu.org/software/emacs/manual/html_node/emacs/Directory-Variables.html",
		},
		Patterns: []string{
			".irbrc", ".pryrc", // Ruby
			".Rprofile", ".Renviron", // R, RStudio
			".gdbinit", ".lldbinit",
			".exrc", ".nvimrc", ".nvim.lua", // Vim and Neovim with 'exrc'
			"_exrc", "_vimrc", "_gvimrc", ".vimrc", ".gvimrc", // Vim's other names for them
			".dir-locals.el", ".dir-locals-2.el", // Emacs
		},
	},
	{
		Name: "shell environments",
		Why: "shell hooks load these on entering the directory (direnv, mise, nix-direnv " +
			"re-evaluating a changed flake), and editors run the project's virtualenv " +
			"interpreter when the folder opens",
		Sources: []string{
			"https://direnv.net/man/direnv-stdlib.1.html",
			"https://mise.jdx.dev/configuration.html",
			"https://mise.jdx.dev/hooks.html",
			"https://github.com/nix-community/nix-direnv",
			"https://devenv.sh/files-and-variables/",
			"https://code.visualstudio.com/docs/python/environments",
		},
		Patterns: []string{
			".envrc", ".direnv/",
			"mise.toml", "mise.*.toml", ".mise.toml", ".mise.*.toml", ".mise/", ".config/mise/", ".config/mise.toml",
			"flake.nix", "shell.nix", // a dev shell's shellHook runs on entering it
			"devenv.nix", "devenv.yaml", "devenv.local.nix", ".devenv/",
			".venv/",     // its interpreter, activate scripts and .pth files run on every use
			"pyvenv.cfg", // any virtualenv: pathcheck protects all beside it too (DirectoryMarkers)
		},
	},
	{
		Name: "package managers and build wrappers",
		Why: "package managers and build wrappers read these on every run and execute " +
			"what they name: npm's script-shell and node-options, yarnPath and plugins, " +
			"pnpm hooks, bun preloads, cargo runners and rustc wrappers, a toolchain " +
			"path, Bundler settings, wrapper scripts and the distributions they " +
			"download, which IDEs run on import",
		Sources: []string{
			"https://docs.npmjs.com/cli/v11/using-npm/config",
			"https://classic.yarnpkg.com/en/docs/yarnrc",
			"https://yarnpkg.com/configuration/yarnrc",
			"https://yarnpkg.com/features/pnp",
			"https://pnpm.io/pnpmfile",
			"https://bun.sh/docs/runtime/bunfig",
			"https://doc.rust-lang.org/cargo/reference/config.html",
			"https://rust-lang.github.io/rustup/overrides.html#the-toolchain-file",
			"https://docs.astral.sh/uv/concepts/configuration-files/",
			"https://bundler.io/man/bundle-config.1.html",
			"https://maven.apache.org/configure.html",
			"https://maven.apache.org/wrapper/",
			"https://docs.gradle.org/current/userguide/gradle_wrapper.html",
		},
		Patterns: []string{
			".npmrc",
			".yarnrc", ".yarnrc.yml", ".yarn/", ".pnp.*",
			".pnpmfile.*",
			"bunfig.toml", ".bunfig.toml",
			".cargo/", "rust-toolchain", "rust-toolchain.toml",
			"uv.toml",
			".bundle/",
			".mvn/", "mvnw", "mvnw.cmd",
			"gradle/wrapper/", "gradlew", "gradlew.bat",
			// bazelisk runs tools/bazel instead of bazel on every bazel
			// command, and fetches the version .bazelversion and
			// .bazeliskrc name.
			"tools/bazel", "tools/bazel.*", ".bazelversion", ".bazeliskrc",
		},
	},
	{
		Name: "environment files",
		Why: "they hold the project's secrets, and tools load them into the environment " +
			"of what they run (Compose, direnv's dotenv, frameworks), so a write changes " +
			"endpoints and variables such as NODE_OPTIONS",
		Sources: []string{
			"https://docs.docker.com/compose/how-tos/environment-variables/variable-interpolation/",
			"https://direnv.net/man/direnv-stdlib.1.html",
		},
		Patterns: []string{".env*"},
	},
}

// ProtectedPatterns returns the patterns of every group, in order, as a new
// slice the caller may extend.
func ProtectedPatterns() []string {
	var out []string
	for _, g := range ProtectedGroups {
		out = append(out, g.Patterns...)
	}
	return out
}
