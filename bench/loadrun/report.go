package main

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"
)

// results is everything one make bench run measured.
type results struct {
	Date    time.Time
	Machine string
	Pinning string
	// ServerCores is how many CPUs the server under test may use.
	ServerCores int
	Settings    string
	Latency     time.Duration // the fake model's
	PoolSize    int
	Queue       time.Duration
	GoBench     []goBench
	Targets     []*targetResult
	Hook        *hookResult // nil when not measured
}

func (r *results) target(id string) *targetResult {
	for _, t := range r.Targets {
		if t.ID == id {
			return t
		}
	}
	return nil
}

// goal is one of an issue's targets, judged.
type goal struct {
	Issue          int
	What, Measured string
	Met            bool
	Why            string // for a miss: what the run's own figures say about it
}

// Limits from issue 7.
const (
	goalUnaryRatio  = 0.80
	goalP99         = 5 * time.Millisecond
	goalClassifierΔ = 2 * time.Millisecond
	goalPeakRSSKB   = 150 << 10
)

// Limits from issue 16 (the p99 limit is issue 7's).
const (
	goal16UnaryRatio  = 0.85
	goal16StreamRatio = 0.60
)

// ratioWhy explains a missed throughput ratio (t's checks/s against the
// bare server b's, goal the ratio wanted) from the run's own figures: how
// busy each server's CPUs were, and what CPU per check the goal would
// allow.
func ratioWhy(t, b *targetResult, cores int, goal float64) string {
	cores = max(cores, 1)
	busyT := t.checksPerSecond() * t.cpuPerCheck().Seconds() / float64(cores)
	busyB := b.checksPerSecond() * b.cpuPerCheck().Seconds() / float64(cores)
	allowed := time.Duration(float64(cores) * float64(time.Second) / (goal * b.checksPerSecond()))
	cpus := "its CPU"
	if cores > 1 {
		cpus = fmt.Sprintf("its %d CPUs", cores)
	}
	unit := "call"
	if b.StreamCount > 0 {
		unit = "check"
	}
	why := fmt.Sprintf("toolgate kept %s %.0f%% busy at %s of CPU per check, so CPU per check sets its throughput. ",
		cpus, busyT*100, us(t.cpuPerCheck()))
	if busyB < 0.9 {
		why += fmt.Sprintf("The bare server used %.0f%% of its CPU (%s per %s): ghz, on the load's CPUs, set its pace. ",
			busyB*100, us(b.cpuPerCheck()), unit)
	} else {
		why += fmt.Sprintf("The bare server's CPU was %.0f%% busy too, at %s per %s for gRPC alone. ", busyB*100, us(b.cpuPerCheck()), unit)
	}
	if t.cpuPerCheck() <= allowed {
		return fmt.Sprintf("toolgate spent %s of CPU per check, within the %s that %.0f%% of the bare server's rate allows, "+
			"but kept its CPU only %.0f%% busy: something else (the load generator, locks, the network) held it back in this run.",
			us(t.cpuPerCheck()), us(allowed), goal*100, busyT*100)
	}
	why += fmt.Sprintf("%.0f%% of the bare server's rate allows at most %s per check, %s less than toolgate spends. ",
		goal*100, us(allowed), us(t.cpuPerCheck()-allowed))
	return why + "Beyond the transport, toolgate's cost is the decision itself (resolving target paths through symlinks, parsing bash, " +
		"matching rules, walking the trees a search reads), the JSON log line, stack growth when an RPC finds every stream " +
		"worker busy (bash parsing recurses deeply) and garbage collection; \"Where a check's CPU goes\" below splits it."
}

// p99Why explains a tail over the limit by the closed loop's queueing.
func p99Why(t, b *targetResult) string {
	if b == nil || t.RPS <= 0 {
		return ""
	}
	return fmt.Sprintf("%d callers in a closed loop keep the server's core busy, so a call mostly waits its turn: "+
		"the mean latency is callers ÷ throughput (%s here), and the bare server's own p99 is %s at the same load. "+
		"The tail follows the CPU per check (see the throughput target).",
		t.Concurrency, ms(time.Duration(float64(t.Concurrency)/t.RPS*float64(time.Second))), ms(b.P99))
}

