package main

import (
	"bytes"
	"context"
	"io"
	"os"

	"google.golang.org/grpc/status"

	pb "github.com/toolgate/toolgate/gen/toolgate/v1"
	"github.com/toolgate/toolgate/hook"
	"github.com/toolgate/toolgate/hook/hookout"
	"github.com/toolgate/toolgate/internal/attest"
	"github.com/toolgate/toolgate/internal/hookcli"
)

// hookCmd puts toolgate in front of an agent that speaks hooks: it reads
// the agent's hook input on stdin, asks the server over gRPC, and prints
// the agent's decision format (hookcli: the arguments and failing closed
// are toolgate-hook's too).
func hookCmd(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	return hookcli.Run(ctx, "toolgate hook", hookcli.GRPCAddr, args, stdin, stdout, stderr, os.Getenv, grpcDecide)
}

// grpcDecide builds the check from the hook input (the transcript's
// bounded tail included), attests the working directory and asks the
// server's Check.
func grpcDecide(ctx context.Context, p hookcli.Params, in io.Reader) ([]byte, error) {
	ag, _ := hook.AgentByName(p.Agent) // hookcli has checked the name
	// The input as read, for the hook event, which decides how Codex's
	// answer is written; read only once Request has returned.
	var raw bytes.Buffer
	req, err := hookcli.Within(ctx, func() (*pb.CheckRequest, error) {
		return ag.Request(io.TeeReader(in, &raw), hook.Options{Getenv: p.Getenv})
	})
	if err != nil {
		return nil, err
	}
	call := hookout.Peek(raw.Bytes())
	call.Tool = req.GetTool().GetName()
	if p.Mode != "" && req.GetMode() != pb.PermissionMode_PERMISSION_MODE_PLAN {
		// The user's choice for an agent without the mode (a Claude Code
		// with no auto mode); plan mode can only narrow, so it stays.
		req.Mode = modeNames[p.Mode]
	}
	req.Attestation = attestation(req.GetWorkingDirectory())
	req.Unattended = p.Unattended
	conn, err := dial(p.Conn)
	if err != nil {
		return nil, &hookcli.Failure{Call: call, Why: err.Error()}
	}
	defer conn.Close()
	// Fail fast when the server is down: an agent must not stall on every call.
	resp, err := pb.NewPermissionServiceClient(conn).Check(ctx, req)
	if err != nil {
		return nil, &hookcli.Failure{Call: call, Why: rpcFailure(p.Conn.Addr, err)}
	}
	var out bytes.Buffer
	if err := ag.Output(&out, call, hook.DecisionOf(resp), resp.GetReason()); err != nil {
		return nil, &hookcli.Failure{Call: call, Why: err.Error()}
	}
	return out.Bytes(), nil
}

// attestation is where this client stands for the working directory dir:
// nil when it cannot say (no directory, one it cannot stat).
func attestation(dir string) *pb.Attestation {
	a, ok := attest.For(dir)
	if !ok {
		return nil
	}
	return &pb.Attestation{BootId: a.BootID, WorkingDirectoryDevice: a.Device, WorkingDirectoryInode: a.Inode,
		MountNamespace: a.MountNS, RootDevice: a.RootDevice, RootInode: a.RootInode}
}

// rpcFailure says in toolgate's words why a Check got no answer
// (hookcli.ServerFailure).
func rpcFailure(addr string, err error) string {
	st := status.Convert(err)
	return hookcli.ServerFailure(addr, st.Code().String(), st.Message())
}

// exitHookBlock is hookcli.ExitBlock.
const exitHookBlock = hookcli.ExitBlock
