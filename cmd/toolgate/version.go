package main

import (
	"fmt"
	"io"

	"github.com/toolgate/toolgate/internal/buildinfo"
)

// Set at link time by builds that have no VCS metadata to stamp (the
// container image: its build context leaves out .git):
// -ldflags "-X main.buildVersion=v1.2.3 -X main.buildRevision=abc123".
var buildVersion, buildRevision string

func buildInfo() buildinfo.Info {
	return buildinfo.Read(buildinfo.Overrides{Version: buildVersion, Revision: buildRevision})
}

// version is the module version the server reports.
func version() string { return buildInfo().Version }

// versionCmd prints the build: module version, VCS revision (and whether
// the tree was modified), commit time and toolchain.
func versionCmd(args []string, stdout, stderr io.Writer) int {
	fs := newCommand("version", "toolgate version",
		"Prints the module version, the VCS revision it was built from (and whether the tree\nhad uncommitted changes), the commit time and the Go toolchain.")
	if code, done := fs.parse(args, stdout, stderr, 2); done {
		return code
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "toolgate version: unexpected arguments %q\n", fs.Args())
		return 2
	}
	fmt.Fprint(stdout, "toolgate ", buildInfo())
	return 0
}
