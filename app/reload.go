package app

import (
	"context"
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
	"github.com/toolgate/toolgate/server"
)

// reloader re-reads the config file on change (fsnotify) or SIGHUP and
// swaps a valid one in; an invalid one is logged and the running one stays.
// Server settings (listen address, limits) need a restart.
type reloader struct {
	path string // the config file; empty for the embedded default
	load func() (*Config, error)
	home string
	log  *zap.Logger
	svc  *server.Service
	// reopenAudit reopens the audit file on SIGHUP (nil: none), as
	// daemons reopen their logs after a rotation.
	reopenAudit func() error
	// clsOpts go to every classifier built (the process's one set of
	// classifier metrics); reloads counts reloads (nil: not counted).
	clsOpts []classifier.Option
	reloads *prometheus.CounterVec
	// publish serves the set in force to local servers (nil: none).
	publish func(version string, doc []byte)
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
	files := r.cur.cfg.File.Files()
	sum, err := config.SumFiles(files)
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
// window and returns their sum.
func (r *reloader) settled(ctx context.Context, files []string) (config.Sum, error) {
	window := r.settle
	if window == 0 {
		window = settleWindow
	}
	sum, err := config.SumFiles(files)
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
		next, err := config.SumFiles(files)
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
// generation in when the files did not change while they were read: Load
// sums what it read, so no further read is needed to tell.
func (r *reloader) swap(ctx context.Context, trigger string, files []string) error {
	sum, err := r.settled(ctx, files)
	if err != nil {
		return err
	}
	cfg, err := r.load()
	if err != nil {
		return err
	}
	if now := cfg.File.Files(); !slices.Equal(now, files) {
		// The new config imports other files: they must have settled too.
		if _, err := r.settled(ctx, now); err != nil {
			return err
		}
		if cfg, err = r.load(); err != nil {
			return err
		}
	} else if cfg.File.Sum() != sum {
		return fmt.Errorf("the config files changed while they were read; the next change reloads")
	}
	if !reflect.DeepEqual(cfg.Server, r.cur.cfg.Server) {
		r.log.Warn("server settings changed; they apply after a restart", zap.String("file", r.path))
		// What runs is the running server's settings: its TLS and token
		// files are the ones to keep from the agents.
		cfg.Server = r.cur.cfg.Server
	}
	if !reflect.DeepEqual(cfg.Approvals, r.cur.cfg.Approvals) {
		r.log.Warn("approvals settings changed; they apply after a restart", zap.String("file", r.path))
		cfg.Approvals = r.cur.cfg.Approvals
	}
	if !reflect.DeepEqual(cfg.Upstream, r.cur.cfg.Upstream) {
		r.log.Warn("upstream settings changed; they apply after a restart", zap.String("file", r.path))
		cfg.Upstream = r.cur.cfg.Upstream
		if err := cfg.validateRoles(); err != nil {
			return err
		}
	}
	g, err := buildGeneration(cfg, r.cur, r.home, r.log, r.clsOpts...)
	if err != nil {
		return err
	}
	if files := cfg.File.Files(); len(files) > 0 {
		g.origin = policyOrigin{from: files[0], kind: originFile}
	} else {
		g.origin = r.cur.origin
	}
	r.install(g)
	r.log.Info("config reloaded", zap.String("trigger", trigger), zap.String("file", r.path), zap.Strings("policies", g.eng.Policies()))
	return nil
}

// applyServed puts in force a policy set a local server received from its
// upstream (doc, its served form), from says where from. A set that does
// not compile is refused, and the running one stays.
func (r *reloader) applyServed(doc []byte, version, from string) error {
	f, err := config.FromServed(doc, from)
	if err != nil {
		countReload(r.reloads, err)
		return err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	cfg := *r.cur.cfg
	cfg.File = f
	g, err := buildGeneration(&cfg, r.cur, r.home, r.log, r.clsOpts...)
	countReload(r.reloads, err)
	if err != nil {
		return err
	}
	if got := g.eng.Version(); got != version {
		// The engine's version is the hash of the bytes received
		// (config.FromServed keeps them), which the watch verified; a
		// difference is a bug, not a policy to run.
		return fmt.Errorf("the policy set compiled to version %s, not the %s it was sent as", got, version)
	}
	g.origin = policyOrigin{from: from, kind: originUpstream}
	r.install(g)
	return nil
}

// install swaps g in (r.mu held): checks from now on use its engine; the
// classifier it replaced is closed once its last checks are done.
func (r *reloader) install(g *generation) {
	r.svc.SetEngine(g.eng)
	old := r.cur
	r.cur = g
	r.inForce(g)
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
}

// inForce says which policy set is in force now, in the log, and makes
// it the set this server serves to local servers whose upstream it is.
func (r *reloader) inForce(g *generation) {
	version := g.eng.Version()
	r.log.Info("policy set in force", zap.String("policy_version", version), zap.String("from", g.origin.from), zap.Strings("policies", g.eng.Policies()))
	if r.publish != nil {
		doc, v, err := g.cfg.File.Served()
		if err == nil {
			// What a local server would refuse (too big, too many rules)
			// is not served: they keep the set they have.
			_, err = config.FromServed(doc, "the served form")
		}
		if err != nil {
			r.log.Error("the policy set cannot be served to local servers; they keep the one they have", zap.Error(err))
			return
		}
		r.publish(v, doc)
	}
}

// watched are the files a change of which may change the config: those it
// was read from and, for each reached through a symlink, its target, so
// that editing the target reloads.
func (r *reloader) watched() []string {
	r.mu.Lock()
	files := r.cur.cfg.File.Files()
	r.mu.Unlock()
	for _, f := range files {
		if real, err := filepath.EvalSymlinks(f); err == nil && real != f && !slices.Contains(files, real) {
			files = append(files, real)
		}
	}
	return files
}

// watcher is the running config watch: SIGHUP when hup is set, and file
// changes when files is not nil.
type watcher struct {
	r     *reloader
	files *fsnotify.Watcher
	hup   chan os.Signal
}

// watch starts watching the config: SIGHUP when sighup is set, and file
// changes when fileWatch is set and there is a file. It watches the
// directories of the files, not the files: editors replace files by
// renaming, and Kubernetes swaps a ConfigMap's directory symlink, neither
// of which a watch on the old file would see. Run the loop with run, or
// release it with close.
func (r *reloader) watch(fileWatch, sighup bool) (*watcher, error) {
	w := &watcher{r: r}
	if r.path != "" && fileWatch {
		fw, err := fsnotify.NewWatcher()
		if err != nil {
			return nil, fmt.Errorf("watching the config (turn it off with --watch=false and reload with SIGHUP): %w", err)
		}
		if err := r.watchDirs(fw); err != nil {
			fw.Close()
			return nil, fmt.Errorf("watching the config (turn it off with --watch=false and reload with SIGHUP): %w", err)
		}
		w.files = fw
	}
	if sighup {
		w.hup = make(chan os.Signal, 1)
		signal.Notify(w.hup, syscall.SIGHUP)
	}
	return w, nil
}

// close releases what watch took, for a loop that never ran.
func (w *watcher) close() {
	if w.hup != nil {
		signal.Stop(w.hup)
	}
	if w.files != nil {
		w.files.Close()
	}
}

// run reloads on the watched events until ctx ends, then releases the
// watch.
func (w *watcher) run(ctx context.Context) {
	defer w.close()
	r := w.r
	var events <-chan fsnotify.Event
	var errs <-chan error
	if w.files != nil {
		events, errs = w.files.Events, w.files.Errors
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
		case <-w.hup:
			if r.reopenAudit != nil {
				if err := r.reopenAudit(); err != nil {
					r.log.Error("SIGHUP: reopening the audit file failed; the next record tries again", zap.Error(err))
				} else {
					r.log.Info("SIGHUP: audit file reopened")
				}
			}
			r.reopenDump()
			if r.path == "" {
				r.log.Warn("SIGHUP: no config file to reload (running the embedded default)")
				continue
			}
			if r.reload(ctx, "SIGHUP", true) == nil && w.files != nil {
				r.rewatch(w.files)
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
				r.rewatch(w.files)
			}
		}
	}
}

// reopenDump reopens the running classifier's dump file, if any (SIGHUP),
// as the audit file is: an admin's rotation is followed at once.
func (r *reloader) reopenDump() {
	r.mu.Lock()
	cls, dump := r.cur.cls, r.cur.cfg.Classifier.DumpFile
	r.mu.Unlock()
	if cls == nil || dump == "" {
		return
	}
	if err := cls.ReopenDump(); err != nil {
		r.log.Error("SIGHUP: reopening the classifier dump file failed; the next record tries again", zap.Error(err))
	} else {
		r.log.Info("SIGHUP: classifier dump file reopened")
	}
}

// relevant reports whether an event in a watched directory may change the
// config: one of its files, or Kubernetes' ConfigMap entries ("..data" and
// its timestamped directories), which are swapped as a whole. Other files
// in the directory (logs, say) are ignored.
func (r *reloader) relevant(name string) bool {
	if strings.HasPrefix(filepath.Base(name), "..") {
		return true
	}
	return slices.Contains(r.watched(), filepath.Clean(name))
}

func (r *reloader) rewatch(w *fsnotify.Watcher) {
	if err := r.watchDirs(w); err != nil {
		r.log.Error("config watcher: a file the config reads will not be watched; reload with SIGHUP after changing it", zap.Error(err))
	}
}

// watchDirs adds the directories of the current config's files; a reload
// may have brought new ones.
func (r *reloader) watchDirs(w *fsnotify.Watcher) error {
	have := map[string]bool{}
	for _, d := range w.WatchList() {
		have[d] = true
	}
	for _, f := range r.watched() {
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

// classifier returns the running classifier; nil without one.
func (r *reloader) classifier() *classifier.Classifier {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.cur.cls
}
