package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"go.uber.org/zap"

	"github.com/toolgate/toolgate/app"
	"github.com/toolgate/toolgate/classifier"
	"github.com/toolgate/toolgate/engine"
	"github.com/toolgate/toolgate/eval"
)

// evalCmd runs the engine over labeled corpus files: by default without
// the classifier, or with --classifier the whole pipeline, the configured
// (or given) model deciding what the local stages leave. It exits 1 when
// any case is falsely allowed.
func evalCmd(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newCommand("eval", "toolgate eval [--config FILE] [--json] [--home DIR] [flags] [CORPUS.jsonl ...]",
		"Runs the engine over labeled corpus files (default: testdata/corpus) and reports how\nits decisions compare with the labels. Exits 1 when any case is falsely allowed.")
	cfgPath := fs.String("config", "", "config file with the policies and classifier backends (default: the embedded default)")
	// --policy names a policy in check; here it meant the config file.
	fs.deprecated("policy", "config")
	asJSON := fs.Bool("json", false, "print the report as JSON")
	home := fs.String("home", "", "the agents' home directory, for ~ in rules (default: ~ matches at any depth)")
	withCls := fs.Bool("classifier", false, "run the whole pipeline: the local stages, then the classifier backends for what they leave (default corpus: testdata/corpus/classifier)")
	clsURL := fs.String("classifier-url", "", "a backend's base URL to classify with, ahead of the configured backends (implies --classifier; key from OPENAI_API_KEY, or ANTHROPIC_API_KEY with --classifier-api anthropic)")
	clsModel := fs.String("classifier-model", "gpt-4.1-mini", "the model at --classifier-url")
	clsAPI := fs.String("classifier-api", "", "the API of --classifier-url: chat, responses or anthropic (default: classifier.api)")
	concurrency := fs.Int("concurrency", 4, "cases decided at once")
	budget := fs.Int("budget", 0, "send at most this many cases to the classifier; later ones are skipped (0: no limit)")
	priceIn := fs.Float64("price-in", 0, "USD per million input tokens, for the cost line (default: each backend's price in the config)")
	priceOut := fs.Float64("price-out", 0, "USD per million output tokens, for the cost line (default: each backend's price in the config)")
	priceCached := fs.Float64("price-cached-in", 0, "USD per million input tokens read from the provider's prompt cache (default: as --price-in, or each backend's price)")
	explainID := fs.String("explain", "", "explain the case with this id instead of running the corpus: every stage, the facts, the rules (as toolgate explain); the local stages only. Exits 0 when the decision meets the case's label, 1 when not")
	compare := fs.String("compare", "", "A,B: run the pipeline once with each of two backends (configured backend names, or models at --classifier-url) and print them side by side")
	if code, done := fs.parse(args, stdout, stderr, 2); done {
		return code
	}
	fail := func(err error) int {
		fmt.Fprintln(stderr, "toolgate eval:", err)
		return 2
	}
	pipeline := *withCls || *clsURL != "" || *compare != ""
	switch {
	case *concurrency < 1 || *budget < 0:
		return fail(errors.New("--concurrency must be at least 1; --budget may not be negative"))
	case !(*priceIn >= 0 && *priceOut >= 0 && *priceCached >= 0) || math.IsInf(*priceIn, 0) || math.IsInf(*priceOut, 0) || math.IsInf(*priceCached, 0):
		return fail(errors.New("--price-in, --price-out and --price-cached-in are USD per million tokens: finite, 0 or more"))
	}
	paths := fs.Args()
	if len(paths) == 0 {
		pattern := "testdata/corpus/*.jsonl"
		if pipeline {
			pattern = "testdata/corpus/classifier/*.jsonl"
		}
		paths, _ = filepath.Glob(pattern)
		if len(paths) == 0 {
			return fail(fmt.Errorf("no corpus files given (and none in %s)", filepath.Dir(pattern)))
		}
	}
	cfg, err := app.LoadConfig(*cfgPath)
	if err != nil {
		return fail(err)
	}
	cases, err := eval.Load(paths...)
	if err != nil {
		return fail(err)
	}
	if *explainID != "" {
		if pipeline {
			return fail(errors.New("--explain explains the local stages: drop --classifier, --classifier-url and --compare"))
		}
		return explainCase(ctx, cfg, *home, cases, *explainID, *asJSON, stdout, stderr)
	}
	priced := false
	fs.Visit(func(f *flag.Flag) {
		priced = priced || f.Name == "price-in" || f.Name == "price-out" || f.Name == "price-cached-in"
	})
	opts := eval.Options{Concurrency: *concurrency, Budget: *budget, Progress: progress(stderr)}
	if !pipeline {
		opts.Concurrency = 1
		rep, err := runEval(ctx, cfg, nil, *home, cases, opts)
		if err != nil {
			return fail(err)
		}
		return report(rep, *asJSON, stdout, stderr)
	}
	if *clsURL != "" {
		// As serve's flags: a backend ahead of the configured ones.
		cfg.Classifier.Backends = append([]classifier.BackendConfig{{
			Name: "cli", BaseURL: *clsURL, Model: *clsModel, API: *clsAPI, Priority: 1 << 30,
		}}, cfg.Classifier.Backends...)
	}
	// Each backend's configured price, unless the flags give one for all.
	withPrices := func(cls classifier.Config) eval.Options {
		o := opts
		o.Prices = map[string]eval.Price{}
		for _, b := range cls.Backends {
			switch {
			case priced:
				o.Prices[b.Name] = eval.Price{Input: *priceIn, Output: *priceOut, CachedInput: *priceCached}
			case b.Price != (classifier.Price{}):
				o.Prices[b.Name] = eval.Price{Input: b.Price.Input, Output: b.Price.Output, CachedInput: b.Price.CachedInput}
			}
		}
		return o
	}
	if *compare == "" {
		rep, err := runEval(ctx, cfg, &cfg.Classifier, *home, cases, withPrices(cfg.Classifier))
		if err != nil {
			return fail(err)
		}
		return report(rep, *asJSON, stdout, stderr)
	}
	names := strings.Split(*compare, ",")
	if len(names) != 2 || names[0] == "" || names[1] == "" || names[0] == names[1] {
		return fail(fmt.Errorf("--compare wants two different names, A,B; got %q", *compare))
	}
	var reps []*eval.Report
	for _, name := range names {
		cc, err := only(cfg.Classifier, name, *clsURL, *clsAPI)
		if err != nil {
			return fail(err)
		}
		rep, err := runEval(ctx, cfg, &cc, *home, cases, withPrices(cc))
		if err != nil {
			return fail(fmt.Errorf("%s: %w", name, err))
		}
		reps = append(reps, rep)
	}
	if *asJSON {
		return report(map[string]*eval.Report{names[0]: reps[0], names[1]: reps[1]}, true, stdout, stderr)
	}
	eval.WriteComparison(stdout, names, reps)
	return exitCode(reps, stderr)
}

