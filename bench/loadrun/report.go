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
}

func (r *results) target(id string) *targetResult {
	for _, t := range r.Targets {
		if t.ID == id {
			return t
		}
	}
	return nil
}

// goal is one of the targets, judged.
type goal struct {
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

// unaryRatioWhy explains a missed throughput ratio from the run's own
// figures: how busy each server's CPUs were, and what CPU per check the
// goal would allow.
func unaryRatioWhy(tu, bu *targetResult, cores int) string {
	cores = max(cores, 1)
	busyT := tu.RPS * tu.cpuPerCheck().Seconds() / float64(cores)
	busyB := bu.RPS * bu.cpuPerCheck().Seconds() / float64(cores)
	allowed := time.Duration(float64(cores) * float64(time.Second) / (goalUnaryRatio * bu.RPS))
	cpus := "its CPU"
	if cores > 1 {
		cpus = fmt.Sprintf("its %d CPUs", cores)
	}
	why := fmt.Sprintf("toolgate kept %s %.0f%% busy at %s of CPU per check, so CPU per check sets its throughput. ",
		cpus, busyT*100, us(tu.cpuPerCheck()))
	if busyB < 0.9 {
		why += fmt.Sprintf("The bare server used %.0f%% of its CPU (%s per call): ghz, on the load's CPUs, set its pace. ",
			busyB*100, us(bu.cpuPerCheck()))
	} else {
		why += fmt.Sprintf("The bare server's CPU was %.0f%% busy too, at %s per call for gRPC alone. ", busyB*100, us(bu.cpuPerCheck()))
	}
	if tu.cpuPerCheck() <= allowed {
		return fmt.Sprintf("toolgate spent %s of CPU per check, within the %s that %.0f%% of the bare server's rate allows, "+
			"but kept its CPU only %.0f%% busy: something else (the load generator, locks, the network) held it back in this run.",
			us(tu.cpuPerCheck()), us(allowed), goalUnaryRatio*100, busyT*100)
	}
	why += fmt.Sprintf("%.0f%% of the bare server's rate allows at most %s per check, %s less than toolgate spends. ",
		goalUnaryRatio*100, us(allowed), us(tu.cpuPerCheck()-allowed))
	return why + "Beyond the transport, toolgate's cost is the decision itself (resolving target paths through symlinks, parsing bash, " +
		"matching rules, walking the trees a search reads), the JSON log line, stack growth when an RPC finds every stream " +
		"worker busy (bash parsing recurses deeply) and garbage collection; `go run ./bench/loadrun -profile DIR` shows the split."
}

func (r *results) goals() []goal {
	var g []goal
	tu, bu := r.target("toolgate-unary"), r.target("bare-unary")
	if tu != nil && bu != nil && bu.RPS > 0 {
		ratio := tu.RPS / bu.RPS
		g = append(g, goal{
			What:     fmt.Sprintf("local-path unary requests/s at least %.0f%% of the bare server's, %d callers", goalUnaryRatio*100, tu.Concurrency),
			Measured: fmt.Sprintf("%.0f%% (%s vs %s requests/s)", ratio*100, count(tu.RPS), count(bu.RPS)),
			Met:      ratio >= goalUnaryRatio,
			Why:      unaryRatioWhy(tu, bu, r.ServerCores),
		})
	}
	for _, id := range []string{"toolgate-unary", "toolgate-unary-light"} {
		t := r.target(id)
		if t == nil {
			continue
		}
		m := fmt.Sprintf("p99 %s", ms(t.P99))
		if b := r.target(strings.Replace(id, "toolgate", "bare", 1)); b != nil {
			m += fmt.Sprintf(" (bare server: %s)", ms(b.P99))
		}
		why := ""
		if b := r.target(strings.Replace(id, "toolgate", "bare", 1)); b != nil && t.RPS > 0 {
			why = fmt.Sprintf("%d callers in a closed loop keep the server's core busy, so a call mostly waits its turn: "+
				"the mean latency is callers ÷ throughput (%s here), and the bare server's own p99 is %s at the same load. "+
				"The tail follows the CPU per check (see the throughput target).",
				t.Concurrency, ms(time.Duration(float64(t.Concurrency)/t.RPS*float64(time.Second))), ms(b.P99))
		}
		g = append(g, goal{
			What:     fmt.Sprintf("local decisions p99 under %s, %d callers", ms(goalP99), t.Concurrency),
			Measured: m,
			Met:      t.P99 < goalP99,
			Why:      why,
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
	g = append(g, goal{What: "zero errors (every toolgate run)", Measured: m, Met: errs == 0})
	var peak int64
	peakID := ""
	for _, t := range r.Targets {
		if t.Server != serverBare && t.PeakRSSKB > peak {
			peak, peakID = t.PeakRSSKB, t.ID
		}
	}
	if peakID != "" {
		g = append(g, goal{
			What:     fmt.Sprintf("peak RSS under %d MB", goalPeakRSSKB>>10),
			Measured: fmt.Sprintf("%s at most (%s)", mb(peak), peakID),
			Met:      peak < goalPeakRSSKB,
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
	p("- The bare server (bench/bareserver) serves the same proto with a constant answer: the transport's limit on this machine.\n\n")

	p("## Targets (issue 7)\n\n| target | measured | |\n|---|---|---|\n")
	var whys []string
	for _, g := range r.goals() {
		p("| %s | %s | %s |\n", g.What, g.Measured, metWord(g.Met))
		if !g.Met && g.Why != "" {
			whys = append(whys, fmt.Sprintf("- **%s**: %s", g.What, g.Why))
		}
	}
	p("\n")
	if len(whys) > 0 {
		p("Why the misses:\n\n%s\n\n", strings.Join(whys, "\n"))
	}

	p("## toolgate against the limit\n\n| | toolgate | bare server | toolgate / bare |\n|---|---|---|---|\n")
	pairs := []struct{ label, tg, bare string }{
		{"unary requests/s, %d callers", "toolgate-unary", "bare-unary"},
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
		fmt.Fprintf(&b, "%-8s %s: %s\n", strings.Trim(metWord(g.Met), "*"), g.What, g.Measured)
	}
	return b.String()
}
