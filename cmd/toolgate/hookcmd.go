package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	pb "github.com/toolgate/toolgate/gen/toolgate/v1"
	"github.com/toolgate/toolgate/hook"
)

// hookCmd puts toolgate in front of an agent that speaks hooks: it reads
// the agent's hook input on stdin, asks the server, and prints the agent's
// decision format. Any failure (bad input, server unreachable, an error
// answer) fails closed: a deny naming the problem, or ask with --on-error
// ask. It never hangs: reading the input and the transcript, connecting and
// deciding all run under --timeout, and the transcript is read from its
// bounded tail.
func hookCmd(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprintln(stderr, "usage: toolgate hook "+strings.Join(hook.AgentNames(), "|")+" [--addr ADDR] [--tls-ca FILE] [--token-file FILE] [--timeout 5s] [--on-error deny|ask] [--mode MODE]")
		return exitHookBlock
	}
	agent := args[0]
	fs := flag.NewFlagSet("hook "+agent, flag.ContinueOnError)
	fs.SetOutput(stderr)
	cf := addClientFlags(fs)
	timeout := fs.Duration("timeout", 5*time.Second, "deadline for reading the input and transcript, connecting and deciding")
	onError := fs.String("on-error", "deny", "decision when the server cannot decide: deny or ask")
	modeName := fs.String("mode", "", "decide in this mode (auto, default, accept_edits, plan, bypass) whatever the agent reports, except that the agent's plan mode stays plan; default: the agent's mode")
	if err := fs.Parse(args[1:]); err != nil {
		// -h too: an agent takes exit 0 with no decision as "go ahead".
		return exitHookBlock
	}
	if *onError != "deny" && *onError != "ask" {
		fmt.Fprintln(stderr, "toolgate hook: --on-error must be deny or ask")
		return exitHookBlock
	}
	forced, ok := modeNames[*modeName]
	if *modeName != "" && !ok {
		fmt.Fprintf(stderr, "toolgate hook: --mode %q: want auto, default, accept_edits, plan or bypass\n", *modeName)
		return exitHookBlock
	}
	ag, ok := hook.AgentByName(agent)
	if !ok {
		fmt.Fprintf(stderr, "toolgate hook: unknown agent %q (known: %s)\n", agent, strings.Join(hook.AgentNames(), ", "))
		return exitHookBlock
	}
	if f, ok := stdout.(*os.File); ok {
		// Without this, a write to a closed pipe kills the process with
		// SIGPIPE, which no agent reads as a block: the write must fail,
		// and the hook exit with exitHookBlock.
		signal.Ignore(syscall.SIGPIPE)
		if why := unreadable(f); why != "" {
			fmt.Fprintln(stderr, "toolgate hook: blocking the call: the agent cannot read the decision:", why)
			return exitHookBlock
		}
	}
	// tool is the call's tool name once its input is built; until then it
	// is unknown (""), and Claude Code's output depends on it.
	var tool string
	output := func(decision, reason string) error {
		return ag.Output(stdout, tool, decision, reason)
	}
	fail := func(why string) int {
		if err := output(*onError, "toolgate could not decide: "+why); err != nil {
			fmt.Fprintln(stderr, "toolgate hook:", err)
			return exitHookBlock
		}
		return 0
	}
	ctx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()
	req, err := buildWithin(ctx, func(r io.Reader) (*pb.CheckRequest, error) {
		return ag.Request(r, hook.Options{Getenv: os.Getenv})
	}, stdin)
	if err != nil {
		return fail(err.Error())
	}
	tool = req.GetTool().GetName()
	if *modeName != "" && req.GetMode() != pb.PermissionMode_PERMISSION_MODE_PLAN {
		// The user's choice for an agent without the mode (a Claude Code
		// with no auto mode); plan mode can only narrow, so it stays.
		req.Mode = forced
	}
	conn, err := cf.dial()
	if err != nil {
		return fail(err.Error())
	}
	defer conn.Close()
	// Fail fast when the server is down: an agent must not stall on every call.
	resp, err := pb.NewPermissionServiceClient(conn).Check(ctx, req)
	if err != nil {
		return fail(rpcFailure(cf.addr, err))
	}
	if err := output(hook.DecisionOf(resp), resp.GetReason()); err != nil {
		fmt.Fprintln(stderr, "toolgate hook: could not print the decision, blocking the call:", err)
		return exitHookBlock
	}
	return 0
}

// rpcFailure says in toolgate's words why a Check got no answer: the
// address, what went wrong, and the status code. The message is added only
// for codes toolgate's server answers with its own text (a request it
// rejects, a token it refuses); for the rest (an unreachable server, a
// deadline) the message is grpc-go's transport detail, which changes with
// its versions and is not repeated to the agent.
func rpcFailure(addr string, err error) string {
	st := status.Convert(err)
	var what string
	withMessage := false
	switch st.Code() {
	case codes.Unavailable:
		what = "is unreachable"
	case codes.DeadlineExceeded:
		what = "did not answer within --timeout"
	case codes.Canceled:
		what = "was not asked: the call was cancelled"
	case codes.InvalidArgument:
		what, withMessage = "rejected the request", true
	case codes.Unauthenticated:
		what, withMessage = "refused the credentials", true
	case codes.PermissionDenied:
		what = "refused the call"
	case codes.ResourceExhausted:
		what = "refused the request as over a limit"
	case codes.Unimplemented:
		what = "does not serve toolgate's Check"
	default:
		what = "failed to decide"
	}
	reason := fmt.Sprintf("server %s %s (%s)", addr, what, st.Code())
	if withMessage && st.Message() != "" {
		reason += ": " + st.Message()
	}
	return reason
}

// buildWithin runs build until ctx ends. An agent that never closes stdin,
// or a transcript_path that blocks on read, must not stall the call: the
// read is left behind, and the process exits after deciding.
func buildWithin(ctx context.Context, build func(io.Reader) (*pb.CheckRequest, error), r io.Reader) (*pb.CheckRequest, error) {
	type built struct {
		req *pb.CheckRequest
		err error
	}
	done := make(chan built, 1)
	go func() {
		req, err := build(r)
		done <- built{req, err}
	}()
	select {
	case b := <-done:
		return b.req, b.err
	case <-ctx.Done():
		return nil, fmt.Errorf("reading the hook input and transcript: %w", context.Cause(ctx))
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

// exitHookBlock is the exit code Claude Code, Gemini CLI and Codex all
// take as "block this call, stderr says why"; any other failure code lets
// the call run, so every failure of the adapter exits with it.
const exitHookBlock = 2
