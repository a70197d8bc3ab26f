package gitrepo

import (
	"os"
	"path/filepath"

	"github.com/go-git/go-billy/v5"

	"github.com/toolgate/toolgate/engine/pathcheck"
)

// localFS is the file system go-git reads a repository's objects and refs
// through: every name it opens, lists or looks at is first found as
// pathcheck finds it, so a link or a mount inside the repository onto a
// network or FUSE file system is an error, never followed (the lookup
// there might never return, or return another machine's objects).
type localFS struct{ billy.Filesystem }

var _ billy.Filesystem = localFS{}

func (l localFS) path(name string) string { return filepath.Join(l.Root(), name) }

func (l localFS) Open(name string) (billy.File, error) {
	if _, _, err := pathcheck.Stat(l.path(name)); err != nil {
		return nil, err
	}
	return l.Filesystem.Open(name)
}

func (l localFS) OpenFile(name string, flag int, perm os.FileMode) (billy.File, error) {
	if _, _, err := pathcheck.Stat(l.path(name)); err != nil && (flag&os.O_CREATE == 0 || !os.IsNotExist(err)) {
		return nil, err
	}
	return l.Filesystem.OpenFile(name, flag, perm)
}

func (l localFS) Stat(name string) (os.FileInfo, error) {
	if _, _, err := pathcheck.Stat(l.path(name)); err != nil {
		return nil, err
	}
	return l.Filesystem.Stat(name)
}

func (l localFS) Lstat(name string) (os.FileInfo, error) {
	if _, err := pathcheck.Lstat(l.path(name)); err != nil {
		return nil, err
	}
	return l.Filesystem.Lstat(name)
}

func (l localFS) ReadDir(name string) ([]os.FileInfo, error) {
	if _, _, err := pathcheck.Stat(l.path(name)); err != nil {
		return nil, err
	}
	return l.Filesystem.ReadDir(name)
}

func (l localFS) Readlink(name string) (string, error) {
	if _, err := pathcheck.Lstat(l.path(name)); err != nil {
		return "", err
	}
	return l.Filesystem.Readlink(name)
}

func (l localFS) Chroot(name string) (billy.Filesystem, error) {
	fs, err := l.Filesystem.Chroot(name)
	if err != nil {
		return nil, err
	}
	return localFS{fs}, nil
}
