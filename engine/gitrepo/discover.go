// Package gitrepo finds the repository git uses for a directory, the way
// git does, and reads what toolgate needs to know about it before a git
// command counts as read-only: every configuration key git would obey,
// the files its index tracks and the paths its history holds. It reads
// files only; it never runs git.
package gitrepo

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"

	"github.com/toolgate/toolgate/engine/pathcheck"
)

// Repo is the repository git uses for a directory.
type Repo struct {
	// GitDir is the repository directory (a .git directory, the
	// directory a .git file names, or a bare repository), resolved.
	GitDir string
	// CommonDir holds the objects, refs and config; it differs from
	// GitDir for a linked worktree (commondir).
	CommonDir string
	// WorkTree is the top of the working tree ("" for a bare repository).
	WorkTree string
	// Bare is set when the directory itself, or one above it, is the
	// repository (HEAD, objects/, refs/ in it), with no .git on the way.
	Bare bool
}

// ErrNoDirectory is Discover's error for a directory that is not there.
var ErrNoDirectory = errors.New("no such directory")

// maxSmallFile bounds what is read of HEAD, .git files and commondir.
const maxSmallFile = 4096

// Discover returns the repository git uses when run in dir (an absolute
// path with its links resolved), or nil when git finds none. It follows
// git's setup: in dir and each directory above it, a .git directory that
// is a repository, or a .git file naming one (an invalid one stops git
// with an error), or the directory itself being a bare repository. It
// walks up to / and ignores the ceilings and file-system boundaries git
// may stop at: where git stops earlier it finds no repository and fails,
// which runs nothing.
func Discover(dir string) (*Repo, error) { return DiscoverWith(nil, dir) }

// DiscoverWith is Discover looking through lk (a check's, shared by its
// walkers: one poll of the mount table, the directories it holds); nil
// takes a look of its own.
func DiscoverWith(lk *pathcheck.Look, dir string) (*Repo, error) {
	if !filepath.IsAbs(dir) {
		return nil, fmt.Errorf("%s is not absolute", dir)
	}
	d := filepath.Clean(dir)
	if lk == nil {
		// One look at the mount table for the walk up.
		var err error
		if lk, err = pathcheck.NewLook(); err != nil {
			return nil, err
		}
	}
	if fi, _, err := lk.Stat(d); missing(err) || err == nil && !fi.IsDir() {
		return nil, fmt.Errorf("%s: %w", d, ErrNoDirectory) // git cannot start there
	} else if err != nil {
		return nil, err
	}
	for {
		// Most directories on the way hold neither: one look, remembered.
		if lk.NoneIn(d, ".git", "HEAD") {
			parent := filepath.Dir(d)
			if parent == d {
				return nil, nil
			}
			d = parent
			continue
		}
		dotgit := filepath.Join(d, ".git")
		fi, err := lk.Lstat(dotgit)
		linked := err == nil && fi.Mode()&fs.ModeSymlink != 0
		if linked {
			fi, _, err = lk.Stat(dotgit)
		}
		switch {
		case err == nil && fi.Mode().IsRegular():
			gd, err := readGitFile(dotgit)
			if err != nil {
				return nil, err // git stops here with an error: nothing runs, but nothing is proven
			}
			if ok, err := isGitDirectory(gd); err != nil || !ok {
				return nil, fmt.Errorf("%s names %s, which is not a repository", dotgit, gd)
			}
			return newRepo(gd, d, false, true)
		case err == nil && fi.IsDir():
			if ok, err := isGitDirectory(dotgit); err != nil {
				return nil, err
			} else if ok {
				return newRepo(dotgit, d, false, linked)
			}
		case err != nil && !errors.Is(err, fs.ErrNotExist) && !errors.Is(err, syscall.ENOTDIR):
			return nil, err
		}
		if ok, err := isGitDirectory(d); err != nil {
			return nil, err
		} else if ok {
			return newRepo(d, "", true, false)
		}
		parent := filepath.Dir(d)
		if parent == d {
			return nil, nil
		}
		d = parent
	}
}

