package gitrepo

import (
	"bufio"
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/go-git/go-billy/v5"
	"github.com/go-git/go-billy/v5/osfs"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/cache"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/plumbing/storer"
	"github.com/go-git/go-git/v5/storage/filesystem"
	"github.com/go-git/go-git/v5/storage/filesystem/dotgit"

	"github.com/toolgate/toolgate/engine/pathcheck"
)

// Bounds on the work of reading one repository's index and history for a
// check. Past them the files are not proven, and the command goes to the
// classifier.
const (
	maxObjectsDefault = 50_000 // commits, tags and trees decoded
	maxIndexEntries   = 200_000
	maxFound          = 32      // matching paths kept
	maxReflogBytes    = 4 << 20 // of reflogs and pseudo-refs, all together
	maxIndexBytes     = 64 << 20
	maxPackIndexBytes = 64 << 20
	maxObjectBytes    = 1 << 20 // read into memory whole; larger ones lazily
	maxRoots          = 4 * maxObjectsDefault
)

// maxObjects bounds the objects a walk decodes, maxPathBytes the bytes of
// the paths it builds and keeps; tests lower them.
var (
	maxObjects   = maxObjectsDefault
	maxPathBytes = 32 << 20
)

// ErrTooLarge is returned when a repository holds more than a check may
// read.
var ErrTooLarge = errors.New("the repository's history is larger than a check may read")

// Matches are the paths of a repository that a predicate picked.
type Matches struct {
	// Paths are the picked paths, at most maxFound of them; a picked
	// directory stands for everything below it.
	Paths []string
	// Submodules is set when the paths include a submodule (a gitlink),
	// whose files live in another repository.
	Submodules bool
}

// Complete reports whether Paths holds every path picked: at maxFound
// some may have been left out.
func (m Matches) Complete() bool { return len(m.Paths) < maxFound }

func (m *Matches) add(p string) {
	if len(m.Paths) < maxFound {
		m.Paths = append(m.Paths, p)
	}
}

// storage opens the repository's object store. Alternates (objects of
// another repository, which could be anything) are refused.
func storage(repo *Repo) (*filesystem.Storage, error) {
	// Grafts give commits other parents than they hold, which the walk
	// would not follow.
	for _, f := range []string{"objects/info/alternates", "objects/info/http-alternates", "info/grafts"} {
		if _, err := pathcheck.Lstat(filepath.Join(repo.CommonDir, f)); err == nil {
			return nil, fmt.Errorf("the repository borrows objects from another or rewrites parents (%s)", f)
		} else if !missing(err) {
			return nil, err
		}
	}
	// go-git loads every pack index whole: their sizes bound that.
	packs := filepath.Join(repo.CommonDir, "objects", "pack")
	ents, err := pathcheck.ReadDir(packs)
	if err != nil && !missing(err) {
		return nil, err
	}
	total := int64(0)
	for _, e := range ents {
		if !strings.HasSuffix(e.Name(), ".idx") {
			continue
		}
		fi, _, err := pathcheck.Stat(filepath.Join(packs, e.Name()))
		if missing(err) {
			continue
		}
		if err != nil {
			return nil, err
		}
		total += fi.Size()
	}
	if total > maxPackIndexBytes {
		return nil, ErrTooLarge
	}
	var fsys billy.Filesystem = localFS{osfs.New(repo.GitDir)}
	if repo.CommonDir != repo.GitDir {
		fsys = dotgit.NewRepositoryFilesystem(fsys, localFS{osfs.New(repo.CommonDir)})
	}
	// Objects past the threshold are read lazily: a ref naming a huge
	// blob costs its header, not its size.
	return filesystem.NewStorageWithOptions(fsys, cache.NewObjectLRU(4*cache.MiByte),
		filesystem.Options{LargeObjectThreshold: maxObjectBytes}), nil
}

// IndexPaths returns the paths in the repository's index that pick
// reports, and whether it tracks submodules. A repository without an
// index tracks nothing.
func IndexPaths(repo *Repo, pick func(string) bool) (Matches, error) {
	var m Matches
	fi, _, err := pathcheck.Stat(filepath.Join(repo.GitDir, "index"))
	switch {
	case missing(err):
		return m, nil
	case err != nil:
		return m, err
	case !fi.Mode().IsRegular():
		return m, errors.New("the index is not a regular file")
	case fi.Size() > maxIndexBytes:
		return m, ErrTooLarge
	}
	st, err := storage(repo)
	if err != nil {
		return m, err
	}
	defer st.Close()
	idx, err := st.Index()
	if err != nil {
		return m, fmt.Errorf("the index cannot be read: %w", err)
	}
	if len(idx.Entries) > maxIndexEntries {
		return m, ErrTooLarge
	}
	for _, e := range idx.Entries {
		switch {
		case e.Mode == filemode.Submodule:
			m.Submodules = true
		case e.Mode == filemode.Dir:
			// A sparse index's directory entry stands for files not
			// listed.
			return m, errors.New("the index is sparse")
		}
		if pick(e.Name) {
			m.add(e.Name)
		}
	}
	return m, nil
}

