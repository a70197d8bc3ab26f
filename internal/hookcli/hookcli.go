// Package hookcli is the command line of the hook adapters, shared by
// `toolgate hook` (which asks the server over gRPC) and toolgate-hook
// (which posts to the server's hook listener): the arguments, the checks
// on them and on stdout, the deadline, and failing closed. How the server
// is asked is the caller's Decider. It imports neither gRPC nor protobuf.
package hookcli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/toolgate/toolgate/hook/hookout"
	"github.com/toolgate/toolgate/internal/clientflags"
)

// ExitBlock is the exit code Claude Code, Gemini CLI and Codex all take
// as "block this call, stderr says why"; any other failure code lets the
// call run, so every failure of the adapter exits with it.
const ExitBlock = 2

// Modes are the names --mode takes.
var Modes = []string{"auto", "default", "accept_edits", "plan", "bypass"}

// Params are one run's arguments.
type Params struct {
	Agent   string // a hookout agent name
	Conn    *clientflags.Flags
	Timeout time.Duration
	OnError string // hookout.Deny or hookout.Ask
	Mode    string // "" (the agent's) or one of Modes
	// Unattended: nobody is at the agent's terminal to answer an ask
	// (--unattended, else UnattendedEnv).
	Unattended bool
	Getenv     func(string) string
}

// UnattendedEnv marks every check of a process unattended, for a CI job
// that sets it once rather than editing each agent's hook settings:
// a boolean (1, true, 0, false). An --unattended flag given on the
// command line wins over it.
const UnattendedEnv = "TOOLGATE_UNATTENDED"

// AddUnattended defines --unattended on fs. Resolve the value with
// Unattended once fs is parsed.
func AddUnattended(fs *flag.FlagSet) *bool {
	return fs.Bool("unattended", false, "nobody is at the agent's terminal to answer a question: the policy's unattended.on_ask decides what an ask becomes (deny by default); default: $"+UnattendedEnv)
}

// Unattended is whether the run is unattended: the --unattended flag
// when the command line gives it (--unattended=false turns the
// environment's off), else UnattendedEnv. A value of the variable that is
// not a boolean is an error: a CI job that meant to set it must not run
// as attended unnoticed.
func Unattended(fs *flag.FlagSet, flagValue bool, getenv func(string) string) (bool, error) {
	given := false
	fs.Visit(func(f *flag.Flag) { given = given || f.Name == "unattended" })
	if given || getenv == nil {
		return flagValue, nil
	}
	v := getenv(UnattendedEnv)
	if v == "" {
		return false, nil
	}
	b, err := strconv.ParseBool(v)
	if err != nil {
		return false, fmt.Errorf("$%s %q: want 1 or 0 (true or false)", UnattendedEnv, v)
	}
	return b, nil
}

// Failure is a Decider's error when the server could not decide, or was
// not asked: Why is said to the agent; Call is the call's tool name and
// hook event as far as the input was read (Claude Code's output depends
// on the tool, Codex's on the event).
type Failure struct {
	Call hookout.Call
	Why  string
}

func (f *Failure) Error() string { return f.Why }

// Decider asks the server about the hook input in and returns what to
// print for the agent. It runs under ctx, whose deadline is --timeout; any
// error is answered as a failure (deny, or ask with --on-error ask).
type Decider func(ctx context.Context, p Params, in io.Reader) ([]byte, error)

// Addr is where a hook command finds its server: --addr's environment
// variable, default and description.
type Addr struct{ Env, Default, Usage string }

// GRPCAddr is toolgate hook's: the server's gRPC listener.
var GRPCAddr = Addr{"TOOLGATE_ADDR", "127.0.0.1:50051", "server address"}

