package main

import (
	"context"
	"crypto/sha256"
	"flag"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"path/filepath"

	"go.opentelemetry.io/otel"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/toolgate/toolgate/classifier"
	"github.com/toolgate/toolgate/config"
	"github.com/toolgate/toolgate/server"
)

func serveCmd(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	tuneGC(os.Getenv)
	return serve(ctx, args, stdout, stderr, nil)
}

// serve runs the server until ctx is done. ready, when not nil, receives
// the bound address once the server accepts connections (tests listen on
// port 0).
func serve(ctx context.Context, args []string, stdout, stderr io.Writer, ready chan<- net.Addr) error {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	fs.SetOutput(stderr)
	listen := fs.String("listen", "", "address to listen on (default from config: 127.0.0.1:50051)")
	metricsListen := fs.String("metrics-listen", "", `address of the Prometheus /metrics listener (default from config: 127.0.0.1:9464; "off" turns it off)`)
	cfgPath := fs.String("config", "", "YAML config file (default: the embedded default policy)")
	level := fs.String("log-level", "info", "log level: debug, info, warn, error")
	noReflection := fs.Bool("no-reflection", false, "turn off gRPC server reflection")
	clsURL := fs.String("classifier-url", "", "OpenAI-compatible base URL of a classifier backend, e.g. https://api.openai.com/v1 (API key from OPENAI_API_KEY)")
	clsModel := fs.String("classifier-model", "", "model of the --classifier-url backend, e.g. gpt-4.1-mini")
	tlsCert := fs.String("tls-cert", "", "PEM certificate: serve TLS (with --tls-key)")
	tlsKey := fs.String("tls-key", "", "PEM private key of --tls-cert")
	tlsClientCA := fs.String("tls-client-ca", "", "PEM CA: require client certificates it signed (mutual TLS)")
	tokenFile := fs.String("token-file", "", `require bearer tokens: a file of "NAME TOKEN" lines (health checks stay open)`)
	auditLog := fs.String("audit-log", "", "write every decision with its redacted tool input to FILE (JSON lines, rotated by size)")
	watch := fs.Bool("watch", true, "reload the config file when it changes (SIGHUP always reloads)")
	dumpFile := fs.String("dump-classifier", "", "append every classifier request and answer to FILE as JSON lines (credentials redacted)")
	if err := fs.Parse(args); err != nil {
		return err
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
	// load reads the config and applies the flags on top; a reload calls
	// it again so that the flags keep winning.
	load := func() (*config.Config, error) {
		cfg, err := loadConfig(*cfgPath)
		if err != nil {
			return nil, err
		}
		if *listen != "" {
			cfg.Server.Listen = *listen
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
		if err := cfg.Server.Validate(); err != nil {
			return nil, err
		}
		if *noReflection {
			cfg.Server.Reflection = false
		}
		if *dumpFile != "" {
			cfg.Classifier.DumpFile = *dumpFile
		}
		if *clsURL != "" {
			// The flags add a backend in front of any the config defines.
			cfg.Classifier.Backends = append([]classifier.BackendConfig{{
				Name: "cli", BaseURL: *clsURL, Model: *clsModel, APIKeyEnv: "OPENAI_API_KEY", Priority: 1 << 30,
			}}, cfg.Classifier.Backends...)
			cfg.Classifier.WithBackendDefaults()
			if err := cfg.Classifier.Validate(); err != nil {
				return nil, err
			}
		}
		return cfg, nil
	}
	cfg, err := load()
	if err != nil {
		return err
	}
	// The fingerprint is taken before the config that runs is read, as a
	// reload does: a change in between shows as a difference later, never
	// as a sum of content that is not running.
	var sum [sha256.Size]byte
	if *cfgPath != "" {
		if sum, err = fingerprint(configFiles(*cfgPath, cfg)); err != nil {
			return err
		}
		if cfg, err = load(); err != nil {
			return err
		}
	}
	log, err := newLogger(*level, stdout)
	if err != nil {
		return err
	}
	defer func() { _ = log.Sync() }()
	// OpenTelemetry reports export failures through a global handler; the
	// default prints to stderr outside the log.
	otel.SetErrorHandler(otel.ErrorHandlerFunc(func(err error) { log.Warn("tracing", zap.Error(err)) }))

	// "~" in rules means this user's home: toolgate usually runs beside the
	// agents it guards. Rules meant for any home use //**/ patterns.
	home, _ := os.UserHomeDir()
	metrics, err := newMetrics()
	if err != nil {
		return err
	}
	clsOpts := []classifier.Option{classifier.WithMetrics(metrics.classifier)}
	gen, err := buildGeneration(cfg, nil, home, log, clsOpts...)
	if err != nil {
		return err
	}
	var backends []string
	for _, b := range cfg.Classifier.Backends {
		backends = append(backends, b.Name+"="+b.Model+"@"+redactURL(b.BaseURL))
		if os.Getenv(b.APIKeyEnv) == "" {
			log.Warn("classifier backend has no API key", zap.String("backend", b.Name), zap.String("api_key_env", b.APIKeyEnv))
		}
	}
	if cfg.Classifier.Enabled() && cfg.Classifier.DumpFile != "" {
		log.Warn("dumping every classifier request and answer", zap.String("file", cfg.Classifier.DumpFile))
	}
	gen.sum = sum
	rl := &reloader{path: *cfgPath, load: load, home: home, log: log, cur: gen, clsOpts: clsOpts, reloads: metrics.reloads}
	defer rl.close()
	eng := gen.eng
	srv, err := server.New(cfg.Server, eng, log, server.WithMetrics(metrics.server))
	if err != nil {
		return err
	}
	rl.svc = srv.Service()
	// A watcher that cannot start is a startup error: the operator would
	// otherwise edit a policy that never applies.
	watchLoop, err := rl.watch(*watch)
	if err != nil {
		return err
	}
	watchCtx, stopWatch := context.WithCancel(ctx)
	watchDone := make(chan struct{})
	go func() { watchLoop(watchCtx); close(watchDone) }()
	defer func() { stopWatch(); <-watchDone }()
	if *cfgPath != "" && *watch {
		// A change made before the watcher started sent no event: look
		// once now (nothing happens if the files are as they were read).
		_ = rl.reload(watchCtx, "start", false)
	}
	metricsAddr, stopMetrics, err := startMetrics(cfg.Server.MetricsListen, metrics.reg, log)
	if err != nil {
		return err
	}
	defer stopMetrics() // runs after the gRPC server has stopped
	lis, err := net.Listen("tcp", cfg.Server.Listen)
	if err != nil {
		return err
	}
	if msg := exposureWarning(lis.Addr(), cfg.Server); msg != "" {
		log.Warn(msg, zap.String("addr", lis.Addr().String()))
		fmt.Fprintln(stderr, "toolgate: WARNING:", msg)
	}
	log.Info("serving",
		zap.String("addr", lis.Addr().String()),
		zap.String("metrics_addr", addrString(metricsAddr)),
		zap.String("version", version()),
		zap.Strings("policies", eng.Policies()),
		zap.Strings("classifier_backends", backends),
	)
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(lis) }()
	if ready != nil {
		ready <- lis.Addr()
	}
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	log.Info("shutting down", zap.Stringer("timeout", cfg.Server.ShutdownTimeout))
	// A fresh context: ctx is already done, and Shutdown bounds itself.
	srv.Shutdown(context.Background())
	if err := <-errc; err != nil {
		return err
	}
	log.Info("stopped")
	return nil
}

func loadConfig(path string) (*config.Config, error) {
	if path == "" {
		return config.Default()
	}
	return config.Load(path)
}

// exposureWarning is the loud warning for a server reachable from the
// network without authenticated clients, or with tokens sent in plaintext.
func exposureWarning(a net.Addr, c server.Config) string {
	switch {
	case isLoopback(a):
		return ""
	case c.TokenFile == "" && c.TLS.ClientCAFile == "":
		return fmt.Sprintf("INSECURE: %s is reachable from the network and authenticates no client; anyone who can reach it may ask for decisions. Set --token-file (with --tls-cert/--tls-key) or --tls-client-ca, or listen on 127.0.0.1", a)
	case !c.TLS.Enabled():
		return fmt.Sprintf("INSECURE: %s takes bearer tokens over plaintext from the network; set --tls-cert/--tls-key", a)
	}
	return ""
}

func isLoopback(a net.Addr) bool {
	tcp, ok := a.(*net.TCPAddr)
	return ok && tcp.IP.IsLoopback()
}

// newLogger logs JSON when w is not a terminal (production, log
// collectors) and readable console lines when it is.
func newLogger(level string, w io.Writer) (*zap.Logger, error) {
	lvl, err := zapcore.ParseLevel(level)
	if err != nil {
		return nil, fmt.Errorf("--log-level: %w", err)
	}
	encCfg := zap.NewProductionEncoderConfig()
	encCfg.TimeKey = "ts"
	encCfg.EncodeTime = zapcore.ISO8601TimeEncoder
	encCfg.EncodeDuration = zapcore.MillisDurationEncoder
	var enc zapcore.Encoder
	if isTerminal(w) {
		encCfg.EncodeLevel = zapcore.CapitalColorLevelEncoder
		enc = zapcore.NewConsoleEncoder(encCfg)
	} else {
		enc = zapcore.NewJSONEncoder(encCfg)
	}
	core := zapcore.NewCore(enc, zapcore.Lock(zapcore.AddSync(w)), lvl)
	return zap.New(core), nil
}

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

// redactURL leaves out what a base URL may carry besides an address: user
// info (a password, or a token written as the user name) and the query.
func redactURL(s string) string {
	u, err := url.Parse(s)
	if err != nil {
		return "(unparsable URL)"
	}
	u.User, u.RawQuery, u.ForceQuery, u.Fragment = nil, "", false, ""
	return u.String()
}
