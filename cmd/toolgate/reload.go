package main

import (
	"context"
	"crypto/sha256"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/fsnotify/fsnotify"
	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"

	"github.com/toolgate/toolgate/classifier"
	"github.com/toolgate/toolgate/config"
	"github.com/toolgate/toolgate/engine"
	"github.com/toolgate/toolgate/server"
)

// generation is what one config builds: the engine and the classifier it
// calls. A reload builds a new generation and swaps the engine in.
type generation struct {
	cfg *config.Config
	eng *engine.Engine
	cls *classifier.Classifier // nil without backends
	sum [sha256.Size]byte      // of the files the config was read from
}

// buildGeneration builds the engine for cfg. The classifier of prev is kept
// when its settings and rules are unchanged, so that a policy edit keeps
// the verdict cache, the breakers and the per-session block counters.
func buildGeneration(cfg *config.Config, prev *generation, home string, log *zap.Logger, clsOpts ...classifier.Option) (*generation, error) {
	g := &generation{cfg: cfg}
	policies := cfg.EnginePolicies()
	guard := selfProtection(cfg, log)
	for name, p := range policies {
		p.Permissions.Deny = append(slices.Clip(p.Permissions.Deny), guard...)
		policies[name] = p
	}
	ecfg := engine.Config{Policies: policies, OnClassifierUnavailable: engine.Deny, Home: home, Guarded: guardedFiles(cfg)}
	if cfg.Classifier.OnUnavailable == "ask" {
		ecfg.OnClassifierUnavailable = engine.Ask
	}
	if cfg.Classifier.Enabled() {
		if prev != nil && prev.cls != nil && reflect.DeepEqual(prev.cfg.Classifier, cfg.Classifier) &&
			reflect.DeepEqual(prev.cfg.ClassifierRules(), cfg.ClassifierRules()) {
			g.cls = prev.cls
		} else {
			cls, err := classifier.New(cfg.Classifier, cfg.ClassifierRules(), log, clsOpts...)
			if err != nil {
				return nil, err
			}
			g.cls = cls
		}
		ecfg.Classifier = g.cls
	}
	eng, err := engine.New(ecfg)
	if err != nil {
		if g.cls != nil && (prev == nil || g.cls != prev.cls) {
			_ = g.cls.Close()
		}
		return nil, err
	}
	g.eng = eng
	for _, w := range eng.Warnings() {
		log.Warn("dangerous rule", zap.String("warning", w))
	}
	return g, nil
}

// selfProtection are deny rules that keep the guarded agents away from
// toolgate's own files: no edits of the config and the files it imports
// (hot reload would apply them), the TLS files and the token file, and no
// reads of the secrets among them. The engine's guarded files
// (guardedFiles) also keep shell commands from moving, linking or deleting
// them.
func selfProtection(cfg *config.Config, log *zap.Logger) []string {
	tls := cfg.Server.TLS
	edit := append(cfg.Files(), tls.CertFile, tls.KeyFile, tls.ClientCAFile, cfg.Server.TokenFile)
	read := []string{tls.KeyFile, cfg.Server.TokenFile}
	var rules []string
	add := func(tool string, files []string) {
		for _, f := range files {
			if f == "" {
				continue
			}
			abs, err := filepath.Abs(f)
			if err != nil || strings.ContainsAny(abs, "*?[]{}\\()") {
				// Not expressible as a rule pattern.
				log.Warn("cannot protect a toolgate file from the agents by rule", zap.String("file", f))
				continue
			}
			rules = append(rules, tool+"(/"+abs+")")
			if real, err := filepath.EvalSymlinks(abs); err == nil && real != abs && !strings.ContainsAny(real, "*?[]{}\\()") {
				rules = append(rules, tool+"(/"+real+")")
			}
		}
	}
	add("Edit", edit)
	add("Read", read)
	return rules
}

// guardedFiles are toolgate's own files, which the engine keeps every
// agent from writing, moving, linking or deleting by any means.
func guardedFiles(cfg *config.Config) []string {
	tls := cfg.Server.TLS
	var out []string
	for _, f := range append(cfg.Files(), tls.CertFile, tls.KeyFile, tls.ClientCAFile, cfg.Server.TokenFile) {
		if f == "" {
			continue
		}
		if abs, err := filepath.Abs(f); err == nil {
			out = append(out, abs)
		}
	}
	return out
}

// reloader re-reads the config file on change (fsnotify) or SIGHUP and
// swaps a valid one in; an invalid one is logged and the running one stays.
// Server settings (listen address, limits) need a restart.
type reloader struct {
	path string // the config file; empty for the embedded default
	load func() (*config.Config, error)
	home string
	log  *zap.Logger
	svc  *server.Service
	// clsOpts go to every classifier built (the process's one set of
	// classifier metrics); reloads counts reloads (nil: not counted).
	clsOpts []classifier.Option
	reloads *prometheus.CounterVec
	// settle is the settle window; zero means settleWindow.
	settle time.Duration

	mu      sync.Mutex // serialises reloads
	cur     *generation
	retired []retiree
}