func (r *results) goals() []goal {
	var g []goal
	tu, bu := r.target("toolgate-unary"), r.target("bare-unary")
	if tu != nil && bu != nil && bu.RPS > 0 {
		ratio := tu.RPS / bu.RPS
		g = append(g, goal{
			Issue:    7,
			What:     fmt.Sprintf("local-path unary requests/s at least %.0f%% of the bare server's, %d callers", goalUnaryRatio*100, tu.Concurrency),
			Measured: fmt.Sprintf("%.0f%% (%s vs %s requests/s)", ratio*100, count(tu.RPS), count(bu.RPS)),
			Met:      ratio >= goalUnaryRatio,
			Why:      ratioWhy(tu, bu, r.ServerCores, goalUnaryRatio),
		})
	}
	for _, id := range []string{"toolgate-unary", "toolgate-unary-light"} {
		t := r.target(id)
		if t == nil {
			continue
		}
		m := fmt.Sprintf("p99 %s", ms(t.P99))
		b := r.target(strings.Replace(id, "toolgate", "bare", 1))
		if b != nil {
			m += fmt.Sprintf(" (bare server: %s)", ms(b.P99))
		}
		g = append(g, goal{
			Issue:    7,
			What:     fmt.Sprintf("local decisions p99 under %s, %d callers", ms(goalP99), t.Concurrency),
			Measured: m,
			Met:      t.P99 < goalP99,
			Why:      p99Why(t, b),
		})
	}
	if t := r.target("classifier-unsaturated"); t != nil {
		// The fake's latency is what it takes to answer a plain HTTP
		// client (its configured delay plus its own HTTP and JSON work),
		// measured in the same run.
		d := t.P50 - t.FakeDirectP50
		m := fmt.Sprintf("p50 %s, the fake alone %s (configured %s): %s over the fake", ms(t.P50), ms(t.FakeDirectP50), ms(r.Latency), ms(d))
		if t.BackendP50 > 0 {
			m += fmt.Sprintf("; toolgate's log: the classifier %s (pool, openai-go, HTTP, the fake), the whole decision %s, so gRPC and ghz add %s",
				ms(t.BackendP50), ms(t.DecisionP50), ms(t.P50-t.DecisionP50))
		}
		g = append(g, goal{
			Issue:    7,
			What:     fmt.Sprintf("classifier path p50 within %s of the fake's latency, pool not saturated (%d callers, pool of %d)", ms(goalClassifierΔ), t.Concurrency, r.PoolSize),
			Measured: m,
			Met:      t.FakeDirectP50 > 0 && d <= goalClassifierΔ,
		})
	}
	var errs uint64
	var where []string
	for _, t := range r.Targets {
		if t.Server == serverBare {
			continue
		}
		errs += t.Errors
		if t.Errors > 0 {
			where = append(where, fmt.Sprintf("%s: %s", t.ID, t.ErrorSummary))
		}
	}
	m := fmt.Sprintf("%d errors", errs)
	if len(where) > 0 {
		m += " (" + strings.Join(where, "; ") + ")"
	}
	g = append(g, goal{Issue: 7, What: "zero errors (every toolgate run)", Measured: m, Met: errs == 0})
	var peak int64
	peakID := ""
	for _, t := range r.Targets {
		// The in-process targets are the harness's binary, profiling.
		if t.Server != serverBare && t.Server != serverInproc && t.PeakRSSKB > peak {
			peak, peakID = t.PeakRSSKB, t.ID
		}
	}
	if peakID != "" {
		g = append(g, goal{
			Issue:    7,
			What:     fmt.Sprintf("peak RSS under %d MB", goalPeakRSSKB>>10),
			Measured: fmt.Sprintf("%s at most (%s)", mb(peak), peakID),
			Met:      peak < goalPeakRSSKB,
		})
	}
	return append(g, r.goals16()...)
}

