package eval

import (
	"context"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/toolgate/toolgate/engine"
)

// Turn is one transcript entry of a case.
type Turn struct {
	Role string `json:"role"` // user or assistant
	Text string `json:"text"`
}

var roles = map[string]engine.Role{"user": engine.RoleUser, "assistant": engine.RoleAssistant}

// Options shape a run.
type Options struct {
	// Concurrency is how many cases are decided at once (at least one).
	Concurrency int
	// Budget caps the cases sent to the classifier (0: no cap). A case
	// that needs it past the cap is skipped: reported, not judged.
	Budget int
	// Prices are what a million tokens cost on each backend (by name),
	// for the cost line; a backend without one is not priced.
	Prices map[string]Price
	// Progress, when set, is called after each case with the count done;
	// calls come from several goroutines, not always in order.
	Progress func(done, total int)
	// Files is every request's relation to this machine's disk (see
	// engine.Files); the zero value decides the cases as an in-process
	// caller, on this machine's disk.
	Files engine.Files
}

// Price is the USD cost of a million input and output tokens, and of
// input tokens read from the provider's prompt cache (0: as Input).
type Price struct {
	Input       float64 `json:"input"`
	Output      float64 `json:"output"`
	CachedInput float64 `json:"cached_input,omitempty"`
}

// cost is what in input tokens (cached of them read from the cache) and
// out output tokens cost at p.
func (p Price) cost(in, cached, out int64) float64 {
	cachedPrice := p.CachedInput
	if cachedPrice == 0 {
		cachedPrice = p.Input
	}
	return float64(in-cached)/1e6*p.Input + float64(cached)/1e6*cachedPrice + float64(out)/1e6*p.Output
}

// StageStats judge the outcomes one stage decided, by label (allow,
// block, any) and decision (allow, block).
type StageStats struct {
	Cases       int                       `json:"cases"`
	Confusion   map[string]map[string]int `json:"confusion"`
	FalseAllows int                       `json:"false_allows"`
	FalseBlocks int                       `json:"false_blocks"`
}

// ClassifierStats sum up the side-queries of a run.
type ClassifierStats struct {
	// Calls are cases a backend answered or failed on; Cached were
	// answered from the verdict cache; Unavailable failed closed.
	Calls       int `json:"calls"`
	Cached      int `json:"cached"`
	Unavailable int `json:"unavailable"`
	// Latency percentiles of the calls (not the cached ones), in ms.
	P50 float64 `json:"p50_ms"`
	P95 float64 `json:"p95_ms"`
	P99 float64 `json:"p99_ms"`
	// Tokens are those of the backend that answered (a failed-over
	// backend's are in the server's metrics only).
	InputTokens  int64 `json:"input_tokens"`
	OutputTokens int64 `json:"output_tokens"`
	// CachedInputTokens are those of InputTokens read from the
	// provider's prompt cache.
	CachedInputTokens int64 `json:"cached_input_tokens"`
	// Cost is the priced calls' cost in USD; Unpriced counts the calls of
	// backends without a price.
	Cost      float64          `json:"cost_usd"`
	Unpriced  int              `json:"unpriced"`
	Prices    map[string]Price `json:"prices,omitempty"`
	Backends  []string         `json:"backends"` // backend/model pairs seen
	latencies []int64
}

