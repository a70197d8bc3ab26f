package config

import (
	"crypto/sha256"
	"fmt"
	"hash"
	"slices"
)

// Sum identifies the contents of the files a config was read from.
type Sum [sha256.Size]byte

// SumFiles reads the files as Load does and sums them as Load sums what it
// read, so that a reloader can tell, without loading, whether the files
// still hold what runs.
func SumFiles(paths []string) (Sum, error) {
	h := sha256.New()
	for _, p := range paths {
		data, err := ReadFile(p)
		if err != nil {
			return Sum{}, err
		}
		addToSum(h, p, data)
	}
	return Sum(h.Sum(nil)), nil
}

// addToSum adds one file; the path and length go in first, so that moving
// bytes from one file to the next changes the sum.
func addToSum(h hash.Hash, path string, data []byte) {
	fmt.Fprintf(h, "%s\x00%d\x00", path, len(data))
	h.Write(data)
}

// reader reads each file a config names once, and remembers what it read,
// in order, for Config.Files and Config.Sum.
type reader struct {
	paths []string
	data  [][]byte
}

// read returns path's contents, reading the file the first time only.
func (r *reader) read(path string) ([]byte, error) {
	if i := slices.Index(r.paths, path); i >= 0 {
		return r.data[i], nil
	}
	data, err := ReadFile(path)
	if err != nil {
		return nil, err
	}
	r.add(path, data)
	return data, nil
}

// add records a file read elsewhere.
func (r *reader) add(path string, data []byte) {
	r.paths = append(r.paths, path)
	r.data = append(r.data, data)
}

// sum is SumFiles of what was read; zero when nothing was.
func (r *reader) sum() Sum {
	if len(r.paths) == 0 {
		return Sum{}
	}
	h := sha256.New()
	for i, p := range r.paths {
		addToSum(h, p, r.data[i])
	}
	return Sum(h.Sum(nil))
}
