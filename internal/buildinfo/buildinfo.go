// Package buildinfo says which build of toolgate is running: the module
// version and the VCS revision the Go toolchain stamps into every binary
// (runtime/debug.ReadBuildInfo), so that a bug report names the code it
// ran. It imports only the standard library: toolgate-hook, which starts
// for every tool call, uses it too.
package buildinfo

import (
	"fmt"
	"runtime"
	"runtime/debug"
	"strings"
)

// Info is what a binary knows of its own build.
type Info struct {
	// Version is the module version: v1.2.3 for go install ...@v1.2.3, a
	// pseudo-version (v0.0.0-20261127224726-7692b843dd43, +dirty when
	// modified) for a build in a git checkout, or what -ldflags set.
	// "dev" when the build recorded none.
	Version string
	// Revision is the VCS revision and Time its commit time (RFC 3339),
	// Modified whether the tree had uncommitted changes: empty when the
	// build did not stamp them (a module build by go install, a build
	// with -buildvcs=false, a git worktree, a container build without
	// .git that passed no revision).
	Revision string
	Time     string
	Modified bool
	// Go is the toolchain that built the binary.
	Go string
}

// Overrides are set at link time (-ldflags "-X ..."): builds without the
// VCS metadata (a container build, whose context leaves out .git) pass
// what they know. Empty fields leave the build info's.
type Overrides struct{ Version, Revision string }

// Read returns the running binary's build information.
func Read(o Overrides) Info {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		bi = nil
	}
	return From(bi, o)
}

// From extracts Info from bi (nil: none recorded), then applies o.
func From(bi *debug.BuildInfo, o Overrides) Info {
	info := Info{Version: "dev", Go: runtime.Version()}
	if bi != nil {
		if v := bi.Main.Version; v != "" && v != "(devel)" {
			info.Version = v
		}
		if bi.GoVersion != "" {
			info.Go = bi.GoVersion
		}
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				info.Revision = s.Value
			case "vcs.time":
				info.Time = s.Value
			case "vcs.modified":
				info.Modified = s.Value == "true"
			}
		}
	}
	if o.Version != "" {
		info.Version = o.Version
	}
	if o.Revision != "" {
		info.Revision = o.Revision
	}
	return info
}

// String is the version command's text after the program's name: the
// version on the first line, then the revision, commit time and
// toolchain, one a line.
func (i Info) String() string {
	var b strings.Builder
	b.WriteString(i.Version)
	b.WriteString("\n")
	switch {
	case i.Revision == "":
		b.WriteString("revision: unknown (not recorded by this build)\n")
	case i.Modified:
		fmt.Fprintf(&b, "revision: %s (modified: built with uncommitted changes)\n", i.Revision)
	default:
		fmt.Fprintf(&b, "revision: %s\n", i.Revision)
	}
	if i.Time != "" {
		fmt.Fprintf(&b, "commit time: %s\n", i.Time)
	}
	fmt.Fprintf(&b, "go: %s %s/%s\n", i.Go, runtime.GOOS, runtime.GOARCH)
	return b.String()
}