// newRepo makes the Repo of gitDir, resolving it when it may lead
// through a link (the directories above it are resolved already).
func newRepo(gitDir, workTree string, bare, mayLink bool) (*Repo, error) {
	gd := gitDir
	if mayLink {
		var err error
		if gd, err = resolve(gitDir); err != nil {
			return nil, err
		}
	}
	common, err := commonDir(gd)
	if err != nil {
		return nil, err
	}
	return &Repo{GitDir: gd, CommonDir: common, WorkTree: workTree, Bare: bare}, nil
}

// readGitFile reads a .git file: "gitdir: PATH", relative to the file's
// directory.
func readGitFile(p string) (string, error) {
	b, err := readSmall(p)
	if err != nil {
		return "", err
	}
	s, ok := strings.CutPrefix(string(b), "gitdir: ")
	if !ok {
		return "", fmt.Errorf("%s is not a gitdir file", p)
	}
	s = strings.TrimRight(s, "\r\n")
	if s == "" || strings.ContainsAny(s, "\n\x00") {
		return "", fmt.Errorf("%s is not a gitdir file", p)
	}
	if !filepath.IsAbs(s) {
		s = filepath.Join(filepath.Dir(p), s)
	}
	return s, nil
}

// commonDir reads gd/commondir (a linked worktree's pointer to the main
// repository), resolved; gd itself when there is none.
func commonDir(gd string) (string, error) {
	b, err := readSmall(filepath.Join(gd, "commondir"))
	if errors.Is(err, fs.ErrNotExist) {
		return gd, nil
	}
	if err != nil {
		return "", err
	}
	s := strings.TrimRight(string(b), "\r\n")
	if s == "" || strings.ContainsAny(s, "\n\x00") {
		return "", fmt.Errorf("%s/commondir is malformed", gd)
	}
	if !filepath.IsAbs(s) {
		s = filepath.Join(gd, s)
	}
	return resolve(s)
}

// resolve is filepath.EvalSymlinks by the kernel's rules, with every
// component on a local file system (pathcheck.Stat): the repository's
// files are read from there, and a proof about files on a network or
// FUSE mount does not hold.
func resolve(p string) (string, error) {
	_, r, err := pathcheck.Stat(p)
	return r, err
}

// isGitDirectory is git's is_git_directory: HEAD reads as a ref or an
// object name, and objects/ and refs/ (in the common directory, if
// commondir names one) are directories.
func isGitDirectory(d string) (bool, error) {
	if gitDirs.known(d) {
		return true, nil
	}
	// Identities before the looks: a change after them leaves newer ones.
	ids, cacheable := gitDirs.identities(d)
	// HEAD first: most directories have none, and one look settles it.
	if ok, err := validHead(filepath.Join(d, "HEAD")); !ok || err != nil {
		return false, err
	}
	common := d
	if b, err := readSmall(filepath.Join(d, "commondir")); err == nil {
		s := strings.TrimRight(string(b), "\r\n")
		if !filepath.IsAbs(s) {
			s = filepath.Join(d, s)
		}
		common = s
	} else if !missing(err) {
		return false, err
	}
	// git asks only that objects and refs be there for it (access X_OK,
	// files and links too); toolgate, which may not be the agent's user,
	// takes anything there for them: a superset of git's repositories.
	for _, sub := range []string{"objects", "refs"} {
		fi, err := pathcheck.Lstat(filepath.Join(common, sub))
		switch {
		case missing(err):
			return false, nil
		case err != nil:
			return false, err
		case !fi.IsDir():
			cacheable = false // a link or file may change without d's knowing
		}
	}
	if common == d && cacheable {
		gitDirs.keep(d, ids)
	}
	return true, nil
}

// gitDirs remembers repository directories found valid, by the identity
// of the directory (its entries: HEAD, commondir, objects, refs appearing
// or going change it) and of its HEAD (rewritten in place, it does not).
var gitDirs = &knownGitDirs{m: map[string][2]pathcheck.Identity{}}