// Run is the hook command: prog names it in messages ("toolgate hook");
// addr is where --addr points by default; args are the agent's name and
// the flags. It reads the agent's hook input
// on stdin, asks the server through decide and prints the agent's
// decision format. Any failure (bad input, server unreachable, an error
// answer) fails closed: a deny naming the problem, or ask with --on-error
// ask. It never hangs: reading the input and the transcript, connecting
// and deciding all run under --timeout.
func Run(ctx context.Context, prog string, addr Addr, args []string, stdin io.Reader, stdout, stderr io.Writer, getenv func(string) string, decide Decider) int {
	usage := prog + " " + strings.Join(hookout.AgentNames(), "|") + " [--addr ADDR] [--tls-ca FILE] [--token-file FILE] [--timeout 5s] [--on-error deny|ask] [--mode MODE] [--unattended]"
	if len(args) == 0 {
		fmt.Fprintln(stderr, "usage: "+usage)
		return ExitBlock
	}
	p := Params{Agent: args[0], Getenv: getenv}
	// "hook codex" under toolgate, as its other subcommands name theirs.
	fs := flag.NewFlagSet(strings.TrimPrefix(prog, "toolgate ")+" "+p.Agent, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	p.Conn = clientflags.AddFor(fs, addr.Env, addr.Default, addr.Usage)
	fs.DurationVar(&p.Timeout, "timeout", 5*time.Second, "deadline for reading the input and transcript, connecting and deciding")
	fs.StringVar(&p.OnError, "on-error", "deny", "decision when the server cannot decide: deny or ask")
	fs.StringVar(&p.Mode, "mode", "", "decide in this mode (auto, default, accept_edits, plan, bypass) whatever the agent reports, except that the agent's plan mode stays plan; default: the agent's mode")
	unattended := AddUnattended(fs)
	// Help goes to stderr and exits ExitBlock, never 0: an agent whose
	// hook command is misconfigured as "-h" takes exit 0 with no decision
	// as "go ahead".
	help := func() int {
		fmt.Fprintf(stderr, "Usage: %s\n\nReads an agent's hook input on stdin, asks the toolgate server and prints the\nagent's decision. Any failure blocks the call (exit %d). Help exits %d too, so that\na hook set up with -h blocks rather than allows.\n\nFlags:\n", usage, ExitBlock, ExitBlock)
		fs.SetOutput(stderr)
		fs.PrintDefaults()
		return ExitBlock
	}
	switch args[0] {
	case "-h", "-help", "--help", "help":
		return help()
	}
	if err := fs.Parse(args[1:]); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return help()
		}
		fmt.Fprintf(stderr, "%s: %v\nusage: %s\n", prog, err, usage)
		return ExitBlock
	}
	if p.OnError != hookout.Deny && p.OnError != hookout.Ask {
		fmt.Fprintln(stderr, prog+": --on-error must be deny or ask")
		return ExitBlock
	}
	if p.Mode != "" && !slices.Contains(Modes, p.Mode) {
		fmt.Fprintf(stderr, "%s: --mode %q: want auto, default, accept_edits, plan or bypass\n", prog, p.Mode)
		return ExitBlock
	}
	var err error
	if p.Unattended, err = Unattended(fs, *unattended, getenv); err != nil {
		fmt.Fprintln(stderr, prog+":", err)
		return ExitBlock
	}
	if !hookout.Known(p.Agent) {
		fmt.Fprintf(stderr, "%s: unknown agent %q (known: %s)\n", prog, p.Agent, strings.Join(hookout.AgentNames(), ", "))
		return ExitBlock
	}
	if f, ok := stdout.(*os.File); ok {
		// Without this, a write to a closed pipe kills the process with
		// SIGPIPE, which no agent reads as a block: the write must fail,
		// and the hook exit with ExitBlock.
		signal.Ignore(syscall.SIGPIPE)
		if why := unreadable(f); why != "" {
			fmt.Fprintln(stderr, prog+": blocking the call: the agent cannot read the decision:", why)
			return ExitBlock
		}
	}
	ctx, cancel := context.WithTimeout(ctx, p.Timeout)
	defer cancel()
	out, err := decide(ctx, p, stdin)
	if err != nil {
		f, ok := errors.AsType[*Failure](err)
		if !ok {
			f = &Failure{Why: err.Error()}
		}
		if err := hookout.Write(stdout, p.Agent, f.Call, p.OnError, "toolgate could not decide: "+f.Why); err != nil {
			fmt.Fprintln(stderr, prog+":", err)
			return ExitBlock
		}
		return 0
	}
	if _, err := stdout.Write(out); err != nil {
		fmt.Fprintln(stderr, prog+": could not print the decision, blocking the call:", err)
		return ExitBlock
	}
	return 0
}

// Within runs f until ctx ends. An agent that never closes stdin, or a
// transcript_path that blocks on read, must not stall the call: the read
// is left behind, and the process exits after deciding.
func Within[T any](ctx context.Context, f func() (T, error)) (T, error) {
	type result struct {
		v   T
		err error
	}
	done := make(chan result, 1)
	go func() {
		v, err := f()
		done <- result{v, err}
	}()
	select {
	case r := <-done:
		return r.v, r.err
	case <-ctx.Done():
		var zero T
		return zero, fmt.Errorf("reading the hook input and transcript: %w", context.Cause(ctx))
	}
}

// unreadable says why nothing written to f can reach the agent, or "".
// Go opens /dev/null in place of a standard descriptor that was closed when
// the process started, so a closed stdout takes every write and the hook
// would exit 0, which Gemini CLI and Codex read as "go ahead".
func unreadable(f *os.File) string {
	st, err := f.Stat()
	if err != nil {
		return err.Error()
	}
	null, err := os.Stat(os.DevNull)
	if err == nil && os.SameFile(st, null) {
		return "stdout is " + os.DevNull + " (closed when toolgate started?)"
	}
	return ""
}

// Failure reasons in toolgate's words, by gRPC code name: what went wrong
// when the server at addr gave no decision. The message is added only for
// codes toolgate's server answers with its own text (a request it
// rejects, a token it refuses); for the rest (an unreachable server, a
// deadline) the message is the transport's detail, which changes with its
// versions and is not repeated to the agent.
func ServerFailure(addr, code, msg string) string {
	var what string
	withMessage := false
	switch code {
	case "Unavailable":
		what = "is unreachable"
	case "DeadlineExceeded":
		what = "did not answer within --timeout"
	case "Canceled":
		what = "was not asked: the call was cancelled"
	case "InvalidArgument":
		what, withMessage = "rejected the request", true
	case "Unauthenticated":
		what, withMessage = "refused the credentials", true
	case "PermissionDenied":
		what = "refused the call"
	case "ResourceExhausted":
		what = "refused the request as over a limit"
	case "Unimplemented":
		what = "does not serve toolgate's Check"
	default:
		what = "failed to decide"
	}
	reason := fmt.Sprintf("server %s %s (%s)", addr, what, code)
	if withMessage && msg != "" {
		reason += ": " + msg
	}
	return reason
}