// HistoryPaths returns the paths that pick reports among every path the
// repository's history holds: in the trees of every commit reachable from
// its refs, HEADs, reflogs and stashes, and from the objects named by the
// hex prefixes in names (a revision written as an abbreviated hash may
// name an unreachable commit). A prefix naming a blob, whose content has
// no path to judge, is an error.
func HistoryPaths(ctx context.Context, repo *Repo, names []string, pick func(string) bool) (Matches, error) {
	w := &walker{ctx: ctx, pick: pick, trees: map[treeKey][]string{}, seen: map[plumbing.Hash]bool{}}
	st, err := storage(repo)
	if err != nil {
		return w.m, err
	}
	defer st.Close()
	w.st = st
	if err := w.roots(repo, names); err != nil {
		return w.m, err
	}
	for len(w.stack) > 0 {
		h := w.stack[len(w.stack)-1]
		w.stack = w.stack[:len(w.stack)-1]
		if err := w.object(h); err != nil {
			return w.m, err
		}
	}
	return w.m, nil
}

type walker struct {
	ctx   context.Context
	st    *filesystem.Storage
	pick  func(string) bool
	m     Matches
	stack []plumbing.Hash
	seen  map[plumbing.Hash]bool
	// trees holds, by tree and place, the picked paths below it.
	trees map[treeKey][]string
	n     int
	// refBytes counts the bytes of ref files and reflogs read, pathBytes
	// those of the paths the walk builds and keeps.
	refBytes, pathBytes int
}

func (w *walker) push(h plumbing.Hash) {
	if !h.IsZero() && !w.seen[h] {
		w.seen[h] = true
		w.stack = append(w.stack, h)
	}
}

func (w *walker) spend() error {
	if w.n++; w.n > maxObjects {
		return ErrTooLarge
	}
	if w.n%512 == 0 {
		return w.ctx.Err()
	}
	return nil
}

// roots pushes every ref, HEAD and reflog entry, and the objects the hex
// names may abbreviate.
func (w *walker) roots(repo *Repo, names []string) error {
	if err := w.refRoots(repo); err != nil {
		return err
	}
	for _, dir := range []string{filepath.Join(repo.CommonDir, "logs"), filepath.Join(repo.GitDir, "logs")} {
		if err := w.refTree(dir, 2); err != nil {
			return err
		}
	}
	for _, n := range names {
		if err := w.prefix(n); err != nil {
			return err
		}
	}
	if len(w.seen) > maxRoots {
		return ErrTooLarge
	}
	return nil
}

// refRoots pushes what every ref and pseudo-ref names.
func (w *walker) refRoots(repo *Repo) error {
	refs, err := w.st.IterReferences()
	if err != nil {
		return err
	}
	err = refs.ForEach(func(r *plumbing.Reference) error {
		if len(w.seen) > maxRoots {
			return ErrTooLarge
		}
		if r.Type() == plumbing.HashReference {
			w.push(r.Hash())
		}
		return nil
	})
	if err != nil {
		return err
	}
	return w.pseudoRefs(repo)
}

// pseudoRefs pushes what git's pseudo-refs name: HEAD, ORIG_HEAD,
// FETCH_HEAD (every line), MERGE_HEAD, AUTO_MERGE and every other
// upper-case file at the top of the git directories and of each
// worktree's, and each worktree's own refs: all names a revision may
// use.
func (w *walker) pseudoRefs(repo *Repo) error {
	dirs := []string{repo.GitDir, repo.CommonDir}
	wts, err := pathcheck.ReadDir(filepath.Join(repo.CommonDir, "worktrees"))
	if err != nil && !missing(err) {
		return err
	}
	for _, e := range wts {
		dirs = append(dirs, filepath.Join(repo.CommonDir, "worktrees", e.Name()))
	}
	for _, d := range dirs {
		ents, err := pathcheck.ReadDir(d)
		if err != nil {
			if missing(err) {
				continue
			}
			return err
		}
		for _, e := range ents {
			if !pseudoRefName(e.Name()) || !e.Type().IsRegular() {
				continue
			}
			if err := w.refFile(filepath.Join(d, e.Name()), 1); err != nil {
				return err
			}
		}
		if d != repo.CommonDir {
			if err := w.refTree(filepath.Join(d, "refs"), 1); err != nil {
				return err
			}
		}
	}
	return nil
}

