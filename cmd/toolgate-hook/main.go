// Command toolgate-hook puts toolgate in front of an agent that speaks
// hooks, as `toolgate hook` does, with the same arguments and the same
// answers, in a process that starts in a fraction of the time: it links
// no gRPC, protobuf, model SDK or metrics library, and posts the hook
// input to the server's hook listener (server.hook), which runs the
// adapters and decides. --addr is that listener: host:port or unix:PATH
// (env TOOLGATE_HOOK_ADDR; default 127.0.0.1:50052).
//
//	toolgate-hook claude-code|gemini-cli|codex [--addr ADDR] [--tls-ca FILE] [--token-file FILE] [--timeout 5s] [--on-error deny|ask] [--mode MODE] [--unattended]
//	toolgate-hook --version
package main

import (
	"context"
	"fmt"
	"io"
	"os"

	"github.com/toolgate/toolgate/internal/buildinfo"
	"github.com/toolgate/toolgate/internal/hookcli"
	"github.com/toolgate/toolgate/internal/hookhttp"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

func run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) == 1 && args[0] == "--version" {
		// On stderr, exiting 2 as every answer that is no decision does:
		// an agent takes exit 0 with no decision as "go ahead", and a hook
		// set up as `toolgate-hook --version` by mistake must block.
		fmt.Fprint(stderr, "toolgate-hook ", buildinfo.Read(buildinfo.Overrides{Version: buildVersion, Revision: buildRevision}))
		return 2
	}
	return hookcli.Run(context.Background(), "toolgate-hook", hookhttp.DefaultAddr, args, stdin, stdout, stderr, os.Getenv, hookhttp.Decide)
}

// Set at link time by builds without VCS metadata (see toolgate's).
var buildVersion, buildRevision string
