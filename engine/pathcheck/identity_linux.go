package pathcheck

import (
	"io/fs"
	"syscall"
)

// IdentityOf is what tells one version of a file from another: the kernel
// sets ctime on every change to a file, and no program can set it back.
func IdentityOf(path string, fi fs.FileInfo) (Identity, bool) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return Identity{}, false
	}
	return Identity{path: path, dev: uint64(st.Dev), ino: st.Ino, size: st.Size,
		mtime: st.Mtim.Nano(), ctime: st.Ctim.Nano()}, true
}
