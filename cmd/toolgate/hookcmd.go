package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"time"

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
		fmt.Fprintln(stderr, "usage: toolgate hook claude-code|gemini-cli|codex [--addr ADDR] [--tls-ca FILE] [--token-file FILE] [--timeout 5s] [--on-error deny|ask] [--mode MODE]")
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
	var (
		build  func(io.Reader) (*pb.CheckRequest, error)
		output func(io.Writer, string, string) error
		// tool is the call's tool name once its input is built.
		tool string
	)
	switch agent {
	case "claude-code":
		build = func(r io.Reader) (*pb.CheckRequest, error) {
			in, err := hook.ParseClaude(r)
			if err != nil {
				return nil, err
			}
			return hook.ClaudeRequest(in, hook.Options{})
		}
		// The tool decides how a decision is written; before the input is
		// read, it is unknown ("").
		output = func(w io.Writer, decision, reason string) error {
			return hook.ClaudeToolOutput(w, tool, decision, reason)
		}
	case "gemini-cli":
		build = func(r io.Reader) (*pb.CheckRequest, error) {
			in, err := hook.ParseGemini(r)
			if err != nil {
				return nil, err
			}
			return hook.GeminiRequest(in, hook.Options{})
		}
		output = hook.GeminiOutput
	case "codex":
		build = func(r io.Reader) (*pb.CheckRequest, error) {
			in, err := hook.ParseCodex(r)
			if err != nil {
				return nil, err
			}
			return hook.CodexRequest(in, hook.Options{})
		}
		output = hook.CodexOutput
	default:
		fmt.Fprintf(stderr, "toolgate hook: unknown agent %q (known: claude-code, gemini-cli, codex)\n", agent)
		return exitHookBlock
	}
	fail := func(why string) int {
		if err := output(stdout, *onError, "toolgate could not decide: "+why); err != nil {
			fmt.Fprintln(stderr, "toolgate hook:", err)
			return exitHookBlock
		}
		return 0
	}
	ctx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()
	req, err := buildWithin(ctx, build, stdin)
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
		return fail(fmt.Sprintf("server %s: %v", cf.addr, err))
	}
	if err := output(stdout, hook.DecisionOf(resp), resp.GetReason()); err != nil {
		fmt.Fprintln(stderr, "toolgate hook: could not print the decision, blocking the call:", err)
		return exitHookBlock
	}
	return 0
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

// exitHookBlock is the exit code Claude Code, Gemini CLI and Codex all
// take as "block this call, stderr says why"; any other failure code lets
// the call run, so every failure of the adapter exits with it.
const exitHookBlock = 2