// goals16 are issue 16's throughput targets, against the bare server at
// the same load.
func (r *results) goals16() []goal {
	var g []goal
	if tu, bu := r.target("toolgate-unary"), r.target("bare-unary"); tu != nil && bu != nil && bu.RPS > 0 {
		ratio := tu.RPS / bu.RPS
		okRatio, okP99 := ratio >= goal16UnaryRatio, tu.P99 < goalP99
		var whys []string
		if !okRatio {
			whys = append(whys, ratioWhy(tu, bu, r.ServerCores, goal16UnaryRatio))
		}
		if w := p99Why(tu, bu); !okP99 && w != "" {
			whys = append(whys, w)
		}
		g = append(g, goal{
			Issue: 16,
			What: fmt.Sprintf("unary local checks/s at least %.0f%% of the bare server's, with p99 under %s, %d callers",
				goal16UnaryRatio*100, ms(goalP99), tu.Concurrency),
			Measured: fmt.Sprintf("%.0f%% (%s vs %s requests/s), p99 %s (bare server: %s)",
				ratio*100, count(tu.RPS), count(bu.RPS), ms(tu.P99), ms(bu.P99)),
			Met: okRatio && okP99,
			Why: strings.Join(whys, " "),
		})
	}
	if ts, bs := r.target("toolgate-stream"), r.target("bare-stream"); ts != nil && bs != nil && bs.checksPerSecond() > 0 {
		ratio := ts.checksPerSecond() / bs.checksPerSecond()
		g = append(g, goal{
			Issue: 16,
			What: fmt.Sprintf("CheckStream local checks/s at least %.0f%% of the bare server's, %d callers",
				goal16StreamRatio*100, ts.Concurrency),
			Measured: fmt.Sprintf("%.0f%% (%s vs %s checks/s)", ratio*100, count(ts.checksPerSecond()), count(bs.checksPerSecond())),
			Met:      ratio >= goal16StreamRatio,
			Why:      ratioWhy(ts, bs, r.ServerCores, goal16StreamRatio),
		})
	}
	return g
}

func metWord(ok bool) string {
	if ok {
		return "met"
	}
	return "**missed**"
}

func ms(d time.Duration) string {
	switch {
	case d >= 100*time.Millisecond:
		return fmt.Sprintf("%.0f ms", float64(d)/float64(time.Millisecond))
	case d >= 10*time.Millisecond:
		return fmt.Sprintf("%.1f ms", float64(d)/float64(time.Millisecond))
	default:
		return fmt.Sprintf("%.2f ms", float64(d)/float64(time.Millisecond))
	}
}

func us(d time.Duration) string { return fmt.Sprintf("%.0f µs", float64(d)/float64(time.Microsecond)) }

func mb(kb int64) string { return fmt.Sprintf("%.0f MB", float64(kb)/1024) }

// count formats n with thousands separators.
func count(n float64) string {
	s := fmt.Sprintf("%.0f", n)
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	return b.String()
}

