// Command toolgate is the permission server for AI coding agents in auto
// mode, and its command-line client.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
)

const usage = `toolgate decides whether an AI coding agent's tool call may run.

Usage:
  toolgate serve   [--listen ADDR] [--unix-socket PATH] [--config FILE] [--log-level LEVEL] [--no-reflection]
                   [--classifier-url URL --classifier-model NAME]
  toolgate check   --tool NAME [--input JSON] [--cwd DIR] [--addr ADDR] [--mode MODE] ...
  toolgate explain --tool NAME [--input JSON] [--cwd DIR] [--mode MODE] [--config FILE] [--json] ...
  toolgate eval    [--config FILE] [--json] [CORPUS.jsonl ...]
  toolgate validate FILE...
  toolgate config  defaults | show [--config FILE]
  toolgate hook    claude-code|gemini-cli|codex [--addr ADDR] [--timeout 5s] [--on-error deny|ask]
  toolgate approvals list | show ID | allow ID [--as-rule] | deny ID | rules | delete-rule ID [--addr ADDR] [--token-file FILE]
  toolgate version

Run "toolgate COMMAND -h" for the flags of a command.
`

// stdin is where hook input is read from; tests replace it.
var stdin io.Reader = os.Stdin

// Exit codes of toolgate check.
const (
	exitAllow = 0
	exitDeny  = 1
	exitAsk   = 2
	exitError = 3
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// run dispatches a subcommand and returns the process exit code.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return 2
	}
	var err error
	switch args[0] {
	case "serve":
		err = serveCmd(ctx, args[1:], stdout, stderr)
	case "check":
		return checkCmd(ctx, args[1:], stdout, stderr)
	case "explain":
		return explainCmd(ctx, args[1:], stdout, stderr)
	case "eval":
		return evalCmd(ctx, args[1:], stdout, stderr)
	case "validate":
		return validateCmd(args[1:], stdout, stderr)
	case "config":
		return configCmd(args[1:], stdout, stderr)
	case "hook":
		return hookCmd(ctx, args[1:], stdin, stdout, stderr)
	case "approvals":
		return approvalsCmd(ctx, args[1:], stdout, stderr)
	case "version":
		return versionCmd(args[1:], stdout, stderr)
	case "help", "-h", "--help":
		fmt.Fprint(stdout, usage)
		return 0
	default:
		fmt.Fprintf(stderr, "toolgate: unknown command %q\n\n%s", args[0], usage)
		return 2
	}
	if es, ok := errors.AsType[exitStatus](err); ok {
		return int(es)
	}
	if err != nil {
		fmt.Fprintln(stderr, "toolgate:", err)
		return 1
	}
	return 0
}
