package gitrepo

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"github.com/go-git/gcfg"

	"github.com/toolgate/toolgate/engine/pathcheck"
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
func Config(repo *Repo, home string) ([]Setting, error) { return ConfigWith(nil, repo, home) }

// ConfigWith is Config looking through lk (a check's); nil takes a look of
// its own.
func ConfigWith(lk *pathcheck.Look, repo *Repo, home string) ([]Setting, error) {
	if home == "" {
		return nil, errors.New("the user's home directory is not known, so neither are their git settings")
	}
	files := []string{"/etc/gitconfig", filepath.Join(home, ".config/git/config"), filepath.Join(home, ".gitconfig")}
	if repo != nil {
		files = append(files, filepath.Join(repo.CommonDir, "config"))
	}
	if lk == nil {
		var err error
		if lk, err = pathcheck.NewLook(); err != nil {
			return nil, err
		}
	}
	r := &configReader{home: home, look: lk}
	for _, f := range files {
		if err := r.read(f, 0); err != nil {
			return nil, err
		}
	}
	// The worktree's own config counts only where extensions.worktreeConfig
	// is on (git ignores it otherwise); any spelling of true turns it on.
	if repo != nil && slices.ContainsFunc(r.out, func(s Setting) bool {
		return strings.EqualFold(s.Section, "extensions") && s.Sub == "" && strings.EqualFold(s.Key, "worktreeconfig") &&
			!slices.Contains([]string{"false", "no", "off", "0", ""}, strings.ToLower(strings.TrimSpace(s.Value)))
	}) {
		if err := r.read(filepath.Join(repo.GitDir, "config.worktree"), 0); err != nil {
			return nil, err
		}
	}
	return r.out, nil
}

type configReader struct {
	home  string
	out   []Setting
	files int
	look  *pathcheck.Look // one for the files read together
}

// parsedFile is one config file's settings and the include paths in it,
// as written.
type parsedFile struct {
	settings []Setting
	includes []string
}

// parsed keeps config files' parses by version: most checks read the
// same few unchanged files. It is dropped whole when full.
var parsed struct {
	sync.Mutex
	m map[pathcheck.Identity]*parsedFile
}

const maxParsed = 256

func cachedParse(id pathcheck.Identity) *parsedFile {
	parsed.Lock()
	defer parsed.Unlock()
	return parsed.m[id]
}

func keepParse(id pathcheck.Identity, pf *parsedFile) {
	parsed.Lock()
	defer parsed.Unlock()
	if parsed.m == nil || len(parsed.m) >= maxParsed {
		parsed.m = map[pathcheck.Identity]*parsedFile{}
	}
	parsed.m[id] = pf
}

func (r *configReader) read(path string, depth int) error {
	if depth > maxIncludeDepth {
		return fmt.Errorf("%s: includes nested more than %d deep", path, maxIncludeDepth)
	}
	if r.files++; r.files > maxConfigFiles {
		return fmt.Errorf("more than %d git config files", maxConfigFiles)
	}
	fi, _, err := r.look.Stat(path)
	if missing(err) {
		return nil
	}
	if err != nil {
		return err
	}
	if fi.IsDir() {
		return nil // git skips an include that is a directory
	}
	if !fi.Mode().IsRegular() {
		return fmt.Errorf("%s is not a regular file", path) // git would wait on a FIFO or read a device
	}
	id, known := pathcheck.IdentityOf(path, fi)
	pf := (*parsedFile)(nil)
	if known {
		pf = cachedParse(id)
	}
	if pf == nil {
		if pf, id, known, err = parseFile(path); err != nil {
			return err
		}
		if pf == nil {
			return nil // gone since the look
		}
		if known && !pathcheck.Racy(id) {
			keepParse(id, pf)
		}
	}
	r.out = append(r.out, pf.settings...)
	for _, inc := range pf.includes {
		p := inc
		switch {
		case p == "":
			continue
		case strings.Contains(p, "%("):
			// %(prefix) is git's installation prefix, which toolgate
			// does not know.
			return fmt.Errorf("%s: include path %s names git's installation", path, inc)
		case p == "~" || strings.HasPrefix(p, "~/"):
			p = strings.TrimSuffix(r.home, "/") + p[1:]
		case strings.HasPrefix(p, "~"):
			return fmt.Errorf("%s: include path %s names another user's home", path, inc)
		case !filepath.IsAbs(p):
			// Joined, not cleaned: the kernel follows a link before a
			// "..", as git's open does.
			p = filepath.Dir(path) + "/" + p
		}
		if err := r.read(p, depth+1); err != nil {
			return err
		}
	}
	return nil
}

// parseFile reads and parses one config file, with the identity of the
// version read (from the open file, so that it is the version parsed).
func parseFile(path string) (*parsedFile, pathcheck.Identity, bool, error) {
	f, fi, err := openRegular(path)
	if missing(err) {
		return nil, pathcheck.Identity{}, false, nil
	}
	if err != nil {
		return nil, pathcheck.Identity{}, false, err
	}
	defer f.Close()
	id, known := pathcheck.IdentityOf(path, fi)
	b, err := io.ReadAll(io.LimitReader(f, maxConfigBytes+1))
	if err != nil {
		return nil, id, false, err
	}
	if len(b) > maxConfigBytes {
		return nil, id, false, fmt.Errorf("%s is larger than %d bytes", path, maxConfigBytes)
	}
	// gcfg and git part ways on carriage returns (git reads one as a
	// space in a value, gcfg drops it) and on backslash-newline
	// continuations (git joins the lines, gcfg keeps the newline): a
	// file with either is not read as git reads it.
	if bytes.IndexByte(b, '\r') >= 0 || bytes.Contains(b, []byte("\\\n")) {
		return nil, id, false, fmt.Errorf("%s uses line endings or continuations toolgate does not read as git does", path)
	}
	pf := &parsedFile{}
	err = gcfg.ReadWithCallback(bytes.NewReader(b), func(sec, sub, key, val string, blank bool) error {
		if key == "" {
			return nil // a section header
		}
		if blank {
			val = "true"
		}
		if strings.ContainsFunc(val, func(r rune) bool { return r < 0x20 && r != '\t' || r == 0x7f }) {
			return fmt.Errorf("%s.%s has a control character in its value", sec, key)
		}
		pf.settings = append(pf.settings, Setting{Section: sec, Sub: sub, Key: key, Value: val, File: path})
		ls, lk := strings.ToLower(sec), strings.ToLower(key)
		if lk == "path" && (ls == "include" && sub == "" || ls == "includeif") {
			pf.includes = append(pf.includes, val)
		}
		return nil
	})
	if err != nil {
		return nil, id, false, fmt.Errorf("%s: %w", path, err)
	}
	return pf, id, known, nil
}
