package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"

	"github.com/toolgate/toolgate/app"
	"github.com/toolgate/toolgate/classifier"
)

func serveCmd(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	app.TuneGC(os.Getenv)
	return serve(ctx, args, stdout, stderr, nil)
}

// serve runs the server until ctx is done. ready, when not nil, receives
// the bound address once the server listens (tests listen on port 0).
func serve(ctx context.Context, args []string, stdout, stderr io.Writer, ready chan<- net.Addr) error {
	fs := newCommand("serve", "toolgate serve [--listen ADDR] [--unix-socket PATH] [--config FILE] [flags]",
		"Runs the permission server: gRPC on --listen (and --unix-socket), Prometheus metrics,\noptionally the hook listener, reloading the config when it changes.")
	listen := fs.String("listen", "", "address to listen on (default from config: 127.0.0.1:50051)")
	unixSocket := fs.String("unix-socket", "", "also listen on a Unix socket at this absolute path (clients use --addr unix:PATH); mode from server.unix_socket_mode (0600)")
	unattested := fs.String("unattested-files", "", "what a check whose client sends no attestation counts as: local_peers (from loopback or the Unix socket, with a working directory this server sees, it shares this server's disk) or unseen (never); default from config: local_peers")
	hookListen := fs.String("hook-listen", "", "also serve agents' hooks over HTTP at this address (server.hook.listen; loopback unless --token-file): Claude Code's HTTP hooks and toolgate-hook post here")
	hookTimeout := fs.Duration("hook-timeout", 0, "bound one hook request on the hook listener (server.hook.timeout, 30s by default): longer than an unattended call's wait for an approver")
	hookUnixSocket := fs.String("hook-unix-socket", "", "also serve agents' hooks over HTTP on a Unix socket at this absolute path (server.hook.unix_socket)")
	metricsListen := fs.String("metrics-listen", "", `address of the Prometheus /metrics listener (default from config: 127.0.0.1:9464; "off" turns it off)`)
	cfgPath := fs.String("config", "", "YAML config file (default: the embedded default policy)")
	level := fs.String("log-level", "info", "log level: debug, info, warn, error")
	noReflection := fs.Bool("no-reflection", false, "turn off gRPC server reflection")
	clsURL := fs.String("classifier-url", "", "base URL of a classifier backend, e.g. https://api.openai.com/v1 (API key from OPENAI_API_KEY, or ANTHROPIC_API_KEY with --classifier-api anthropic)")
	clsModel := fs.String("classifier-model", "", "model of the --classifier-url backend, e.g. gpt-4.1-mini")
	clsAPI := fs.String("classifier-api", "", "API of the --classifier-url backend: chat, responses or anthropic (default: classifier.api)")
	tlsCert := fs.String("tls-cert", "", "PEM certificate: serve TLS (with --tls-key)")
	tlsKey := fs.String("tls-key", "", "PEM private key of --tls-cert")
	tlsClientCA := fs.String("tls-client-ca", "", "PEM CA: require client certificates it signed (mutual TLS)")
	tokenFile := fs.String("token-file", "", `require bearer tokens: a file of "NAME TOKEN" lines (health checks stay open)`)
	auditLog := fs.String("audit-log", "", "write every decision with its redacted tool input to FILE (JSON lines, rotated by size)")
	watch := fs.Bool("watch", true, "reload the config file when it changes (SIGHUP always reloads)")
	dumpFile := fs.String("dump-classifier", "", "append every classifier request and answer to FILE as JSON lines (credentials redacted)")
	up := addUpstreamFlags(fs.FlagSet)
	if code, done := fs.parse(args, stdout, stderr, 2); done {
		return exitStatus(code)
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("serve: unexpected arguments %q", fs.Args())
	}
	if (*clsURL == "") != (*clsModel == "") {
		return fmt.Errorf("serve: --classifier-url and --classifier-model go together")
	}
	if *cfgPath != "" {
		abs, err := filepath.Abs(*cfgPath)
		if err != nil {
			return err
		}
		*cfgPath = abs
	}
	// The flags win over the file, at start and on every reload.
	flags := func(cfg *app.Config) error {
		if *listen != "" {
			cfg.Server.Listen = *listen
		}
		if *unixSocket != "" {
			cfg.Server.UnixSocket = *unixSocket
		}
		if *unattested != "" {
			cfg.Server.UnattestedFiles = *unattested
		}
		if *hookListen != "" {
			cfg.Server.Hook.Listen = *hookListen
		}
		if *hookTimeout != 0 {
			cfg.Server.Hook.Timeout = *hookTimeout
		}
		if *hookUnixSocket != "" {
			cfg.Server.Hook.UnixSocket = *hookUnixSocket
		}
		switch *metricsListen {
		case "":
		case "off":
			cfg.Server.MetricsListen = ""
		default:
			cfg.Server.MetricsListen = *metricsListen
		}
		if *tlsCert != "" || *tlsKey != "" {
			cfg.Server.TLS.CertFile, cfg.Server.TLS.KeyFile = *tlsCert, *tlsKey
		}
		if *tlsClientCA != "" {
			cfg.Server.TLS.ClientCAFile = *tlsClientCA
		}
		if *tokenFile != "" {
			cfg.Server.TokenFile = *tokenFile
		}
		if *auditLog != "" {
			cfg.Server.Audit.File = *auditLog
		}
		cfg.Server.Version = version()
		if *noReflection {
			cfg.Server.Reflection = false
		}
		if *dumpFile != "" {
			cfg.Classifier.DumpFile = *dumpFile
		}
		up.apply(&cfg.Upstream)
		if *clsURL != "" {
			// The flags add a backend in front of any the config defines.
			cfg.Classifier.Backends = append([]classifier.BackendConfig{{
				Name: "cli", BaseURL: *clsURL, Model: *clsModel, API: *clsAPI, Priority: 1 << 30,
			}}, cfg.Classifier.Backends...)
		}
		return nil
	}
	cfg, err := app.LoadConfig(*cfgPath)
	if err != nil {
		return err
	}
	log, err := app.NewLogger(*level, stdout)
	if err != nil {
		return fmt.Errorf("--log-level: %w", err)
	}
	defer func() { _ = log.Sync() }()
	a, err := app.New(cfg, app.WithLogger(log), app.WithOverrides(flags), app.WithWatch(*watch), app.WithSIGHUP())
	if err != nil {
		return err
	}
	if msg := a.ExposureWarning(); msg != "" {
		fmt.Fprintln(stderr, "toolgate: WARNING:", msg)
	}
	if ready != nil {
		ready <- a.Addr()
	}
	return a.Run(ctx)
}
