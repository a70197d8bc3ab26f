// Package app is toolgate's runtime. From a loaded config it builds the
// engine, the classifier pool, the gRPC server (with its tracing and audit
// log), the metrics listener and the config reloader; Run serves until its
// context ends and then takes it all down in the reverse order. toolgate
// serve is flag parsing plus New and Run; benchmarks and tests start their
// servers the same way, so that what they measure is what runs.
package app

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel"
	"go.uber.org/zap"
	"google.golang.org/grpc"

	"github.com/toolgate/toolgate/approvals"
	"github.com/toolgate/toolgate/classifier"
	"github.com/toolgate/toolgate/config"
	"github.com/toolgate/toolgate/engine"
	"github.com/toolgate/toolgate/server"
	"github.com/toolgate/toolgate/upstream"
)

// Option adjusts an App.
type Option func(*options)

type options struct {
	log       *zap.Logger
	home      *string
	watch     bool
	sighup    bool
	overrides func(*Config) error
	server    []server.Option
}

// WithLogger logs to log (default: nowhere). The caller syncs it.
func WithLogger(log *zap.Logger) Option { return func(o *options) { o.log = log } }

// WithHome sets the agents' home directory, for "~" in rules. The default
// is this user's: toolgate usually runs beside the agents it guards (rules
// meant for any home use //**/ patterns).
func WithHome(dir string) Option { return func(o *options) { o.home = &dir } }

// WithWatch turns reloading on changes of the config's files on or off
// (default on; nothing is watched for the embedded default).
func WithWatch(on bool) Option { return func(o *options) { o.watch = on } }

// WithSIGHUP reloads the config on SIGHUP, whether or not the files
// changed. It takes the process's signal, which is a binary's business
// rather than a library's: off by default.
func WithSIGHUP() Option { return func(o *options) { o.sighup = true } }

// WithOverrides changes every config before it is used: the one given to
// New and each one a reload loads. Command-line flags win over the file
// this way; a change made to the Config directly would not survive a
// reload.
func WithOverrides(f func(*Config) error) Option { return func(o *options) { o.overrides = f } }

// WithServerOptions passes options to the gRPC server (tuning experiments).
func WithServerOptions(opts ...server.Option) Option {
	return func(o *options) { o.server = append(o.server, opts...) }
}

// App is a built toolgate: listening, and serving once Run is called.
type App struct {
	log *zap.Logger
	// approvals is a central server's approval queue; nil without one.
	approvals *approvals.Queue
	// approvalsWeb is the approvers' page's address; nil without one.
	approvalsWeb net.Addr
	cfg          *Config
	rl           *reloader
	watch        *watcher
	srv          *server.Server
	serving      atomic.Pointer[server.Server] // srv, for the metrics listener's /readyz
	lis          net.Listener
	unixLis      *unixListener // nil unless server.unix_socket is set
	hookLis      net.Listener  // nil unless server.hook.listen is set
	hookUnix     *unixListener // nil unless server.hook.unix_socket is set
	metricsAddr  net.Addr
	exposure     string

	// closers undo what New built, in the order built; close runs them
	// in reverse, once.
	closers   []closer
	closeOnce sync.Once
	running   atomic.Bool

	// Set by Run: stopWatch ends the watch loop and waits for it (a
	// bounded wait; it reports whether the loop ended); serveDone is
	// closed when Serve has returned serveErr.
	stopWatch func() bool
	serveDone chan struct{}
	serveErr  error
	// watchHeld is set when the watch loop did not end at shutdown: a
	// reload is held, with the reloader's lock.
	watchHeld bool
	// policyWatch follows the upstream's policies: a local server with
	// no config file; nil otherwise.
	policyWatch *upstream.Watcher
}

// watchStopWait bounds shutdown's wait for the config watch, counted from
// the shutdown's start: a reload builds an engine, which resolves
// toolgate's own files, and one of them (the audit log) may be on a file
// system that stopped answering; the reload, and the reloader's lock it
// holds, then end with the process.
const watchStopWait = time.Second

type closer struct {
	name string
	fn   func()
}