// RunWith decides the cases with eng, as opts say. The outcomes keep the
// cases' order whatever the concurrency.
func RunWith(ctx context.Context, eng *engine.Engine, cases []Case, opts Options) (*Report, error) {
	outcomes := make([]Outcome, len(cases))
	errs := make([]error, len(cases))
	reqs := make([]*engine.Request, len(cases))
	local := make([]engine.Result, len(cases))
	decided := make([]bool, len(cases))
	var done atomic.Int64
	fx, err := buildFixtures(ctx, cases)
	defer fx.remove()
	if err != nil {
		return nil, err
	}
	// Pass 1: the local stages, for every case.
	forEach(ctx, len(cases), opts.Concurrency, func(i int) {
		reqs[i] = request(fx.apply(cases[i]))
		reqs[i].Files = opts.Files
		local[i], decided[i], errs[i] = eng.CheckLocal(ctx, reqs[i])
	})
	// The budget goes to the first undecided cases in corpus order,
	// whatever the concurrency: two runs skip the same cases.
	send := make([]bool, len(cases))
	for i, n := 0, 0; i < len(cases); i++ {
		if errs[i] == nil && !decided[i] && (opts.Budget == 0 || n < opts.Budget) {
			send[i] = true
			n++
		}
	}
	// Pass 2: the classifier for those.
	forEach(ctx, len(cases), opts.Concurrency, func(i int) {
		switch {
		case errs[i] != nil:
		case decided[i]:
			outcomes[i] = judge(cases[i], local[i])
		case !send[i]:
			outcomes[i] = Outcome{Case: cases[i], Stage: "skipped"}
		default:
			var res engine.Result
			if res, errs[i] = eng.Check(ctx, reqs[i]); errs[i] == nil {
				outcomes[i] = judge(cases[i], res)
			}
		}
		if n := done.Add(1); opts.Progress != nil {
			opts.Progress(int(n), len(cases))
		}
	})
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	rep := &Report{Confusion: map[string]map[string]int{}, BySource: map[string]int{}, Stages: map[string]*StageStats{}}
	for i, o := range outcomes {
		if errs[i] != nil {
			return nil, fmt.Errorf("%s (%s): %w", cases[i].Where, cases[i].ID, errs[i])
		}
		rep.add(o)
	}
	if rep.LocalTarget > 0 {
		rep.LocalRate = float64(rep.LocalResolved) / float64(rep.LocalTarget)
	}
	if c := rep.Classifier; c != nil {
		c.P50, c.P95, c.P99 = percentile(c.latencies, 50), percentile(c.latencies, 95), percentile(c.latencies, 99)
		c.Prices = map[string]Price{}
		for _, o := range rep.Outcomes {
			d := o.Classifier
			if d == nil || o.Stage == "cache" {
				continue
			}
			p, ok := opts.Prices[d.Backend]
			if !ok {
				c.Unpriced++
				continue
			}
			c.Prices[d.Backend] = p
			c.Cost += p.cost(d.InputTokens, d.CachedInputTokens, d.OutputTokens)
		}
	}
	return rep, nil
}

// forEach runs f(0) to f(n-1) on up to workers goroutines, stopping early
// when ctx ends.
func forEach(ctx context.Context, n, workers int, f func(int)) {
	var next atomic.Int64
	var wg sync.WaitGroup
	for range min(max(workers, 1), max(n, 1)) {
		wg.Go(func() {
			for {
				i := int(next.Add(1) - 1)
				if i >= n || ctx.Err() != nil {
					return
				}
				f(i)
			}
		})
	}
	wg.Wait()
}

// request is the engine request of a case, each in its own session so
// that one case's blocks never count toward another's session limits.
func request(c Case) *engine.Request {
	req := &engine.Request{
		RequestID: c.ID, SessionID: "eval-" + c.ID, Tool: engine.ToolCall{Name: c.Tool, Input: c.Input},
		WorkingDirectory: c.Cwd, AdditionalDirectories: c.AdditionalDirectories,
		Mode: modes[c.Mode], Policy: c.Policy,
	}
	if req.Tool.Input == nil {
		req.Tool.Input = map[string]any{}
	}
	if c.Rules != nil {
		req.Rules = engine.RuleSet{Allow: c.Rules.Allow, Ask: c.Rules.Ask, Deny: c.Rules.Deny}
	}
	for _, t := range c.Transcript {
		req.Transcript = append(req.Transcript, engine.TranscriptEntry{Role: roles[t.Role], Text: t.Text})
	}
	return req
}

// judge compares a decision with the case's label.
func judge(c Case, res engine.Result) Outcome {
	o := Outcome{Case: c, Result: res, Decision: res.Decision.String(), Source: res.Source.String(), Reason: res.Reason,
		Local: isLocal(res.Source), Stage: stageOf(res.Source), Classifier: res.Classifier}
	allowed := res.Decision == engine.Allow
	switch c.Expect {
	case ExpectAllow:
		o.Wrong = !allowed
		o.FalseBlock = !allowed
		o.NotLocal = c.Local && !(o.Local && allowed)
	case ExpectNotAllow, ExpectBlock:
		o.FalseAllow = allowed
		o.Wrong = o.FalseAllow
	case ExpectDeny:
		o.FalseAllow = allowed
		o.Wrong = res.Decision != engine.Deny
	case ExpectAsk:
		o.FalseAllow = allowed
		o.Wrong = res.Decision != engine.Ask
	}
	return o
}

func stageOf(s engine.Source) string {
	switch s {
	case engine.SourceClassifier:
		return "classifier"
	case engine.SourceCache:
		return "cache"
	case engine.SourceClassifierUnavailable, engine.SourceUpstreamUnavailable:
		return "unavailable"
	case engine.SourceNoClassifier:
		return "none"
	case engine.SourceFileSystem:
		return "file_system"
	case engine.SourceApproval, engine.SourceApprovalTimeout, engine.SourceApprovalUnavailable:
		return "approval"
	}
	return "local"
}

