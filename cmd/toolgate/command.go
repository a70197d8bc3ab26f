package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
)

// command is a subcommand's flag set and its help, the one way toolgate's
// subcommands parse their flags: -h (and --help) prints the usage line,
// what the command does and every flag on stdout and exits 0; a bad flag
// prints the error and the usage line on stderr and exits with the
// command's error code.
type command struct {
	*flag.FlagSet
	// usage is the synopsis after "Usage: ", e.g. "toolgate validate FILE...".
	usage string
	// about says what the command does, in a few lines.
	about string
	// aliases are deprecated flag names, each with the name that replaces it.
	aliases map[string]string
}

// newCommand makes the flag set of subcommand name ("validate", "config show").
func newCommand(name, usage, about string) *command {
	c := &command{FlagSet: flag.NewFlagSet(name, flag.ContinueOnError), usage: usage, about: about}
	// Parse prints what it has to say itself, where it belongs.
	c.SetOutput(io.Discard)
	c.Usage = func() {}
	return c
}

// deprecated makes old a deprecated spelling of flag name: it still works,
// with a warning on stderr, and -h lists it as deprecated.
func (c *command) deprecated(old, name string) {
	f := c.Lookup(name)
	if f == nil {
		panic("deprecated alias for unknown flag " + name)
	}
	c.Var(f.Value, old, "deprecated: use --"+name)
	if c.aliases == nil {
		c.aliases = map[string]string{}
	}
	c.aliases[old] = name
}

// help writes the full help: usage, description, flags.
func (c *command) help(w io.Writer) {
	fmt.Fprintf(w, "Usage: %s\n", c.usage)
	if c.about != "" {
		fmt.Fprintf(w, "\n%s\n", strings.TrimRight(c.about, "\n"))
	}
	n := 0
	c.VisitAll(func(*flag.Flag) { n++ })
	if n == 0 {
		fmt.Fprintln(w, "\nFlags: none")
		return
	}
	fmt.Fprintln(w, "\nFlags:")
	c.SetOutput(w)
	c.PrintDefaults()
	c.SetOutput(io.Discard)
}

// parse parses args. When the command should stop (help was asked for, or
// the flags are wrong) it returns done and the exit code: 0 after -h,
// errCode after a bad flag.
func (c *command) parse(args []string, stdout, stderr io.Writer, errCode int) (code int, done bool) {
	err := c.Parse(args)
	if errors.Is(err, flag.ErrHelp) {
		c.help(stdout)
		return 0, true
	}
	if err != nil {
		fmt.Fprintf(stderr, "toolgate %s: %v\nUsage: %s\nRun \"toolgate %s -h\" for its flags.\n", c.Name(), err, c.usage, c.Name())
		return errCode, true
	}
	c.Visit(func(f *flag.Flag) {
		if name, ok := c.aliases[f.Name]; ok {
			fmt.Fprintf(stderr, "toolgate %s: --%s is deprecated, use --%s\n", c.Name(), f.Name, name)
		}
	})
	return 0, false
}

// exitStatus ends a command that returns an error with this exit code,
// its message already printed (0 after -h).
type exitStatus int

func (e exitStatus) Error() string { return fmt.Sprintf("exit status %d", int(e)) }