// New builds everything cfg describes and binds the listeners, so that
// the addresses are known and startup errors are New's; it serves nothing
// until Run. On an error, what was built is released. Call Run, or Close
// when Run will not be called.
func New(cfg *Config, opts ...Option) (*App, error) {
	o := options{log: zap.NewNop(), watch: true}
	for _, f := range opts {
		f(&o)
	}
	if o.overrides != nil {
		if err := o.overrides(cfg); err != nil {
			return nil, err
		}
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	home, _ := os.UserHomeDir()
	if o.home != nil {
		home = *o.home
	}
	log := o.log
	a := &App{log: log, cfg: cfg}
	built := false
	defer func() {
		if !built {
			a.close()
		}
	}()
	if cfg.Server.Tracing.OTLPEndpoint != "" {
		// OpenTelemetry reports export failures through a global handler;
		// the default prints to stderr, outside the log.
		otel.SetErrorHandler(otel.ErrorHandlerFunc(func(err error) { log.Warn("tracing", zap.Error(err)) }))
	}

	// Made once: the classifiers a reload builds record into the same
	// classifier metrics.
	metrics, err := newMetrics()
	if err != nil {
		return nil, err
	}
	clsOpts := []classifier.Option{classifier.WithMetrics(metrics.classifier)}
	var srvTracing []server.Option
	if cfg.Server.Tracing.OTLPEndpoint != "" {
		// One provider for the RPCs, the checks and the classifier's calls,
		// flushed after the server (closers run in reverse).
		tp, err := server.NewTracerProvider(cfg.Server.Tracing, cfg.Server.Version)
		if err != nil {
			return nil, err
		}
		a.onClose("tracing", func() {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			if err := server.ShutdownTracing(ctx, tp); err != nil {
				log.Warn("tracing", zap.Error(err))
			}
		})
		clsOpts = append(clsOpts, classifier.WithTracerProvider(tp))
		srvTracing = append(srvTracing, server.WithTracerProvider(tp))
	}
	var fwd engine.Classifier
	var apr engine.Approver
	var recordOpts []server.Option
	origin := policyOrigin{from: "embedded default", kind: originFile}
	if files := cfg.File.Files(); len(files) > 0 {
		origin.from = files[0]
	}
	if cfg.Upstream.Enabled() {
		conn, um, err := a.dialUpstream(cfg, metrics)
		if err != nil {
			return nil, err
		}
		if fwd, err = upstream.NewClassifier(conn, cfg.Upstream.Address, cfg.Upstream.Timeout, cfg.Classifier.SessionBlockLimits, um); err != nil {
			return nil, err
		}
		if recordOpts, err = a.startShipper(cfg, conn, um, metrics); err != nil {
			return nil, err
		}
		host, _ := os.Hostname()
		apr = upstream.NewApprover(conn, cfg.Upstream.Address, host)
		if len(cfg.File.Files()) == 0 {
			// No config file: the policies are the centre's.
			a.policyWatch = upstream.NewWatcher(conn, cfg.Upstream.Address, cfg.Upstream.StateDir,
				func(doc []byte, version, from string) error { return a.rl.applyServed(doc, version, from) }, log, um)
			if err := um.RegisterWatch(metrics.reg); err != nil {
				return nil, err
			}
			if origin, err = a.initialPolicies(cfg, home); err != nil {
				return nil, err
			}
		}
	}
	if !cfg.Upstream.Enabled() {
		if recordOpts, apr, err = a.openApprovals(cfg, log, metrics.reg); err != nil {
			return nil, err
		}
	}
	gen, err := buildGenerationWith(cfg, nil, home, log, fwd, apr, clsOpts...)
	if err != nil {
		return nil, err
	}
	gen.origin = origin
	// Closed after the gRPC server (closers run in reverse): idle workers
	// end; stuck ones end with the process.
	a.onClose("file-system workers", gen.pool.Close)
	if err := metrics.reg.Register(newPoolMetrics(gen.pool)); err != nil {
		return nil, err
	}
	var path string
	if files := cfg.File.Files(); len(files) > 0 {
		path = files[0]
	}
	a.rl = &reloader{path: path, load: a.loader(path, o.overrides), home: home, log: log, cur: gen, clsOpts: clsOpts, reloads: metrics.reloads}
	a.onClose("classifiers", func() {
		// A held reload holds the reloader's lock: close would wait
		// for it for ever.
		if !a.watchHeld {
			a.rl.close()
		}
	})
	if err := metrics.reg.Register(newBreakerStates(a.rl.classifier)); err != nil {
		return nil, err
	}
	for _, b := range cfg.Classifier.Backends {
		if os.Getenv(b.APIKeyEnv) == "" {
			log.Warn("classifier backend has no API key", zap.String("backend", b.Name), zap.String("api_key_env", b.APIKeyEnv))
		}
	}
	if cfg.Classifier.Enabled() && cfg.Classifier.DumpFile != "" {
		log.Warn("dumping every classifier request and answer", zap.String("file", cfg.Classifier.DumpFile))
	}

	// A watch that cannot start is a startup error: the operator would
	// otherwise edit a policy that never applies.
	if a.watch, err = a.rl.watch(o.watch, o.sighup); err != nil {
		return nil, err
	}
	a.onClose("config watch", func() {
		if a.stopWatch != nil {
			a.watchHeld = !a.stopWatch()
		} else {
			a.watch.close()
		}
	})

	var stopMetrics func()
	// The server is built below, after this listener: until then, and
	// from its drain on, /readyz says not ready.
	ready := func() bool { s := a.serving.Load(); return s != nil && s.Serving() }
	if a.metricsAddr, stopMetrics, err = startMetrics(cfg.Server.MetricsListen, metrics.reg, ready, log); err != nil {
		return nil, err
	}
	a.onClose("metrics listener", stopMetrics)

	if a.lis, err = net.Listen("tcp", cfg.Server.Listen); err != nil {
		return nil, err
	}
	// Closed again, harmlessly, when the server had it.
	a.onClose("grpc listener", func() { _ = a.lis.Close() })
	if a.exposure = exposureWarning(a.lis.Addr(), cfg.Server); a.exposure != "" {
		log.Warn(a.exposure, zap.String("addr", a.lis.Addr().String()))
	}

	if cfg.Server.UnixSocket != "" {
		mode, err := cfg.Server.SocketMode()
		if err != nil {
			return nil, err
		}
		if a.unixLis, err = listenUnix("server.unix_socket", cfg.Server.UnixSocket, mode); err != nil {
			return nil, err
		}
		a.onClose("unix socket", func() { _ = a.unixLis.Close() })
	}
	if err := a.listenHook(cfg.Server); err != nil {
		return nil, err
	}

	srvOpts := append(append(append([]server.Option{server.WithMetrics(metrics.server)}, srvTracing...), recordOpts...), o.server...)
	if cfg.Upstream.Enabled() {
		// A local server is no centre: it must not relay its local
		// processes' Classify and WatchPolicies to its own upstream.
		srvOpts = append(srvOpts, server.WithoutUpstreamService())
	}
	if a.srv, err = server.New(cfg.Server, gen.eng, log, srvOpts...); err != nil {
		return nil, err
	}
	a.serving.Store(a.srv)
	if a.approvals != nil {
		a.approvals.SetAudit(a.srv.AuditLog())
	}
	a.rl.svc = a.srv.Service()
	a.rl.reopenAudit = a.srv.ReopenAudit
	a.rl.publish = a.srv.PublishPolicies
	a.rl.inForce(gen)
	a.onClose("grpc server", func() {
		if a.approvals != nil {
			// Checks waiting for an approver would hold the drain
			// for its whole timeout: they end unanswered, and their
			// callers ask again where the questions are still queued.
			a.approvals.Drain()
		}
		// A fresh context: Run's is done, and Shutdown bounds itself.
		a.srv.Shutdown(context.Background())
		if a.serveDone != nil {
			<-a.serveDone
		}
	})
	built = true
	return a, nil
}

// dialUpstream connects a local server to its upstream, with the upstream
// metrics. The connection closes after the server (closers run in
// reverse).
func (a *App) dialUpstream(cfg *Config, metrics *serveMetrics) (*grpc.ClientConn, *upstream.Metrics, error) {
	conn, err := upstream.Dial(cfg.Upstream)
	if err != nil {
		return nil, nil, err
	}
	a.onClose("upstream connection", func() { _ = conn.Close() })
	m, err := upstream.NewMetrics(metrics.reg)
	if err != nil {
		return nil, nil, err
	}
	return conn, m, nil
}

// initialPolicies puts in cfg.File the policies a local server without a
// config file starts with: the centre's set in force when it answers
// within upstream.timeout, else the last good copy in the state
// directory, else the built-in policy (served as the centre would serve
// it: clients do not allow), until the centre answers. Each must
// compile; the watch started by Run then follows the centre.
func (a *App) initialPolicies(cfg *Config, home string) (policyOrigin, error) {
	w, log := a.policyWatch, a.log
	try := func(doc []byte, o policyOrigin) error {
		f, err := config.FromServed(doc, o.from)
		if err == nil {
			next := *cfg
			next.File = f
			_, _, err = next.newEngine(home, nil, nil, nil)
		}
		if err != nil {
			return err
		}
		cfg.File = f
		return nil
	}
	// Fetch verifies the set: its version is the hash of its document,
	// and the one the engine reports (config.FromServed keeps the bytes).
	set, err := w.Fetch(context.Background(), cfg.Upstream.Timeout)
	if err != nil {
		log.Warn("the upstream did not send its policies at start", zap.String("upstream", cfg.Upstream.Address), zap.Error(err))
	} else if err := try(set.GetDocument(), policyOrigin{from: w.From(), kind: originUpstream}); err != nil {
		// Counted and logged as a refusal in the watch is.
		_ = w.Refuse(set, err)
	} else {
		now := time.Now()
		w.SetKnown(set.GetVersion(), now)
		w.Save(set, now)
		return policyOrigin{from: w.From(), kind: originUpstream}, nil
	}
	if dir := cfg.Upstream.StateDir; dir != "" {
		saved, err := upstream.LoadState(dir)
		switch {
		case errors.Is(err, fs.ErrNotExist):
		case err != nil:
			log.Error("the state directory's policy copy is unusable", zap.Error(err))
		default:
			if saved.Upstream != cfg.Upstream.Address {
				// Still used: it is the last set this directory kept, and
				// the built-in policy is no nearer the new centre's.
				log.Warn("the state directory's policy copy came from another upstream; deciding with it until this one answers",
					zap.String("saved_from", saved.Upstream), zap.String("upstream", cfg.Upstream.Address), zap.String("policy_version", saved.Version))
			}
			o := policyOrigin{kind: originStateDir,
				from: fmt.Sprintf("state-dir copy %s (from upstream %s, received %s)", filepath.Join(dir, upstream.StateFile), saved.Upstream, saved.Received.Format(time.RFC3339))}
			if err := try([]byte(saved.Document), o); err != nil {
				log.Error("policy set refused", zap.String("from", o.from), zap.Error(err))
			} else {
				w.SetKnown(saved.Version, saved.Received)
				return o, nil
			}
		}
	}
	def, err := config.Default()
	if err != nil {
		return policyOrigin{}, err
	}
	doc, _, err := def.Served()
	if err != nil {
		return policyOrigin{}, err
	}
	o := policyOrigin{from: "built-in policy (no policy set received from the upstream yet)", kind: originBuiltin}
	if err := try(doc, o); err != nil {
		return policyOrigin{}, fmt.Errorf("the built-in policy does not compile: %w", err)
	}
	log.Warn("deciding with the built-in policy until the upstream sends its own", zap.String("upstream", cfg.Upstream.Address))
	return o, nil
}

// loader is how a reload reads the config: the file again, with the
// overrides on top.
func (a *App) loader(path string, overrides func(*Config) error) func() (*Config, error) {
	return func() (*Config, error) {
		cfg, err := LoadConfig(path)
		if err != nil {
			return nil, err
		}
		if overrides != nil {
			if err := overrides(cfg); err != nil {
				return nil, err
			}
		}
		if err := cfg.Validate(); err != nil {
			return nil, err
		}
		return cfg, nil
	}
}

func (a *App) onClose(name string, fn func()) { a.closers = append(a.closers, closer{name, fn}) }

// close runs the closers in reverse order, once: the gRPC server stops
// before the metrics it records into, and the classifiers close after the
// last check that could call them.
func (a *App) close() {
	a.closeOnce.Do(func() {
		for i := len(a.closers) - 1; i >= 0; i-- {
			a.closers[i].fn()
			a.log.Debug("closed", zap.String("part", a.closers[i].name))
		}
	})
}

// Run serves until ctx ends (or serving fails), then shuts down: health
// goes NOT_SERVING, calls in flight finish within the shutdown timeout, and
// what New built is released in reverse order. It returns serving's error.
func (a *App) Run(ctx context.Context) error {
	if !a.running.CompareAndSwap(false, true) {
		return errors.New("app: Run called twice")
	}
	var backends []string
	for _, b := range a.cfg.Classifier.Backends {
		backends = append(backends, b.Name+"="+b.Model+"@"+redactURL(b.BaseURL))
	}
	if a.watch.files != nil {
		// A change made between the load and the watch sent no event:
		// look once, before serving (nothing happens if the files are as
		// they were read), so that the config served is the one on disk.
		_ = a.rl.reload(ctx, "start", false)
	}
	// Before the watch loop starts, which may swap the generation.
	policies := a.rl.cur.eng.Policies()
	watchCtx, cancelWatch := context.WithCancel(ctx)
	watchDone := make(chan struct{})
	go func() {
		defer close(watchDone)
		if a.policyWatch != nil {
			// Applying a set takes the reloader's lock, as a reload
			// does: shutdown waits for both alike.
			policiesDone := make(chan struct{})
			go func() { a.policyWatch.Run(watchCtx); close(policiesDone) }()
			defer func() { <-policiesDone }()
		}
		a.watch.run(watchCtx)
	}()
	var stopAt time.Time
	a.stopWatch = func() bool {
		cancelWatch()
		if stopAt.IsZero() {
			stopAt = time.Now().Add(watchStopWait)
		}
		timer := time.NewTimer(time.Until(stopAt))
		defer timer.Stop()
		select {
		case <-watchDone:
			return true
		case <-timer.C:
			a.log.Error("a config reload was still running at shutdown (held by a file system that does not answer?); it ends with the process",
				zap.Stringer("waited", watchStopWait))
			return false
		}
	}

	a.log.Info("serving",
		zap.String("addr", a.lis.Addr().String()),
		zap.String("metrics_addr", addrString(a.metricsAddr)),
		zap.String("version", a.cfg.Server.Version),
		zap.Strings("policies", policies),
		zap.Strings("classifier_backends", backends),
		zap.String("upstream", a.cfg.Upstream.Address),
	)
	a.serveDone = make(chan struct{})
	var served sync.Once
	serve := func(l net.Listener) {
		err := a.srv.Serve(l)
		served.Do(func() { a.serveErr = err; close(a.serveDone) })
	}
	go serve(a.lis)
	if a.unixLis != nil {
		a.log.Info("serving on a unix socket", zap.String("path", a.unixLis.path))
		go serve(a.unixLis)
	}
	a.serveHook(func(err error) { served.Do(func() { a.serveErr = err; close(a.serveDone) }) })
	select {
	case <-a.serveDone:
	case <-ctx.Done():
	}
	a.log.Info("shutting down", zap.Stringer("timeout", a.cfg.Server.ShutdownTimeout))
	// No reload while shutting down; the wait for the watch loop counts
	// from here, so that it overlaps the server's drain.
	cancelWatch()
	stopAt = time.Now().Add(watchStopWait)
	a.close()
	if a.serveErr != nil {
		return a.serveErr
	}
	a.log.Info("stopped")
	return nil
}

// Close releases an App whose Run was never called.
func (a *App) Close() {
	if a.running.CompareAndSwap(false, true) {
		a.close()
	}
}

// Addr is the gRPC listener's address.
func (a *App) Addr() net.Addr { return a.lis.Addr() }

// MetricsAddr is the metrics listener's address; nil when metrics are off.
func (a *App) MetricsAddr() net.Addr { return a.metricsAddr }

// ExposureWarning is the warning, already logged, for a server reachable
// from the network without authenticated clients or with tokens sent in
// plaintext; empty when there is none. A binary may repeat it on stderr.
func (a *App) ExposureWarning() string { return a.exposure }

// Classifier is the classifier checks use now; nil without one.
func (a *App) Classifier() *classifier.Classifier { return a.rl.classifier() }

// Approvals returns the approval queue of a central server with an
// approvals section; nil otherwise.
func (a *App) Approvals() *approvals.Queue { return a.approvals }

// ApprovalsWebAddr returns the approvers' page's address; nil without one.
func (a *App) ApprovalsWebAddr() net.Addr { return a.approvalsWeb }

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
