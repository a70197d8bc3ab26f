//go:build !linux

package pathcheck

import "io/fs"

// mountTable has nothing to tell here: off Linux there is no mountinfo to
// poll, and proofs keep today's behaviour, following every file system.
// Stalls stay bounded by the engine's file-system pool; network and FUSE
// mounts are not told apart (statfs's f_fstypename could, on the BSDs and
// macOS, when someone needs it).
type mountTable struct{ scope *scope }

func currentMounts() (*mountTable, error)                 { return &mountTable{}, nil }
func (t *mountTable) refuseWay(abs string) error          { return t.scope.refuse(abs, true) }
func (*mountTable) refuseFound(string, fs.FileInfo) error { return nil }

func (t *mountTable) confined(s *scope) *mountTable {
	cp := *t
	cp.scope = s
	return &cp
}
