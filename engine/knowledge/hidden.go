package knowledge

import (
	"path"
	"strings"
)

// InertGroup is one reason a hidden path may take an edit locally: files
// that the tools reading them take as data only, never as a program to
// run, a command line, a plugin to load or instructions to follow.
type InertGroup struct {
	Name string
	// Why says who reads these files and why that runs nothing.
	Why string
	// Sources are the documentation pages the reading was taken from.
	Sources []string
	// Patterns are "/"-separated components, each a path.Match glob
	// matched case-folded. A pattern without a trailing "/" names the
	// edited file itself (its last components); one with a trailing "/"
	// names a directory whose files are inert (a hidden name below it
	// still needs a pattern of its own).
	Patterns []string
}

// InertHiddenGroups is the allowlist for hidden paths. Editors, hook
// managers and agents keep their configuration in dot-named files and
// directories, and a new one appears every month: a list of the dangerous
// ones is never complete. So accept-edits allows an edit whose path has a
// dot-named component (from the file system's root: a project inside a
// hidden directory counts too) only when every such component is covered
// by one of these patterns. The rest go to the classifier.
//
// The line: a file is listed when every tool known to read it takes
// patterns, names, whitespace settings or version numbers from it and
// runs nothing it names. .gitattributes is not listed (it picks which
// configured filter, diff and merge programs run on which files), nor
// are formatter and linter configs (.prettierrc, .eslintrc: they load
// plugins), nor Markdown in a hidden directory in general (agents load
// rules and commands from .<agent>/**/*.md).
var InertHiddenGroups = []InertGroup{
	{
		Name: "ignore files",
		Why:  "lists of path patterns that tools leave out; nothing in them is run",
		Sources: []string{
			"https://git-scm.com/docs/gitignore",
			"https://docs.docker.com/build/concepts/context/#dockerignore-files",
			"https://docs.npmjs.com/cli/v11/configuring-npm/package-json#files",
			"https://prettier.io/docs/ignore",
			"https://github.com/BurntSushi/ripgrep/blob/master/GUIDE.md#automatic-filtering",
			"https://helm.sh/docs/chart_template_guide/helm_ignore_file/",
			"https://cloud.google.com/sdk/gcloud/reference/topic/gcloudignore",
			"https://www.mercurial-scm.org/doc/hgignore.5.html",
		},
		Patterns: []string{
			".gitignore", ".dockerignore", ".npmignore", ".prettierignore", ".eslintignore", ".stylelintignore",
			".markdownlintignore", ".ignore", ".rgignore", ".fdignore", ".helmignore", ".gcloudignore",
			".vercelignore", ".hgignore",
		},
	},
	{
		Name: "placeholders and metadata",
		Why: "empty markers that keep a directory in git or switch Jekyll off, editor " +
			"whitespace settings, and git's author-name map",
		Sources: []string{
			"https://editorconfig.org/",
			"https://git-scm.com/docs/gitmailmap",
			"https://github.blog/news-insights/the-library/bypassing-jekyll-on-github-pages/",
		},
		Patterns: []string{".gitkeep", ".keep", ".nojekyll", ".editorconfig", ".mailmap"},
	},
	{
		Name: "version pins",
		Why: "one version number that version managers read; the version they " +
			"install is a published release, not the project's code",
		Sources: []string{
			"https://github.com/nvm-sh/nvm#nvmrc",
			"https://github.com/pyenv/pyenv#choosing-the-python-version",
			"https://github.com/rbenv/rbenv#choosing-the-ruby-version",
		},
		Patterns: []string{".nvmrc", ".node-version", ".python-version", ".ruby-version"},
	},
	{
		Name: "repository documents",
		Why: "GitHub shows these on its pages (issue and pull request forms, " +
			"funding links, policies); nothing runs them, unlike workflows, " +
			"actions, Copilot instructions and CODEOWNERS",
		Sources: []string{
			"https://docs.github.com/en/communities/using-templates-to-encourage-useful-issues-and-pull-requests",
			"https://docs.github.com/en/repositories/managing-your-repositorys-settings-and-features/customizing-your-repository/displaying-a-sponsor-button-in-your-repository",
			"https://docs.github.com/en/communities/setting-up-your-project-for-healthy-contributions/creating-a-default-community-health-file",
		},
		Patterns: []string{
			".github/ISSUE_TEMPLATE/", ".github/PULL_REQUEST_TEMPLATE/", ".github/pull_request_template.md",
			".github/FUNDING.yml", ".github/SECURITY.md", ".github/CONTRIBUTING.md", ".github/CODE_OF_CONDUCT.md",
			".github/SUPPORT.md",
		},
	},
	{
		Name: "change and spec documents",
		Why: "Markdown documents that their tools read only when the user asks for a " +
			"release (changesets) or for work on a spec (spec-workflow's " +
			"requirements, design and tasks); their configuration and approval " +
			"records are not listed",
		Sources: []string{
			"https://github.com/changesets/changesets/blob/main/docs/adding-a-changeset.md",
			"https://github.com/Pimzino/spec-workflow-mcp",
		},
		Patterns: []string{".changeset/*.md", ".spec-workflow/specs/*/*.md"},
	},
}

// inertPatterns are InertHiddenGroups' patterns split into folded
// components, with whether each names a directory.
var inertPatterns = func() []inertPattern {
	var out []inertPattern
	for _, g := range InertHiddenGroups {
		for _, p := range g.Patterns {
			dir := strings.HasSuffix(p, "/")
			out = append(out, inertPattern{comps: strings.Split(Fold(strings.TrimSuffix(p, "/")), "/"), dir: dir})
		}
	}
	return out
}()

type inertPattern struct {
	comps []string
	dir   bool
}

// at reports how many components of comps, from i on, the pattern
// covers (0: it does not match there). A file pattern must end at the
// last component.
func (p inertPattern) at(comps []string, i int) int {
	n := len(p.comps)
	if i+n > len(comps) || !p.dir && i+n != len(comps) {
		return 0
	}
	for j, pc := range p.comps {
		// A glob matches a hidden name only with a literal dot, as in the
		// shell: .spec-workflow/specs/*/*.md does not cover a .x.md.
		c := comps[i+j]
		if m, err := path.Match(pc, c); err != nil || !m || c == "" || c[0] == '.' && pc[0] != '.' {
			return 0
		}
	}
	return n
}

// HiddenNotInert returns the first dot-named component of a clean path's
// components that no inert pattern covers, or "" when every one is
// covered. Components are compared ASCII-case-folded (callers may fold
// further: folding only merges names, and an inert name stays inert).
func HiddenNotInert(comps []string) string {
	var folded []string // only once a hidden component is met: most paths have none
	for i := 0; i < len(comps); i++ {
		c := comps[i]
		if len(c) < 2 || c[0] != '.' || c == ".." {
			continue
		}
		if folded == nil {
			folded = make([]string, len(comps))
			for j, c := range comps {
				folded[j] = Fold(c)
			}
		}
		covered := 0
		for _, p := range inertPatterns {
			if covered = p.at(folded, i); covered > 0 {
				break
			}
		}
		if covered == 0 {
			return c
		}
		i += covered - 1
	}
	return ""
}
