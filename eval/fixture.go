package eval

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"time"
)

// A fixture is a project on disk that a case needs to be judged as it
// would be in a real project: what git obeys and prints depends on the
// repository's files, its config and its history. The corpus's
// fixtures/NAME.sh builds it: bash runs it in an empty directory, where it
// creates project/ (and whatever it needs around it, a parent repository
// for one), with git configured only by what the script writes (no
// system or user config, a fixed identity). A case that names a fixture
// is run with the corpus's project directory replaced by the fixture's
// everywhere: its working and additional directories and every string of
// its input.

// CorpusProject is the project directory corpus cases are written for.
const CorpusProject = "/home/dev/project"

var fixtureName = regexp.MustCompile(`^[a-z0-9][a-z0-9-]*$`)

// fixtureScript returns the script of fixture name for the corpus file.
func fixtureScript(corpusFile, name string) (string, error) {
	if !fixtureName.MatchString(name) {
		return "", fmt.Errorf("fixture %q: want lower-case letters, digits and dashes", name)
	}
	p, err := filepath.Abs(filepath.Join(filepath.Dir(corpusFile), "fixtures", name+".sh"))
	if err != nil {
		return "", err
	}
	if _, err := os.Stat(p); err != nil {
		return "", fmt.Errorf("fixture %q: %w", name, err)
	}
	return p, nil
}

// fixtures are the projects built for a run, by script.
type fixtures struct {
	dir      string
	projects map[string]string
}

// maxFixtureTime bounds one fixture's script.
const maxFixtureTime = time.Minute

// buildFixtures builds every fixture the cases name, once each.
func buildFixtures(ctx context.Context, cases []Case) (*fixtures, error) {
	fx := &fixtures{projects: map[string]string{}}
	for _, c := range cases {
		if c.fixtureScript == "" || fx.projects[c.fixtureScript] != "" {
			continue
		}
		if fx.dir == "" {
			d, err := os.MkdirTemp("", "toolgate-eval-")
			if err != nil {
				return fx, err
			}
			// The engine compares resolved paths: a TMPDIR behind a link
			// would put the project elsewhere than the cases say.
			if fx.dir, err = filepath.EvalSymlinks(d); err != nil {
				return fx, err
			}
		}
		root := filepath.Join(fx.dir, fmt.Sprint(len(fx.projects)))
		home := root + "-home"
		for _, d := range []string{root, home} {
			if err := os.Mkdir(d, 0o755); err != nil {
				return fx, err
			}
		}
		rctx, cancel := context.WithTimeout(ctx, maxFixtureTime)
		cmd := exec.CommandContext(rctx, "bash", "-euo", "pipefail", c.fixtureScript)
		cmd.Dir = root
		cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + home, "LC_ALL=C", "GIT_CONFIG_NOSYSTEM=1",
			"GIT_CONFIG_GLOBAL=/dev/null", "GIT_AUTHOR_NAME=dev", "GIT_AUTHOR_EMAIL=dev@example.com",
			"GIT_COMMITTER_NAME=dev", "GIT_COMMITTER_EMAIL=dev@example.com",
			"GIT_AUTHOR_DATE=2026-01-01T00:00:00Z", "GIT_COMMITTER_DATE=2026-01-01T00:00:00Z"}
		out, err := cmd.CombinedOutput()
		cancel()
		if err != nil {
			return fx, fmt.Errorf("fixture %s: %w\n%s", c.fixtureScript, err, out)
		}
		project := filepath.Join(root, "project")
		if fi, err := os.Stat(project); err != nil || !fi.IsDir() {
			return fx, fmt.Errorf("fixture %s made no project/ directory", c.fixtureScript)
		}
		fx.projects[c.fixtureScript] = project
	}
	return fx, nil
}

// apply returns the case as run in its fixture's project.
func (fx *fixtures) apply(c Case) Case {
	project := fx.projects[c.fixtureScript]
	if project == "" {
		return c
	}
	sub := func(s string) string {
		if s == CorpusProject || strings.HasPrefix(s, CorpusProject+"/") {
			return project + s[len(CorpusProject):]
		}
		return strings.ReplaceAll(s, CorpusProject+"/", project+"/")
	}
	c.Cwd = sub(c.Cwd)
	dirs := make([]string, len(c.AdditionalDirectories))
	for i, d := range c.AdditionalDirectories {
		dirs[i] = sub(d)
	}
	c.AdditionalDirectories = dirs
	c.Input, _ = substitute(c.Input, sub).(map[string]any)
	return c
}

func substitute(v any, sub func(string) string) any {
	switch v := v.(type) {
	case string:
		return sub(v)
	case map[string]any:
		out := make(map[string]any, len(v))
		for k, x := range v {
			out[k] = substitute(x, sub)
		}
		return out
	case []any:
		out := make([]any, len(v))
		for i, x := range v {
			out[i] = substitute(x, sub)
		}
		return out
	}
	return v
}

// remove deletes the fixtures' files.
func (fx *fixtures) remove() {
	if fx != nil && fx.dir != "" {
		os.RemoveAll(fx.dir)
	}
}
