//go:build !linux

package pathcheck

import (
	"io/fs"
	"syscall"
)

// linkFree has no kernel proof to offer here: every path takes the
// component walk.
func linkFree(*mountTable, string, bool) (string, bool) { return "", false }

type linkState uint8

const (
	linkUnknown linkState = iota
	linkProven
	linkAbsent
)

func probe(*mountTable, string, bool, bool) (string, linkState, *syscall.Stat_t) {
	return "", linkUnknown, nil
}

func probeInfo(*mountTable, string, bool) (fs.FileInfo, bool, error) { return nil, false, nil }
