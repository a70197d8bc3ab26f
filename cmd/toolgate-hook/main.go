// Command toolgate-hook puts toolgate in front of an agent that speaks
// hooks, as `toolgate hook` does, with the same arguments and the same
// answers, in a process that starts in a fraction of the time: it links
// no gRPC, protobuf, model SDK or metrics library, and posts the hook
// input to the server's hook listener (server.hook), which runs the
// adapters and decides. --addr is that listener: host:port or unix:PATH
// (env TOOLGATE_HOOK_ADDR; default 127.0.0.1:50052).
//
//	toolgate-hook claude-code|gemini-cli|codex [--addr ADDR] [--tls-ca FILE] [--token-file FILE] [--timeout 5s] [--on-error deny|ask] [--mode MODE]
package main

import (
	"context"
	"os"

	"github.com/toolgate/toolgate/internal/hookcli"
	"github.com/toolgate/toolgate/internal/hookhttp"
)

func main() {
	os.Exit(hookcli.Run(context.Background(), "toolgate-hook", hookhttp.DefaultAddr, os.Args[1:], os.Stdin, os.Stdout, os.Stderr, os.Getenv, hookhttp.Decide))
}