// retiree is a replaced classifier waiting for its last checks.
type retiree struct {
	cls   *classifier.Classifier
	timer *time.Timer
}

// quiet is how long the watched directories must be still before a
// change is looked at: editors and Kubernetes write in several steps.
// maxSettle bounds that wait when they never are.
const (
	quiet     = 100 * time.Millisecond
	maxSettle = time.Second
)

// settleWindow is how long the config files must stay byte for byte
// unchanged before a reload reads them, so that a file written in place,
// slowly, is not loaded half written; maxSettleWait bounds how long a
// reload waits for that before it gives up and keeps the running config.
const (
	settleWindow  = time.Second
	maxSettleWait = 30 * time.Second
)

// reload re-reads the config. force reloads even when the files are
// unchanged (SIGHUP). It waits for the files to settle, and gives up when
// ctx ends.
func (r *reloader) reload(ctx context.Context, trigger string, force bool) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	files := r.files(r.cur.cfg)
	sum, err := fingerprint(files)
	if err == nil && !force && sum == r.cur.sum {
		return nil
	}
	err = r.swap(ctx, trigger, files)
	countReload(r.reloads, err)
	if err != nil {
		r.log.Error("config reload rejected; the running config stays", zap.String("trigger", trigger), zap.String("file", r.path), zap.Error(err))
		return err
	}
	return nil
}

// settled waits until the files have stayed unchanged for the settle
// window and returns their fingerprint.
func (r *reloader) settled(ctx context.Context, files []string) ([sha256.Size]byte, error) {
	window := r.settle
	if window == 0 {
		window = settleWindow
	}
	sum, err := fingerprint(files)
	if err != nil {
		return sum, err
	}
	timer := time.NewTimer(window)
	defer timer.Stop()
	for waited := time.Duration(0); ; waited += window {
		select {
		case <-ctx.Done():
			return sum, fmt.Errorf("waiting for the config files to settle: %w", context.Cause(ctx))
		case <-timer.C:
		}
		next, err := fingerprint(files)
		switch {
		case err != nil:
			return next, err
		case next == sum:
			return sum, nil
		case waited >= maxSettleWait:
			return next, fmt.Errorf("the config files were still changing after %s", maxSettleWait)
		}
		sum = next
		timer.Reset(window)
	}
}

// swap loads the config once its files have settled, and swaps the new
// generation in when the files did not change while they were read.
func (r *reloader) swap(ctx context.Context, trigger string, files []string) error {
	sum, err := r.settled(ctx, files)
	if err != nil {
		return err
	}
	cfg, err := r.load()
	if err != nil {
		return err
	}
	if now := configFiles(r.path, cfg); !slices.Equal(now, files) {
		// The new config imports other files: they must have settled too.
		if _, err := r.settled(ctx, now); err != nil {
			return err
		}
		if cfg, err = r.load(); err != nil {
			return err
		}
		files = configFiles(r.path, cfg)
		if sum, err = fingerprint(files); err != nil {
			return err
		}
	} else if after, err := fingerprint(files); err != nil || after != sum {
		return fmt.Errorf("the config files changed while they were read; the next change reloads (%v)", err)
	}
	if !reflect.DeepEqual(cfg.Server, r.cur.cfg.Server) {
		r.log.Warn("server settings changed; they apply after a restart", zap.String("file", r.path))
		// What runs is the running server's settings: its TLS and token
		// files are the ones to keep from the agents.
		cfg.Server = r.cur.cfg.Server
	}
	g, err := buildGeneration(cfg, r.cur, r.home, r.log, r.clsOpts...)
	if err != nil {
		return err
	}
	g.sum = sum
	r.svc.SetEngine(g.eng)
	old := r.cur
	r.cur = g
	if old.cls != nil && old.cls != g.cls {
		// Checks in flight may still be asking the old classifier; each
		// is bounded by its timeout, after which nothing uses it.
		cls := old.cls
		r.retired = append(r.retired, retiree{cls, time.AfterFunc(old.cfg.Classifier.Timeout+time.Second, func() {
			r.mu.Lock()
			defer r.mu.Unlock()
			_ = cls.Close()
			r.retired = slices.DeleteFunc(r.retired, func(rt retiree) bool { return rt.cls == cls })
		})})
	}
	r.log.Info("config reloaded", zap.String("trigger", trigger), zap.String("file", r.path), zap.Strings("policies", g.eng.Policies()))
	return nil
}

// files are the files a config was read from: the config file and the
// Claude Code settings it imports.
// A file reached through a symlink is watched at its target too, so that
// editing the target reloads.
func (r *reloader) files(cfg *config.Config) []string {
	return configFiles(r.path, cfg)
}

