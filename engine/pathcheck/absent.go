package pathcheck

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Identity names one version of a file or directory (see IdentityOf).
type Identity struct {
	path               string
	dev, ino           uint64
	size, mtime, ctime int64
}

// RacyWindow is how recent a change must be for an identity not to be
// trusted to tell it from the next change: the kernel's clock for file
// times is coarse, and a change within the same tick keeps the identity
// (git's "racily clean" entries). Tests lower it.
var RacyWindow = 2 * time.Second

// Racy reports whether id changed too recently to be trusted.
func Racy(id Identity) bool {
	now := time.Now().UnixNano()
	return now-id.mtime < int64(RacyWindow) || now-id.ctime < int64(RacyWindow)
}

// absent remembers directories in which none of a set of names existed,
// by the directory's identity: adding, removing or renaming an entry
// changes a directory's mtime and ctime, so one look at the directory
// tells that none of the names has appeared since, where a look per name
// would find out again. Bounded: dropped whole when full.
var absent struct {
	sync.Mutex
	m map[absentKey]Identity
}

type absentKey struct{ dir, names string }

const maxAbsent = 4096

// NoneIn reports whether none of names exists in directory d (as Lstat
// sees them; a name that cannot be looked up counts as there, and so does
// every name of a directory on a foreign file system). d must be resolved
// (free of links): the mount table is looked up by its name. Answers
// for directories not changed in the last RacyWindow are remembered.
func NoneIn(d string, names ...string) bool { return (*Look)(nil).NoneIn(d, names...) }

// NoneIn is the package's NoneIn.
func (l *Look) NoneIn(d string, names ...string) bool {
	key := absentKey{d, strings.Join(names, "\x00")}
	absent.Lock()
	id, ok := absent.m[key]
	absent.Unlock()
	t, err := l.table()
	if err != nil || t.refuseWay(d) != nil || t.scope.refuse(d, false) != nil {
		return false // counts as there: nothing is proven
	}
	if ok {
		countStat()
		if fi, err := os.Stat(d); err == nil && t.refuseFound(d, fi) == nil {
			if now, known := IdentityOf(d, fi); known && now == id {
				return true
			}
		}
	}
	// The identity is taken before looking: a change after it leaves a
	// newer identity, and the next call misses.
	countStat()
	fi, statErr := os.Stat(d)
	if statErr == nil && t.refuseFound(d, fi) != nil {
		return false
	}
	for _, n := range names {
		if _, err := t.lstat(filepath.Join(d, n)); !isNotExist(err) {
			return false
		}
	}
	if statErr != nil {
		return true
	}
	if id, known := IdentityOf(d, fi); known && !Racy(id) {
		absent.Lock()
		if absent.m == nil || len(absent.m) >= maxAbsent {
			absent.m = map[absentKey]Identity{}
		}
		absent.m[key] = id
		absent.Unlock()
	}
	return true
}

func isNotExist(err error) bool {
	return errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR)
}
