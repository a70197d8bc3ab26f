package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/toolgate/toolgate/app"
	"github.com/toolgate/toolgate/approvals"
	"github.com/toolgate/toolgate/config"
	"github.com/toolgate/toolgate/upstream"
)

// configCmd prints the embedded default configuration or the effective
// one. API keys are never in a config (a backend names the variable that
// holds its key); values taken from the environment are printed as written
// (${NAME}) and credentials in base URLs are masked (config.MarshalShow).
func configCmd(args []string, stdout, stderr io.Writer) int {
	const usage = "toolgate config defaults | toolgate config show [--config FILE | --state-dir DIR]"
	if len(args) == 0 {
		fmt.Fprintln(stderr, "usage: "+usage)
		return 2
	}
	switch args[0] {
	case "-h", "-help", "--help", "help":
		fmt.Fprintf(stdout, "Usage: %s\n\n%s\n", usage, configAbout)
		for _, sub := range []*command{configDefaultsCommand(), configShowCommand(new(string), new(string))} {
			fmt.Fprintf(stdout, "\n")
			sub.help(stdout)
		}
		return 0
	case "defaults":
		fs := configDefaultsCommand()
		if code, done := fs.parse(args[1:], stdout, stderr, 2); done {
			return code
		}
		if fs.NArg() > 0 {
			fmt.Fprintf(stderr, "toolgate config defaults: unexpected arguments %q\n", fs.Args())
			return 2
		}
		_, _ = stdout.Write(config.DefaultYAML())
		return 0
	case "show":
		var path, stateDir string
		fs := configShowCommand(&path, &stateDir)
		if code, done := fs.parse(args[1:], stdout, stderr, 2); done {
			return code
		}
		if fs.NArg() > 0 {
			fmt.Fprintf(stderr, "toolgate config show: unexpected arguments %q\n", fs.Args())
			return 2
		}
		if stateDir != "" && path != "" {
			fmt.Fprintln(stderr, "toolgate config show: --config and --state-dir are two sources; give one")
			return 2
		}
		file, from, err := showSource(path, stateDir)
		if err != nil {
			fmt.Fprintln(stderr, "toolgate config show:", err)
			return 1
		}
		_, version, err := file.Served()
		if err != nil {
			fmt.Fprintln(stderr, "toolgate config show:", err)
			return 1
		}
		out, err := file.MarshalShow()
		if err != nil {
			fmt.Fprintln(stderr, "toolgate config show:", err)
			return 1
		}
		fmt.Fprintf(stdout, "# policy version %s, from %s\n", version, from)
		_, _ = stdout.Write(out)
		if stateDir == "" {
			showLearnedRules(path, stdout, stderr)
		}
		return 0
	}
	fmt.Fprintf(stderr, "toolgate config: unknown subcommand %q\nusage: %s\n", args[0], usage)
	return 2
}

const configAbout = "Prints toolgate's configuration: the embedded default, or the configuration in force."

func configDefaultsCommand() *command {
	return newCommand("config defaults", "toolgate config defaults",
		"Prints the embedded default configuration: what a config file's policies extend.")
}

func configShowCommand(path, stateDir *string) *command {
	fs := newCommand("config show", "toolgate config show [--config FILE | --state-dir DIR]",
		"Prints the configuration in force: every section with its defaults filled in, each\npolicy with the rules of all its layers (built-in, the file, imported settings).\nValues taken from the environment are shown as written, credentials masked.")
	fs.StringVar(path, "config", "", "config file (default: the embedded default)")
	fs.StringVar(stateDir, "state-dir", "", "show the policy set a local toolgate keeps in this state directory (serve --state-dir), received from its upstream")
	return fs
}

// showLearnedRules lists, as comments after the config, the rules learned
// from approvers' answers that are in force in the approvals store of a
// config with an approvals section: they add to the policies shown. A
// store that cannot be read is said on stderr; a SQLite file that does
// not exist yet holds none and is not created.
func showLearnedRules(path string, stdout, stderr io.Writer) {
	cfg, err := app.LoadConfig(path)
	if err != nil || cfg.File == nil || !cfg.File.Approvals.Written() {
		return
	}
	ac := cfg.Approvals
	where := "PostgreSQL ($" + ac.PostgresURLEnv + ")"
	if ac.Store == "sqlite" {
		where = "SQLite " + ac.SQLitePath
		if _, err := os.Stat(ac.SQLitePath); errors.Is(err, fs.ErrNotExist) {
			fmt.Fprintf(stdout, "# learned rules (approvals store %s): none, the store does not exist yet\n", where)
			return
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	st, err := ac.Open(ctx, nil)
	if err != nil {
		fmt.Fprintf(stderr, "toolgate config show: learned rules not listed: %v\n", err)
		return
	}
	defer st.Close()
	rules, err := approvals.New(st, approvals.Options{}).Rules(ctx)
	if err != nil {
		fmt.Fprintf(stderr, "toolgate config show: learned rules not listed: %v\n", err)
		return
	}
	fmt.Fprintf(stdout, "# learned rules in force (approvals store %s): %d\n", where, len(rules))
	for _, r := range rules {
		// One line each, as comments: the text is the agent's call, and
		// a newline in it must not end the comment.
		fmt.Fprintf(stdout, "#   allow %s in project %s, policy %s, taught by %s, until %s (%s, from %s)\n",
			strconv.Quote(approvals.ShownRule(r)), strconv.Quote(r.Project), r.Policy, strconv.Quote(r.CreatedBy), r.ExpiresAt.UTC().Format(time.RFC3339), r.ID, r.PendingID)
	}
}

// showSource loads what config show prints, and says where it came from:
// the config file (or the embedded default), or a local toolgate's state
// directory. What is shown must be a config that runs: its rules compile.
func showSource(path, stateDir string) (*config.Config, string, error) {
	if stateDir != "" {
		abs, err := filepath.Abs(stateDir)
		if err != nil {
			return nil, "", err
		}
		saved, err := upstream.LoadState(abs)
		if err != nil {
			return nil, "", err
		}
		from := fmt.Sprintf("upstream %s, received %s (state-dir copy %s)", saved.Upstream, saved.Received.Format(time.RFC3339), filepath.Join(abs, upstream.StateFile))
		f, err := config.FromServed([]byte(saved.Document), from)
		if err != nil {
			return nil, "", err
		}
		if _, _, err := f.NewEngine(config.Runtime{}); err != nil {
			return nil, "", err
		}
		return f, from, nil
	}
	cfg, err := app.LoadConfig(path)
	if err != nil {
		return nil, "", err
	}
	if _, _, err := cfg.NewEngine("", nil); err != nil {
		return nil, "", err
	}
	from := "the embedded default"
	if files := cfg.File.Files(); len(files) > 0 {
		from = files[0]
	}
	return cfg.File, from, nil
}