func (r *results) markdown() string {
	var b strings.Builder
	p := func(format string, a ...any) { fmt.Fprintf(&b, format, a...) }
	p("# toolgate benchmarks\n\n")
	p("Written by `make bench` (`bench/loadrun`) on %s. Every figure below comes from that one run; ", r.Date.Format("2006-01-02 15:04 MST"))
	p("the machine is shared and noisy, so compare figures as ratios within the run, not across runs.\n\n")
	p("- Machine: %s.\n", r.Machine)
	p("- CPU placement: %s.\n", r.Pinning)
	p("- Load: %s.\n", r.Settings)
	p("- toolgate: `toolgate serve` with the embedded default policy in auto mode, info-level JSON logs to a file (one `decision` line per check), metrics listener on; ")
	p("the classifier targets add `--classifier-url` pointing at `cmd/fakellm --latency %s` (pool: %d calls in flight, queue time %s, the defaults).\n", r.Latency, r.PoolSize, r.Queue)
	p("- Local mix (bench/workload): Read and Grep (safe tools), Edit and Write inside the project (accept-edits), `git status`, `ls -la src | head -20` and a six-program compound command (command analysis), cycled; every call is checked to be decided ALLOW by the expected stage before the load starts.\n")
	p("- The bare server (bench/bareserver) serves the same proto with a constant answer: the transport's limit on this machine.\n")
	if t := r.target("toolgate-unary-traced"); t != nil {
		p("- toolgate-unary-traced: the same, with `--config` a copy of the embedded default config adding `server.tracing` "+
			"(`sample_ratio: %g`, OTLP/HTTP to a sink the harness serves on 127.0.0.1, which answers 200 and keeps nothing).\n", traceSampleRatio)
	}
	p("\n")

	goals := r.goals()
	for _, issue := range []int{7, 16} {
		gs := slices.DeleteFunc(slices.Clone(goals), func(g goal) bool { return g.Issue != issue })
		if len(gs) == 0 {
			continue
		}
		p("## Targets (issue %d)\n\n| target | measured | |\n|---|---|---|\n", issue)
		var whys []string
		for _, g := range gs {
			p("| %s | %s | %s |\n", g.What, g.Measured, metWord(g.Met))
			if !g.Met && g.Why != "" {
				whys = append(whys, fmt.Sprintf("- **%s**: %s", g.What, g.Why))
			}
		}
		p("\n")
		if len(whys) > 0 {
			p("Why the misses:\n\n%s\n\n", strings.Join(whys, "\n"))
		}
	}

	if r.Hook != nil {
		r.Hook.markdown(p)
	}

	p("## toolgate against the limit\n\n| | toolgate | bare server | toolgate / bare |\n|---|---|---|---|\n")
	pairs := []struct{ label, tg, bare string }{
		{"unary requests/s, %d callers", "toolgate-unary", "bare-unary"},
		{fmt.Sprintf("unary requests/s, %%d callers, tracing on (%.0f%%%% sampled)", traceSampleRatio*100), "toolgate-unary-traced", "bare-unary"},
		{"CheckStream checks/s, %d callers", "toolgate-stream", "bare-stream"},
		{"unary requests/s, %d callers", "toolgate-unary-light", "bare-unary-light"},
	}
	for _, pr := range pairs {
		t, bb := r.target(pr.tg), r.target(pr.bare)
		if t == nil || bb == nil || bb.checksPerSecond() == 0 {
			continue
		}
		p("| "+pr.label+" | %s | %s | %.2f |\n", t.Concurrency, count(t.checksPerSecond()), count(bb.checksPerSecond()), t.checksPerSecond()/bb.checksPerSecond())
		p("| ... server CPU per check | %s | %s | %.2f |\n", us(t.cpuPerCheck()), us(bb.cpuPerCheck()), float64(t.cpuPerCheck())/float64(max(1, bb.cpuPerCheck())))
		p("| ... p50 / p99 per call | %s / %s | %s / %s | |\n", ms(t.P50), ms(t.P99), ms(bb.P50), ms(bb.P99))
	}
	p("\n")
	r.splitMarkdown(p)

	p("## Each target\n\n")
	p("Latency is per call as ghz sees it; a CheckStream call is one stream of %d checks, so its latency is the stream's and its checks/s is calls/s × %d. ", r.streamCount(), r.streamCount())
	p("Server CPU is the server process's user and system time during the measured run, per check. Peak RSS is the server's VmHWM after the run, warm-up included.\n\n")
	for _, t := range r.Targets {
		p("### %s: %s\n\n", t.ID, t.Title)
		p("| calls | calls/s | checks/s | p50 | p90 | p99 | slowest | errors | server CPU / check | peak RSS |\n|---|---|---|---|---|---|---|---|---|---|\n")
		p("| %s | %s | %s | %s | %s | %s | %s | %d | %s | %s |\n\n", count(float64(t.Count)), count(t.RPS), count(t.checksPerSecond()),
			ms(t.P50), ms(t.P90), ms(t.P99), ms(t.Slowest), t.Errors, us(t.cpuPerCheck()), mb(t.PeakRSSKB))
		if t.Errors > 0 {
			p("Errors: %s.\n\n", t.ErrorSummary)
		}
		if len(t.Decisions) > 0 {
			var parts []string
			for _, k := range slices.Sorted(maps.Keys(t.Decisions)) {
				parts = append(parts, fmt.Sprintf("%s %s", k, count(float64(t.Decisions[k]))))
			}
			p("Decisions in toolgate's log (validation and warm-up included): %s.\n\n", strings.Join(parts, ", "))
		}
		if t.FakeDirectP50 > 0 {
			p("Medians: the fake model answering a plain HTTP client %s; in toolgate's log, checks the model decided %s, of which the classifier (waiting for a pool slot, then the backend call) %s.\n\n",
				ms(t.FakeDirectP50), ms(t.DecisionP50), ms(t.BackendP50))
		}
		if t.Metrics != "" {
			p("Metrics: %s.\n\n", t.Metrics)
		}
		if t.Server == serverTraced {
			p("Tracing: the OTLP sink received %s export requests (%s KB, %s spans), the flush at shutdown included.\n\n",
				count(float64(t.TraceExports)), count(float64(t.TraceBytes)/1024), count(float64(t.TraceSpans)))
		}
	}

	if len(r.GoBench) > 0 {
		p("## Go benchmarks\n\n`go test -bench . -benchmem` on %s, not pinned, run before the load.\n\n", strings.Join(goBenchPkgs, " "))
		p("| package | benchmark | time/op | B/op | allocs/op |\n|---|---|---|---|---|\n")
		for _, g := range r.GoBench {
			p("| %s | %s | %s | %d | %d |\n", g.Pkg, g.Name, us(time.Duration(g.NsPerOp)), g.BytesPerOp, g.AllocsPerOp)
		}
		p("\n")
	}
	return b.String()
}

