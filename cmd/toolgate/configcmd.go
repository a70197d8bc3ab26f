package main

import (
	"flag"
	"fmt"
	"io"

	"github.com/toolgate/toolgate/app"
	"github.com/toolgate/toolgate/config"
)

// configCmd prints the embedded default configuration or the effective
// one. API keys are never in a config (a backend names the variable that
// holds its key); values taken from the environment are printed as written
// (${NAME}) and credentials in base URLs are masked (config.MarshalShow).
func configCmd(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprintln(stderr, "usage: toolgate config defaults | toolgate config show [--config FILE]")
		return 2
	}
	switch args[0] {
	case "defaults":
		_, _ = stdout.Write(config.DefaultYAML())
		return 0
	case "show":
		fs := flag.NewFlagSet("config show", flag.ContinueOnError)
		fs.SetOutput(stderr)
		path := fs.String("config", "", "config file (default: the embedded default)")
		if err := fs.Parse(args[1:]); err != nil {
			if err == flag.ErrHelp {
				return 0
			}
			return 2
		}
		cfg, err := app.LoadConfig(*path)
		if err != nil {
			fmt.Fprintln(stderr, "toolgate config show:", err)
			return 1
		}
		// What is shown must be a config that runs: its rules compile.
		if _, _, err := cfg.NewEngine("", nil); err != nil {
			fmt.Fprintln(stderr, "toolgate config show:", err)
			return 1
		}
		out, err := cfg.File.MarshalShow()
		if err != nil {
			fmt.Fprintln(stderr, "toolgate config show:", err)
			return 1
		}
		_, _ = stdout.Write(out)
		return 0
	}
	fmt.Fprintf(stderr, "toolgate config: unknown subcommand %q\n", args[0])
	return 2
}