type knownGitDirs struct {
	sync.Mutex
	m map[string][2]pathcheck.Identity
}

const maxGitDirs = 1024

func (k *knownGitDirs) identities(d string) ([2]pathcheck.Identity, bool) {
	var ids [2]pathcheck.Identity
	for i, p := range []string{d, filepath.Join(d, "HEAD")} {
		fi, err := pathcheck.Lstat(p)
		if err != nil {
			return ids, false
		}
		id, ok := pathcheck.IdentityOf(p, fi)
		if !ok || pathcheck.Racy(id) {
			return ids, false
		}
		ids[i] = id
	}
	return ids, true
}

func (k *knownGitDirs) known(d string) bool {
	k.Lock()
	want, ok := k.m[d]
	k.Unlock()
	if !ok {
		return false
	}
	got, ok := k.identities(d)
	return ok && got == want
}

// keep remembers d as valid with the identities taken before its look.
func (k *knownGitDirs) keep(d string, ids [2]pathcheck.Identity) {
	k.Lock()
	defer k.Unlock()
	if len(k.m) >= maxGitDirs {
		k.m = map[string][2]pathcheck.Identity{}
	}
	k.m[d] = ids
}

// validHead is git's validate_headref: a symbolic link into refs/, or a
// file whose first 255 bytes are "ref:", blanks (space, tab, newline,
// carriage return), then "refs/"; or that start with an object name
// (40 hex digits, either case; what follows is not looked at).
func validHead(p string) (bool, error) {
	fi, err := pathcheck.Lstat(p)
	if missing(err) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	if fi.Mode()&fs.ModeSymlink != 0 {
		t, err := os.Readlink(p)
		return err == nil && strings.HasPrefix(t, "refs/"), nil
	}
	b, err := readHead(p)
	if missing(err) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	if rest, ok := bytes.CutPrefix(b, []byte("ref:")); ok {
		if bytes.HasPrefix(bytes.TrimLeft(rest, " \t\n\r"), []byte("refs/")) {
			return true, nil
		}
	}
	if len(b) < 40 {
		return false, nil
	}
	for _, c := range b[:40] {
		if !isHex(c) && (c < 'A' || c > 'F') {
			return false, nil
		}
	}
	return true, nil
}

// readHead reads at most 255 bytes of HEAD, as git does.
func readHead(p string) ([]byte, error) {
	f, _, err := openRegular(p)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b := make([]byte, 255)
	n, err := io.ReadFull(f, b)
	if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, io.EOF) {
		return nil, err
	}
	return b[:n], nil
}

// openRegular opens a regular file git reads. The open does not block
// (a FIFO planted where git reads would hold the check's thread in the
// system call, past its deadline), and anything but a regular file is an
// error: git would wait on it or read a device. Nor is one on a network
// or FUSE file system read (pathcheck.OpenFile).
func openRegular(p string) (*os.File, os.FileInfo, error) {
	f, err := pathcheck.OpenFile(p, syscall.O_NONBLOCK)
	if err != nil {
		return nil, nil, err
	}
	fi, err := f.Stat()
	if err == nil && !fi.Mode().IsRegular() {
		err = fmt.Errorf("%s is not a regular file", p)
	}
	if err != nil {
		f.Close()
		return nil, nil, err
	}
	return f, fi, nil
}

func isHex(c byte) bool { return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' }

func missing(err error) bool {
	return errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR)
}

// readSmall reads at most maxSmallFile bytes of a regular file; a longer
// one is an error (git's HEAD, .git and commondir files are one line).
func readSmall(p string) ([]byte, error) {
	f, _, err := openRegular(p)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b := make([]byte, maxSmallFile+1)
	n, err := f.Read(b)
	if err != nil && n == 0 {
		return nil, err
	}
	if n > maxSmallFile {
		return nil, fmt.Errorf("%s is longer than %d bytes", p, maxSmallFile)
	}
	return b[:n], nil
}
