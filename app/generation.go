package app

import (
	"reflect"

	"go.uber.org/zap"

	"github.com/toolgate/toolgate/classifier"
	"github.com/toolgate/toolgate/config"
	"github.com/toolgate/toolgate/engine"
)

// generation is what one config builds: the engine and the classifier it
// calls. A reload builds a new generation and swaps the engine in.
type generation struct {
	cfg *Config
	eng *engine.Engine
	cls *classifier.Classifier // nil without backends
	// origin is where the policies came from.
	origin policyOrigin
	// fwd is a local server's classifier, its upstream (nil without
	// one): made once, with the per-session block counters, and kept by
	// every later generation.
	fwd engine.Classifier
	// apr takes unattended questions to approvers: the centre's queue, or
	// a local server's upstream (nil: none). Made once, kept likewise.
	apr engine.Approver
	sum config.Sum // of the files cfg was read from, as read
	// pool runs the checks' file-system work. It is made with the first
	// generation and kept by every later one: its workers are the most
	// threads stalled file systems can hold, however often the config
	// reloads.
	pool *engine.Pool
}

// buildGeneration builds the engine for cfg. The classifier of prev is kept
// when its settings and rules are unchanged, so that a policy edit keeps
// the verdict cache, the breakers and the per-session block counters.
func buildGeneration(cfg *Config, prev *generation, home string, log *zap.Logger, clsOpts ...classifier.Option) (*generation, error) {
	var fwd engine.Classifier
	var apr engine.Approver
	if prev != nil {
		fwd, apr = prev.fwd, prev.apr
	}
	return buildGenerationWith(cfg, prev, home, log, fwd, apr, clsOpts...)
}

// buildGenerationWith is buildGeneration with fwd, a local server's
// upstream, as its classifier (cfg then has no backends: Validate), and
// apr as its approver.
func buildGenerationWith(cfg *Config, prev *generation, home string, log *zap.Logger, fwd engine.Classifier, apr engine.Approver, clsOpts ...classifier.Option) (*generation, error) {
	g := &generation{cfg: cfg, sum: cfg.File.Sum(), fwd: fwd, apr: apr}
	if cfg.Classifier.Enabled() {
		rules := cfg.ClassifierRules()
		if prev != nil && prev.cls != nil && reflect.DeepEqual(prev.cfg.Classifier, cfg.Classifier) &&
			reflect.DeepEqual(prev.cfg.ClassifierRules(), rules) {
			g.cls = prev.cls
		} else {
			cls, err := classifier.New(cfg.Classifier, rules, log, clsOpts...)
			if err != nil {
				return nil, err
			}
			g.cls = cls
		}
	}
	if prev != nil {
		g.pool = prev.pool
		if n := cfg.File.FS().Workers; n != g.pool.Stats().Size {
			log.Warn("engine.fs_workers changed; the new number applies when the server restarts", zap.Int("fs_workers", g.pool.Stats().Size), zap.Int("configured", n))
		}
	} else {
		g.pool = engine.NewPool(cfg.File.FS().Workers)
	}
	var cls engine.Classifier
	switch {
	case g.cls != nil:
		// Only a real one: a nil *Classifier in the interface is not nil.
		cls = g.cls
	case fwd != nil:
		cls = fwd
	}
	eng, warnings, err := cfg.newEngine(home, cls, apr, g.pool)
	if err != nil {
		if g.cls != nil && (prev == nil || g.cls != prev.cls) {
			_ = g.cls.Close()
		}
		return nil, err
	}
	g.eng = eng
	for _, w := range warnings {
		log.Warn("policy warning", zap.String("warning", w))
	}
	return g, nil
}

// policyOrigin is where a generation's policies came from: in words (a
// file's path, an upstream's address, the state directory's copy) and as
// a kind.
type policyOrigin struct {
	from string
	kind string
}

// Kinds of policy origins.
const (
	originFile     = "file"
	originUpstream = "upstream"
	originStateDir = "state_dir"
	originBuiltin  = "built_in"
)
