package main

import (
	"fmt"
	"io"
	"strings"

	"github.com/toolgate/toolgate/app"
)

// validateCmd checks config files without starting a server: syntax,
// server and classifier settings, and every policy's rules.
func validateCmd(args []string, stdout, stderr io.Writer) int {
	fs := newCommand("validate", "toolgate validate FILE...",
		"Checks config files without starting a server: the YAML, the server, classifier and\nupstream sections, and every policy's rules. Prints \"FILE: ok\" or the errors, and\nwarnings (built-in rules removed, rules naming a tool toolgate does not know).\nExits 1 when a file has errors.")
	if code, done := fs.parse(args, stdout, stderr, 2); done {
		return code
	}
	if fs.NArg() == 0 {
		fmt.Fprintln(stderr, "toolgate validate: give one or more config files")
		return 2
	}
	code := 0
	for _, path := range fs.Args() {
		if path == "" {
			// LoadConfig would take it for the embedded default.
			fmt.Fprintln(stderr, "toolgate validate: empty file name")
			code = 1
			continue
		}
		cfg, err := app.LoadConfig(path)
		if err != nil {
			fmt.Fprintln(stderr, err)
			code = 1
			continue
		}
		_, warnings, err := cfg.NewEngine("", nil)
		if err != nil {
			fmt.Fprintln(stderr, err)
			code = 1
			continue
		}
		for _, w := range warnings {
			fmt.Fprintf(stdout, "%s: warning: %s\n", path, w)
		}
		fmt.Fprintf(stdout, "%s: ok (policies: %s)\n", path, strings.Join(cfg.File.PolicyNames(), ", "))
	}
	return code
}