// only is cls with the one backend called name: a configured one, or the
// model name at url.
func only(cls classifier.Config, name, url, api string) (classifier.Config, error) {
	for _, b := range cls.Backends {
		if b.Name == name && b.Name != "cli" {
			cls.Backends = []classifier.BackendConfig{b}
			return cls, nil
		}
	}
	if url == "" {
		return cls, fmt.Errorf("--compare: no backend named %q is configured (or give --classifier-url to compare models there)", name)
	}
	cls.Backends = []classifier.BackendConfig{{Name: name, BaseURL: url, Model: name, API: api}}
	return cls, nil
}

// runEval decides the cases with an engine for base's policies and, when
// cls is set, a classifier built from it as serve builds one (prompt,
// cache, coalescing, deadlines, retries and breaker included). base is
// left as it was, so that runs can follow each other.
func runEval(ctx context.Context, base *app.Config, cls *classifier.Config, home string, cases []eval.Case, opts eval.Options) (*eval.Report, error) {
	cfg := *base
	var c *classifier.Classifier
	if cls != nil {
		cls.WithBackendDefaults()
		if err := cls.Validate(); err != nil {
			return nil, err
		}
		if !cls.Enabled() {
			return nil, errors.New("no classifier backend: configure classifier.backends in --config, or give --classifier-url")
		}
		var err error
		if c, err = classifier.New(*cls, cfg.ClassifierRules(), zap.NewNop()); err != nil {
			return nil, err
		}
		defer c.Close()
		cfg.Classifier = *cls
	}
	eng, _, err := cfg.NewEngine(home, c)
	if err != nil {
		return nil, err
	}
	return eval.RunWith(ctx, eng, cases, opts)
}

