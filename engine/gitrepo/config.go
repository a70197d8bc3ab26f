package gitrepo

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/go-git/gcfg"
)

// Setting is one key git reads, with the file it came from.
type Setting struct {
	Section, Sub, Key, Value string
	File                     string
}

// Name is the setting's name as git config prints it.
func (s Setting) Name() string {
	if s.Sub == "" {
		return strings.ToLower(s.Section) + "." + strings.ToLower(s.Key)
	}
	return strings.ToLower(s.Section) + "." + s.Sub + "." + strings.ToLower(s.Key)
}

// Bounds on the configuration read for one repository: git itself stops
// at 10 levels of includes.
const (
	maxIncludeDepth = 10
	maxConfigFiles  = 32
	maxConfigBytes  = 1 << 20
)

// Config returns every setting git reads for repo: the system file, the
// user's global files under home, the repository's config and its
// worktree config, each with the files it includes followed (conditional
// includes too, whatever their condition: a superset of what git reads).
// A file that does not exist is skipped, as git skips it; one that cannot
// be read or parsed is an error. home "" means the user's files are not
// known, which is an error: they may set anything.
func Config(repo *Repo, home string) ([]Setting, error) {
	if home == "" {
		return nil, errors.New("the user's home directory is not known, so neither are their git settings")
	}
	files := []string{"/etc/gitconfig", filepath.Join(home, ".config/git/config"), filepath.Join(home, ".gitconfig")}
	if repo != nil {
		files = append(files, filepath.Join(repo.CommonDir, "config"), filepath.Join(repo.GitDir, "config.worktree"))
	}
	r := &configReader{home: home}
	for _, f := range files {
		if err := r.read(f, 0); err != nil {
			return nil, err
		}
	}
	return r.out, nil
}

type configReader struct {
	home  string
	out   []Setting
	files int
}

func (r *configReader) read(path string, depth int) error {
	if depth > maxIncludeDepth {
		return fmt.Errorf("%s: includes nested more than %d deep", path, maxIncludeDepth)
	}
	if r.files++; r.files > maxConfigFiles {
		return fmt.Errorf("more than %d git config files", maxConfigFiles)
	}
	f, err := os.Open(path)
	if missing(err) {
		return nil
	}
	if err != nil {
		return err
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil {
		return err
	} else if fi.IsDir() {
		return nil // git skips an include that is a directory
	}
	b, err := io.ReadAll(io.LimitReader(f, maxConfigBytes+1))
	if err != nil {
		return err
	}
	if len(b) > maxConfigBytes {
		return fmt.Errorf("%s is larger than %d bytes", path, maxConfigBytes)
	}
	var includes []string
	err = gcfg.ReadWithCallback(bytes.NewReader(b), func(sec, sub, key, val string, blank bool) error {
		if key == "" {
			return nil // a section header
		}
		if blank {
			val = "true"
		}
		r.out = append(r.out, Setting{Section: sec, Sub: sub, Key: key, Value: val, File: path})
		ls, lk := strings.ToLower(sec), strings.ToLower(key)
		if lk == "path" && (ls == "include" && sub == "" || ls == "includeif") {
			includes = append(includes, val)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	for _, inc := range includes {
		p := inc
		switch {
		case p == "":
			continue
		case p == "~" || strings.HasPrefix(p, "~/"):
			p = filepath.Join(r.home, p[1:])
		case strings.HasPrefix(p, "~"):
			return fmt.Errorf("%s: include path %s names another user's home", path, inc)
		case !filepath.IsAbs(p):
			p = filepath.Join(filepath.Dir(path), p)
		}
		if err := r.read(p, depth+1); err != nil {
			return err
		}
	}
	return nil
}