func (r *results) streamCount() int {
	for _, t := range r.Targets {
		if t.StreamCount > 0 {
			return t.StreamCount
		}
	}
	return 0
}

// summary is what the harness prints when it is done.
func (r *results) summary() string {
	var b strings.Builder
	for _, g := range r.goals() {
		fmt.Fprintf(&b, "%-8s issue %d: %s: %s\n", strings.Trim(metWord(g.Met), "*"), g.Issue, g.What, g.Measured)
	}
	if r.Hook != nil {
		b.WriteString(r.Hook.summary())
	}
	return b.String()
}

// splitMarkdown writes "Where a check's CPU goes": each profile's category
// shares applied to the CPU per check of the subprocess target under the
// same load. Without both pairs of targets there is nothing honest to say.
func (r *results) splitMarkdown(p func(string, ...any)) {
	cols := []struct{ name, prof, real string }{
		{"unary", "profile-unary", "toolgate-unary"},
		{"CheckStream", "profile-stream", "toolgate-stream"},
	}
	type col struct {
		name  string
		split *cpuSplit
		cpu   time.Duration
	}
	var cs []col
	for _, c := range cols {
		pt, rt := r.target(c.prof), r.target(c.real)
		if pt == nil || rt == nil || pt.CPUSplit == nil || pt.CPUSplit.Total == 0 || rt.cpuPerCheck() == 0 {
			return
		}
		cs = append(cs, col{c.name, pt.CPUSplit, rt.cpuPerCheck()})
	}
	p("## Where a check's CPU goes\n\n")
	p("Measured by profiling toolgate served in the harness's process (`loadrun serve-inproc`, the same wiring; targets profile-unary and profile-stream) " +
		"under the same ghz load as toolgate-unary and toolgate-stream; each category's share of the profile's CPU samples (warm-up included) " +
		"is applied to the subprocess target's server CPU per check. ")
	p("A sample counts for the category of the frame nearest its leaf that has one (so allocation, GC assists and syscalls count for their caller, " +
		"and gRPC's framing under toolgate's stream code for the transport); garbage collection is the collector's background workers; " +
		"transport is gRPC and HTTP/2, or protobuf, sockets and syscalls reached from nothing above.\n\n")
	p("| |")
	for _, c := range cs {
		p(" %s |", c.name)
	}
	p("\n|---|")
	for range cs {
		p("---|")
	}
	p("\n")
	for _, cat := range splitCategories {
		p("| %s |", cat)
		for _, c := range cs {
			sh := c.split.share(cat)
			p(" %.1f µs (%.1f%%) |", float64(c.cpu)*sh/float64(time.Microsecond), sh*100)
		}
		p("\n")
	}
	p("| **server CPU per check** |")
	for _, c := range cs {
		p(" %s (100%%) |", us(c.cpu))
	}
	p("\n\n")
}