// add counts one outcome in the report.
func (r *Report) add(o Outcome) {
	r.Outcomes = append(r.Outcomes, o)
	if o.Stage == "skipped" {
		r.Skipped++
		return
	}
	c := o.Case
	if r.Confusion[c.Expect] == nil {
		r.Confusion[c.Expect] = map[string]int{}
	}
	r.Confusion[c.Expect][o.Decision]++
	r.BySource[o.Source]++
	if o.FalseAllow {
		r.FalseAllows++
	}
	if o.FalseBlock {
		r.FalseBlocks++
	}
	if o.Wrong {
		r.Wrong++
	}
	if c.Local {
		r.LocalTarget++
		if !o.NotLocal {
			r.LocalResolved++
		}
	}
	st := r.Stages[o.Stage]
	if st == nil {
		st = &StageStats{Confusion: map[string]map[string]int{}}
		r.Stages[o.Stage] = st
	}
	label, got := labelOf(c.Expect), "block"
	if o.Result.Decision == engine.Allow {
		got = "allow"
	}
	if st.Confusion[label] == nil {
		st.Confusion[label] = map[string]int{}
	}
	st.Cases++
	st.Confusion[label][got]++
	if o.FalseAllow {
		st.FalseAllows++
	}
	if o.FalseBlock {
		st.FalseBlocks++
	}
	if o.Stage == "local" || o.Stage == "none" {
		return
	}
	r.addCategory(o)
	if r.Classifier == nil {
		r.Classifier = &ClassifierStats{}
	}
	cs := r.Classifier
	switch d := o.Classifier; {
	case o.Stage == "cache":
		cs.Cached++
	case d != nil:
		cs.Calls++
		cs.latencies = append(cs.latencies, d.LatencyMicro)
		cs.InputTokens += d.InputTokens
		cs.OutputTokens += d.OutputTokens
		cs.CachedInputTokens += d.CachedInputTokens
		if b := d.Backend + "/" + d.Model; d.Backend != "" && !slices.Contains(cs.Backends, b) {
			cs.Backends = append(cs.Backends, b)
		}
	}
	if o.Stage == "unavailable" {
		cs.Unavailable++
	}
}

// byClassifier reports whether a classifier (or its cache, or its failure)
// made the decision.
func byClassifier(o Outcome) bool {
	return o.Stage == "classifier" || o.Stage == "cache" || o.Stage == "unavailable"
}

// labelOf folds the labels to what a classifier is judged on.
func labelOf(expect string) string {
	switch expect {
	case ExpectAllow, ExpectAny:
		return expect
	}
	return "block"
}

// percentile is the nearest-rank percentile of latencies in µs, in ms.
func percentile(us []int64, p int) float64 {
	if len(us) == 0 {
		return 0
	}
	s := slices.Sorted(slices.Values(us))
	i := (p*len(s) + 99) / 100
	return float64(s[max(i, 1)-1]) / 1000
}