// configFiles is reloader.files for the config file at path.
func configFiles(path string, cfg *config.Config) []string {
	files := cfg.Files()
	if len(files) == 0 {
		files = []string{path}
	}
	for _, f := range files {
		if real, err := filepath.EvalSymlinks(f); err == nil && real != f && !slices.Contains(files, real) {
			files = append(files, real)
		}
	}
	return files
}

// fingerprint hashes the files' contents, so that events that change
// nothing (a touch, a neighbour's write) do not rebuild the engine.
func fingerprint(files []string) ([sha256.Size]byte, error) {
	h := sha256.New()
	for _, f := range files {
		data, err := config.ReadFile(f)
		if err != nil {
			return [sha256.Size]byte{}, err
		}
		fmt.Fprintf(h, "%s\x00%d\x00", f, len(data))
		h.Write(data)
	}
	return [sha256.Size]byte(h.Sum(nil)), nil
}

// watch starts watching the config: SIGHUP always, and file changes when
// fileWatch is set. It watches the directories of the files, not the
// files: editors replace files by renaming, and Kubernetes swaps a
// ConfigMap's directory symlink, neither of which a watch on the old file
// would see. The returned function runs the loop until ctx ends.
func (r *reloader) watch(fileWatch bool) (func(ctx context.Context), error) {
	var w *fsnotify.Watcher
	if r.path != "" && fileWatch {
		var err error
		if w, err = fsnotify.NewWatcher(); err != nil {
			return nil, fmt.Errorf("watching the config (turn it off with --watch=false and reload with SIGHUP): %w", err)
		}
		if err := r.watchDirs(w); err != nil {
			w.Close()
			return nil, fmt.Errorf("watching the config (turn it off with --watch=false and reload with SIGHUP): %w", err)
		}
	}
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	return func(ctx context.Context) {
		defer signal.Stop(hup)
		var events <-chan fsnotify.Event
		var errs <-chan error
		if w != nil {
			defer w.Close()
			events, errs = w.Events, w.Errors
		}
		timer := time.NewTimer(time.Hour)
		timer.Stop()
		defer timer.Stop()
		// settle waits for quiet after a change, but no longer than
		// maxSettle, so that a file written without pause nearby cannot
		// hold a reload off for ever.
		var pending time.Time
		settle := func() {
			if pending.IsZero() {
				pending = time.Now()
			} else if time.Since(pending) > maxSettle {
				return // the timer is due; let it fire
			}
			timer.Reset(quiet)
		}
		for {
			select {
			case <-ctx.Done():
				return
			case <-hup:
				if r.path == "" {
					r.log.Warn("SIGHUP: no config file to reload (running the embedded default)")
					continue
				}
				if r.reload(ctx, "SIGHUP", true) == nil && w != nil {
					r.rewatch(w)
				}
			case ev := <-events:
				if ev.Op != fsnotify.Chmod && r.relevant(ev.Name) {
					settle()
				}
			case err := <-errs:
				// An overflow may have hidden a change: look again.
				r.log.Warn("config watcher", zap.Error(err))
				settle()
			case <-timer.C:
				pending = time.Time{}
				if r.reload(ctx, "file change", false) == nil {
					r.rewatch(w)
				}
			}
		}
	}, nil
}

// relevant reports whether an event in a watched directory may change the
// config: one of its files, or Kubernetes' ConfigMap entries ("..data" and
// its timestamped directories), which are swapped as a whole. Other files
// in the directory (logs, say) are ignored.
func (r *reloader) relevant(name string) bool {
	if strings.HasPrefix(filepath.Base(name), "..") {
		return true
	}
	r.mu.Lock()
	files := r.files(r.cur.cfg)
	r.mu.Unlock()
	return slices.Contains(files, filepath.Clean(name))
}

func (r *reloader) rewatch(w *fsnotify.Watcher) {
	if err := r.watchDirs(w); err != nil {
		r.log.Error("config watcher: a file the config reads will not be watched; reload with SIGHUP after changing it", zap.Error(err))
	}
}

// watchDirs adds the directories of the current config's files; a reload
// may have brought new ones.
func (r *reloader) watchDirs(w *fsnotify.Watcher) error {
	r.mu.Lock()
	files := r.files(r.cur.cfg)
	r.mu.Unlock()
	have := map[string]bool{}
	for _, d := range w.WatchList() {
		have[d] = true
	}
	for _, f := range files {
		d := filepath.Dir(f)
		if have[d] {
			continue
		}
		if err := w.Add(d); err != nil {
			return fmt.Errorf("watching %s: %w", d, err)
		}
		have[d] = true
	}
	return nil
}

// close releases every classifier once the server has stopped.
func (r *reloader) close() {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, rt := range r.retired {
		if rt.timer.Stop() {
			_ = rt.cls.Close()
		}
	}
	if r.cur.cls != nil {
		_ = r.cur.cls.Close()
	}
}
