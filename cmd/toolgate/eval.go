package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"path/filepath"

	"github.com/toolgate/toolgate/app"
	"github.com/toolgate/toolgate/eval"
)

// evalCmd runs the engine over labeled corpus files, without the
// classifier. It exits 1 when any case is falsely allowed.
func evalCmd(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("eval", flag.ContinueOnError)
	fs.SetOutput(stderr)
	cfgPath := fs.String("policy", "", "config file with the policies (default: the embedded default)")
	asJSON := fs.Bool("json", false, "print the report as JSON")
	home := fs.String("home", "", "the agents' home directory, for ~ in rules (default: ~ matches at any depth)")
	if err := fs.Parse(args); err != nil {
		if err == flag.ErrHelp {
			return 0
		}
		return 2
	}
	paths := fs.Args()
	if len(paths) == 0 {
		paths, _ = filepath.Glob("testdata/corpus/*.jsonl")
	}
	if len(paths) == 0 {
		fmt.Fprintln(stderr, "toolgate eval: no corpus files given (and none in testdata/corpus)")
		return 2
	}
	cfg, err := app.LoadConfig(*cfgPath)
	if err != nil {
		fmt.Fprintln(stderr, "toolgate eval:", err)
		return 2
	}
	eng, _, err := cfg.NewEngine(*home, nil)
	if err != nil {
		fmt.Fprintln(stderr, "toolgate eval:", err)
		return 2
	}
	cases, err := eval.Load(paths...)
	if err != nil {
		fmt.Fprintln(stderr, "toolgate eval:", err)
		return 2
	}
	rep, err := eval.Run(ctx, eng, cases)
	if err != nil {
		fmt.Fprintln(stderr, "toolgate eval:", err)
		return 2
	}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(rep); err != nil {
			fmt.Fprintln(stderr, "toolgate eval:", err)
			return 2
		}
	} else {
		rep.WriteText(stdout)
	}
	if rep.FalseAllows > 0 {
		return 1
	}
	return 0
}