// writePipeline prints, for a run that reached a classifier, each stage's
// confusion table, the false allows and false blocks with the model's
// reason, and the classifier's latency, tokens and cost.
func (r *Report) writePipeline(w io.Writer) {
	if r.Classifier == nil {
		return
	}
	fmt.Fprintln(w, "\nby stage (labels folded to allow, block, any; decisions to allow, block):")
	for _, name := range []string{"local", "classifier", "cache", "unavailable"} {
		st := r.Stages[name]
		if st == nil {
			continue
		}
		fmt.Fprintf(w, "  %s: %d cases, %d false allows, %d false blocks\n", name, st.Cases, st.FalseAllows, st.FalseBlocks)
		fmt.Fprintf(w, "    %-8s %7s %7s\n", "label", "allow", "block")
		for _, l := range []string{"allow", "block", "any"} {
			if row := st.Confusion[l]; row != nil {
				fmt.Fprintf(w, "    %-8s %7d %7d\n", l, row["allow"], row["block"])
			}
		}
	}
	for _, o := range r.Outcomes {
		if o.FalseBlock && byClassifier(o) {
			fmt.Fprintf(w, "  FALSE BLOCK %s %s: %s/%s %q (%s)\n", o.Case.ID, o.Case.Tool, o.Decision, o.Source, o.Reason, o.Case.Note)
		}
	}
	r.writeCategories(w)
	c := r.Classifier
	fmt.Fprintf(w, "\nclassifier: %d calls (%s), %d from the cache, %d failed closed", c.Calls, joinOr(c.Backends, "no backend answered"), c.Cached, c.Unavailable)
	if r.Skipped > 0 {
		fmt.Fprintf(w, ", %d cases skipped (request budget spent)", r.Skipped)
	}
	fmt.Fprintf(w, "\n  latency p50 %.1f ms, p95 %.1f ms, p99 %.1f ms\n", c.P50, c.P95, c.P99)
	fmt.Fprintf(w, "  tokens: %d in, %d out", c.InputTokens, c.OutputTokens)
	if c.CachedInputTokens > 0 {
		fmt.Fprintf(w, "; %d of the input from the prompt cache", c.CachedInputTokens)
	}
	if n := c.Calls; n > 0 {
		fmt.Fprintf(w, " (per call: %d in, %d out)", c.InputTokens/int64(n), c.OutputTokens/int64(n))
	}
	fmt.Fprintln(w)
	if len(c.Prices) > 0 {
		var at []string
		for _, b := range slices.Sorted(maps.Keys(c.Prices)) {
			p := c.Prices[b]
			s := fmt.Sprintf("%s $%g / $%g", b, p.Input, p.Output)
			if p.CachedInput > 0 {
				s = fmt.Sprintf("%s $%g (cached $%g) / $%g", b, p.Input, p.CachedInput, p.Output)
			}
			at = append(at, s)
		}
		fmt.Fprintf(w, "  cost: $%.4f at %s per million tokens in / out", c.Cost, strings.Join(at, ", "))
		if n := c.Calls - c.Unpriced; n > 0 {
			fmt.Fprintf(w, " ($%.6f per call)", c.Cost/float64(n))
		}
		fmt.Fprintln(w)
	}
	if c.Unpriced > 0 {
		fmt.Fprintf(w, "  %d calls not priced: give --price-in and --price-out, or classifier.backends[].price\n", c.Unpriced)
	}
}

func joinOr(ss []string, none string) string {
	if len(ss) == 0 {
		return none
	}
	out := ss[0]
	for _, s := range ss[1:] {
		out += ", " + s
	}
	return out
}

// WriteComparison prints two runs of the same corpus side by side, one
// column per name.
func WriteComparison(w io.Writer, names []string, reps []*Report) {
	rows := []struct {
		label string
		value func(*Report) string
	}{
		{"cases decided", func(r *Report) string { return fmt.Sprint(len(r.Outcomes) - r.Skipped) }},
		{"false allows", func(r *Report) string { return fmt.Sprint(r.FalseAllows) }},
		{"false blocks", func(r *Report) string { return fmt.Sprint(r.FalseBlocks) }},
		{"classifier: false allows", func(r *Report) string { return stageCount(r, "classifier", true) }},
		{"classifier: false blocks", func(r *Report) string { return stageCount(r, "classifier", false) }},
		{"classifier calls", func(r *Report) string { return cls(r, func(c *ClassifierStats) string { return fmt.Sprint(c.Calls) }) }},
		{"failed closed", func(r *Report) string {
			return cls(r, func(c *ClassifierStats) string { return fmt.Sprint(c.Unavailable) })
		}},
		{"latency p50 / p95 / p99 ms", func(r *Report) string {
			return cls(r, func(c *ClassifierStats) string { return fmt.Sprintf("%.1f / %.1f / %.1f", c.P50, c.P95, c.P99) })
		}},
		{"tokens in / out", func(r *Report) string {
			return cls(r, func(c *ClassifierStats) string { return fmt.Sprintf("%d / %d", c.InputTokens, c.OutputTokens) })
		}},
		{"cost (USD)", func(r *Report) string {
			return cls(r, func(c *ClassifierStats) string { return fmt.Sprintf("%.4f", c.Cost) })
		}},
	}
	fmt.Fprintf(w, "%-28s %22s %22s\n", "", names[0], names[1])
	for _, row := range rows {
		fmt.Fprintf(w, "%-28s %22s %22s\n", row.label, row.value(reps[0]), row.value(reps[1]))
	}
}

func stageCount(r *Report, stage string, allows bool) string {
	st := r.Stages[stage]
	switch {
	case st == nil:
		return "0"
	case allows:
		return fmt.Sprint(st.FalseAllows)
	}
	return fmt.Sprint(st.FalseBlocks)
}

func cls(r *Report, f func(*ClassifierStats) string) string {
	if r.Classifier == nil {
		return "-"
	}
	return f(r.Classifier)
}
