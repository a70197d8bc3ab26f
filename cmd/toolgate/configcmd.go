package main

import (
	"flag"
	"fmt"
	"io"
	"net/url"

	"go.yaml.in/yaml/v3"

	"github.com/toolgate/toolgate/config"
)

// configCmd prints the embedded default configuration or the effective
// one. Configs hold no secrets by design (API keys are named by their
// environment variable); base URLs are printed with any password masked.
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
		cfg, err := loadConfig(*path)
		if err != nil {
			fmt.Fprintln(stderr, "toolgate config show:", err)
			return 1
		}
		for i := range cfg.Classifier.Backends {
			cfg.Classifier.Backends[i].BaseURL = maskURL(cfg.Classifier.Backends[i].BaseURL)
		}
		enc := yaml.NewEncoder(stdout)
		enc.SetIndent(2)
		if err := enc.Encode(cfg); err != nil {
			fmt.Fprintln(stderr, "toolgate config show:", err)
			return 1
		}
		return 0
	}
	fmt.Fprintf(stderr, "toolgate config: unknown subcommand %q\n", args[0])
	return 2
}

// maskURL hides a password in a URL's user info.
func maskURL(s string) string {
	u, err := url.Parse(s)
	if err != nil || u.User == nil {
		return s
	}
	if _, has := u.User.Password(); has {
		u.User = url.UserPassword(u.User.Username(), "xxxxx")
	}
	return u.String()
}