func pseudoRefName(n string) bool {
	if n == "" {
		return false
	}
	for i := 0; i < len(n); i++ {
		if c := n[i]; !(c >= 'A' && c <= 'Z' || c == '_') {
			return false
		}
	}
	return true
}

// refFile pushes the object names in the first fields of each line of a
// ref file: one in a ref or FETCH_HEAD line, two (old and new) in a
// reflog's. The bytes of all such files a walk reads are bounded
// together; past the bound the roots are not known, which is an error.
func (w *walker) refFile(p string, fields int) error {
	f, _, err := openRegular(p)
	if missing(err) {
		return nil
	}
	if err != nil {
		return err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 4096), 1<<20)
	for sc.Scan() {
		if w.refBytes += len(sc.Bytes()) + 1; w.refBytes > maxReflogBytes {
			return ErrTooLarge
		}
		words := strings.Fields(sc.Text())
		for _, f := range words[:min(fields, len(words))] {
			if h, ok := hexHash(f); ok {
				w.push(h)
			}
		}
	}
	return sc.Err()
}

// refTree runs refFile on every file below dir (a worktree's own refs,
// which the common refs do not hold; the reflogs), listing each directory
// as pathcheck finds it: one on a network or FUSE file system is an error.
func (w *walker) refTree(dir string, fields int) error {
	ents, err := pathcheck.ReadDir(dir)
	switch {
	case missing(err):
		return nil
	case err != nil:
		return err
	}
	for _, e := range ents {
		p := filepath.Join(dir, e.Name())
		if e.IsDir() {
			err = w.refTree(p, fields)
		} else {
			err = w.refFile(p, fields)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// prefix pushes the objects whose names start with the hex text n, if it
// is one (four digits or more, as git abbreviates).
func (w *walker) prefix(n string) error {
	n = strings.ToLower(n)
	if len(n) < 4 || len(n) > 64 || strings.IndexFunc(n, func(r rune) bool { return !isHex(byte(r)) || r > 0x7f }) >= 0 {
		return nil
	}
	b, err := hex.DecodeString(n[:len(n)&^1])
	if err != nil {
		return nil
	}
	hs, err := w.st.HashesWithPrefix(b)
	if err != nil {
		return err
	}
	for _, h := range hs {
		if strings.HasPrefix(h.String(), n) {
			w.push(h)
		}
	}
	return nil
}

func (w *walker) object(h plumbing.Hash) error {
	if err := w.spend(); err != nil {
		return err
	}
	o, err := w.st.EncodedObject(plumbing.AnyObject, h)
	if errors.Is(err, plumbing.ErrObjectNotFound) {
		return nil // a reflog's pruned entry: git cannot print it either
	}
	if err != nil {
		return err
	}
	switch o.Type() {
	case plumbing.CommitObject:
		c, err := object.DecodeCommit(w.st, o)
		if err != nil {
			return err
		}
		w.push(c.TreeHash)
		for _, p := range c.ParentHashes {
			w.push(p)
		}
	case plumbing.TagObject:
		t, err := object.DecodeTag(w.st, o)
		if err != nil {
			return err
		}
		if t.TargetType == plumbing.BlobObject {
			return fmt.Errorf("tag %s names a file's content, which has no path to judge", t.Name)
		}
		w.push(t.Target)
	case plumbing.TreeObject:
		found, err := w.tree(h, o, "", 0)
		if err != nil {
			return err
		}
		for _, p := range found {
			w.m.add(p)
		}
	case plumbing.BlobObject:
		return fmt.Errorf("%s names a file's content, which has no path to judge", h)
	}
	return nil
}

// tree returns the picked paths below tree h found at prefix ("" at the
// top, else ending in "/"). Picks are judged on whole paths (a credential
// store may be several components, none secret alone), so a tree's
// answer is kept by tree and place: the same tree at the same place in
// many commits is read once.
func (w *walker) tree(h plumbing.Hash, o plumbing.EncodedObject, prefix string, depth int) ([]string, error) {
	key := treeKey{h, prefix}
	if found, ok := w.trees[key]; ok {
		return found, nil
	}
	// Paths cost their length in every tree they are kept for: deep
	// trees of long names must not make a walk hold gigabytes.
	if w.pathBytes += len(prefix); depth > 4096 || w.pathBytes > maxPathBytes {
		return nil, ErrTooLarge
	}
	if o == nil {
		if err := w.spend(); err != nil {
			return nil, err
		}
		var err error
		if o, err = w.st.EncodedObject(plumbing.TreeObject, h); err != nil {
			return nil, err
		}
	}
	t, err := object.DecodeTree(w.st, o)
	if err != nil {
		return nil, err
	}
	var found []string
	for _, e := range t.Entries {
		p := prefix + e.Name
		switch {
		case w.pick(p):
			if w.pathBytes += len(p); w.pathBytes > maxPathBytes {
				return nil, ErrTooLarge
			}
			found = append(found, p)
		case e.Mode == filemode.Submodule:
			w.m.Submodules = true
		case e.Mode == filemode.Dir:
			sub, err := w.tree(e.Hash, nil, p+"/", depth+1)
			if err != nil {
				return nil, err
			}
			found = append(found, sub...)
		}
		if len(found) > maxFound {
			found = found[:maxFound]
		}
	}
	w.trees[key] = found
	return found, nil
}

type treeKey struct {
	h      plumbing.Hash
	prefix string
}

func hexHash(s string) (plumbing.Hash, bool) {
	if len(s) != 40 {
		return plumbing.ZeroHash, false // SHA-256 repositories: go-git reads SHA-1 ones
	}
	for i := 0; i < len(s); i++ {
		if !isHex(s[i]) {
			return plumbing.ZeroHash, false
		}
	}
	return plumbing.NewHash(s), true
}

// NamedBlob says why one of names may be a file's content (a blob, or a
// tag of one), which has no path to judge; "" when none is. A name is
// taken for an abbreviated object name when it is hex, and for a ref the
// way git reads one (NAME, refs/NAME, refs/tags/NAME, refs/heads/NAME,
// refs/remotes/NAME, refs/remotes/NAME/HEAD) up to the first character
// that starts a revision suffix; REV:path names a file by its path,
// judged by name elsewhere.
func NamedBlob(ctx context.Context, repo *Repo, names []string) string {
	st, err := storage(repo)
	if err != nil {
		return "cannot read the repository's objects: " + err.Error()
	}
	defer st.Close()
	w := &walker{ctx: ctx, st: st, seen: map[plumbing.Hash]bool{}}
	for _, n := range names {
		if strings.Contains(n, "^{") {
			return fmt.Sprintf("%s peels an object, which may be a file's content", n)
		}
		if err := w.prefix(n); err != nil {
			return "cannot read the repository's objects: " + err.Error()
		}
		ref := n
		if i := strings.IndexAny(ref, "~^:@"); i >= 0 {
			ref = ref[:i]
		}
		for _, cand := range []string{ref, "refs/" + ref, "refs/tags/" + ref, "refs/heads/" + ref, "refs/remotes/" + ref, "refs/remotes/" + ref + "/HEAD"} {
			if r, err := storer.ResolveReference(st, plumbing.ReferenceName(cand)); err == nil {
				w.push(r.Hash())
			}
		}
	}
	return w.blobAmong()
}

// RefsNameBlob says why a ref of the repository may name a file's
// content (directly or through tags), which %(raw) and %(contents) print
// with no path to judge; "" when none does.
func RefsNameBlob(ctx context.Context, repo *Repo) string {
	st, err := storage(repo)
	if err != nil {
		return "cannot read the repository's objects: " + err.Error()
	}
	defer st.Close()
	w := &walker{ctx: ctx, st: st, seen: map[plumbing.Hash]bool{}}
	if err := w.refRoots(repo); err != nil {
		return "cannot read the repository's refs: " + err.Error()
	}
	return w.blobAmong()
}

// blobAmong says which of the objects pushed is a blob, or a tag (of a
// tag) of one; each object read counts against the walk's bounds.
func (w *walker) blobAmong() string {
	for _, h := range w.stack {
		for depth := 0; depth < 8; depth++ {
			if err := w.spend(); err != nil {
				return "cannot read the repository's objects: " + err.Error()
			}
			o, err := w.st.EncodedObject(plumbing.AnyObject, h)
			if err != nil {
				break
			}
			if o.Type() == plumbing.BlobObject {
				return fmt.Sprintf("%s names a file's content, which has no path to judge", h)
			}
			if o.Type() != plumbing.TagObject {
				break
			}
			t, err := object.DecodeTag(w.st, o)
			if err != nil {
				return "cannot read tag " + h.String()
			}
			h = t.Target
		}
	}
	return ""
}