func report(v any, asJSON bool, stdout, stderr io.Writer) int {
	rep, _ := v.(*eval.Report)
	reps := []*eval.Report{rep}
	if m, ok := v.(map[string]*eval.Report); ok {
		reps = slices.Collect(maps.Values(m))
	}
	if asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(v); err != nil {
			fmt.Fprintln(stderr, "toolgate eval:", err)
			return 2
		}
	} else if rep != nil {
		rep.WriteText(stdout)
	}
	return exitCode(reps, stderr)
}

// exitCode is 1 when a report has a false allow, and 2 when a classifier
// was asked and answered nothing (every call failed closed: a wrong URL,
// model or key), since such a run measured no model.
func exitCode(reps []*eval.Report, stderr io.Writer) int {
	code := 0
	for _, r := range reps {
		if c := r.Classifier; c != nil && c.Calls > 0 && c.Unavailable == c.Calls {
			fmt.Fprintf(stderr, "toolgate eval: the classifier answered none of its %d calls; check the backend's URL, model and key\n", c.Calls)
			return 2
		}
		if r.FalseAllows > 0 {
			code = 1
		}
	}
	return code
}

// progress shows how far a run is on a terminal, and nothing elsewhere.
func progress(w io.Writer) func(done, total int) {
	f, ok := w.(*os.File)
	if !ok {
		return nil
	}
	if fi, err := f.Stat(); err != nil || fi.Mode()&os.ModeCharDevice == 0 {
		return nil
	}
	var mu sync.Mutex // cases end on several goroutines, counts out of order
	shown := 0
	return func(done, total int) {
		mu.Lock()
		defer mu.Unlock()
		if done <= shown {
			return
		}
		shown = done
		fmt.Fprintf(f, "\r%d/%d cases", done, total)
		if done == total {
			fmt.Fprint(f, "\r\033[K")
		}
	}
}

// explainCase explains one corpus case, in its fixture, with the local
// stages of the config's engine.
func explainCase(ctx context.Context, cfg *app.Config, home string, cases []eval.Case, id string, asJSON bool, stdout, stderr io.Writer) int {
	i := slices.IndexFunc(cases, func(c eval.Case) bool { return c.ID == id })
	if i < 0 {
		fmt.Fprintf(stderr, "toolgate eval: no case has id %q\n", id)
		return 2
	}
	eng, _, err := cfg.NewEngine(home, nil)
	if err != nil {
		fmt.Fprintln(stderr, "toolgate eval:", err)
		return 2
	}
	code := 0
	err = eval.Explain(ctx, eng, cases[i:i+1], func(c eval.Case, _ *engine.Request, res engine.Result, tr *engine.Trace) error {
		o := eval.Judge(c, res)
		ex := newExplanation(res, tr, cfg)
		ex.Case = &explainedCase{ID: c.ID, Where: c.Where, Expect: c.Expect, Note: c.Note, Meets: !o.Wrong && !o.NotLocal}
		if !ex.Case.Meets {
			code = 1
		}
		return ex.write(stdout, asJSON)
	})
	if err != nil {
		fmt.Fprintln(stderr, "toolgate eval:", err)
		return 2
	}
	return code
}
