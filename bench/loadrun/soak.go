package main

import (
	"bufio"
	"context"
	"fmt"
	"maps"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/toolgate/toolgate/bench/workload"
)

// soakWindow is one measured window of a soak run.
type soakWindow struct {
	End           time.Duration // since the soak started
	Count         uint64
	RPS           float64
	P50, P99      time.Duration
	Errors        uint64
	RSSKB, HWMKB  int64
	CPUPerCheck   time.Duration
	Goroutines    float64 // from /metrics; -1 when not served
	HeapInuseMB   float64 // from /metrics; -1 when not served
	ErrorsSummary string
}

// soak runs the mixed load at a fixed rate for total, window by window,
// against one toolgate with the fake model behind it, and reports drift.
func (h *harness) soak(ctx context.Context, total, window time.Duration, rate int, out string) error {
	if window <= 0 || total < window {
		return fmt.Errorf("-soak %s must be at least one -window %s", total, window)
	}
	project, err := workload.NewProject(h.work)
	if err != nil {
		return err
	}
	spec := targetSpec{id: "soak", server: serverClassifier}
	srv, err := h.startServer(ctx, spec)
	if err != nil {
		return err
	}
	defer srv.stop()
	if err := validateLocal(ctx, srv.addr, project); err != nil {
		return err
	}
	if err := validateClassified(ctx, srv.addr, project); err != nil {
		return err
	}
	l := load{method: "Check", dataFor: classifiedData(project, true), concurrency: h.concurrency, duration: window, rps: rate}
	start := time.Now()
	var windows []soakWindow
	for i := 0; time.Since(start)+window <= total+window/2; i++ {
		if err := ctx.Err(); err != nil {
			break
		}
		cpu0, err := cpuTime(srv.main.pid())
		if err != nil {
			return err
		}
		rep, err := h.runGhz(ctx, srv.addr, l, fmt.Sprintf("soak-%03d", i))
		if err != nil {
			return err
		}
		cpu1, err := cpuTime(srv.main.pid())
		if err != nil {
			return err
		}
		hwm, rss, err := memStatus(srv.main.pid())
		if err != nil {
			return err
		}
		w := soakWindow{End: time.Since(start).Round(time.Second), Count: rep.Count, RPS: rep.RPS, Errors: rep.errors(),
			RSSKB: rss, HWMKB: hwm, ErrorsSummary: rep.errorSummary(), Goroutines: -1, HeapInuseMB: -1}
		w.P50, _ = rep.percentile(50)
		w.P99, _ = rep.percentile(99)
		if rep.Count > 0 {
			w.CPUPerCheck = (cpu1 - cpu0) / time.Duration(rep.Count)
		}
		if v, ok := metricValue(ctx, srv.metricsAddr, "go_goroutines"); ok {
			w.Goroutines = v
		}
		if v, ok := metricValue(ctx, srv.metricsAddr, "go_memstats_heap_inuse_bytes"); ok {
			w.HeapInuseMB = v / (1 << 20)
		}
		logf("soak window %d (%s): %.0f calls/s, p50 %s, p99 %s, %d errors, RSS %s, goroutines %.0f",
			i+1, w.End, w.RPS, ms(w.P50), ms(w.P99), w.Errors, mb(w.RSSKB), w.Goroutines)
		windows = append(windows, w)
	}
	if err := srv.main.stop(20 * time.Second); err != nil {
		return err
	}
	dl, err := countDecisions(srv.main.stdout)
	if err != nil {
		return err
	}
	md := soakMarkdown(time.Now().UTC(), describeMachine(), h.pin.why, l, h.latency, windows, dl.counts)
	if err := os.WriteFile(out, []byte(md), 0o644); err != nil {
		return err
	}
	logf("wrote %s", out)
	if len(windows) > 0 {
		fmt.Print(soakDrift(windows))
	}
	return nil
}

// metricValue reads one unlabelled sample from the metrics endpoint.
func metricValue(ctx context.Context, addr, name string) (float64, bool) {
	if addr == "" {
		return 0, false
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+"/metrics", nil)
	if err != nil {
		return 0, false
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, false
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), name+" "); ok {
			f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
			return f, err == nil
		}
	}
	return 0, false
}

// soakDrift compares the first window with the last.
func soakDrift(ws []soakWindow) string {
	first, last := ws[0], ws[len(ws)-1]
	pct := func(a, b float64) string {
		if a == 0 {
			return "n/a"
		}
		return fmt.Sprintf("%+.0f%%", (b-a)/a*100)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "| | first window | last window | drift |\n|---|---|---|---|\n")
	fmt.Fprintf(&b, "| p50 | %s | %s | %s |\n", ms(first.P50), ms(last.P50), pct(float64(first.P50), float64(last.P50)))
	fmt.Fprintf(&b, "| p99 | %s | %s | %s |\n", ms(first.P99), ms(last.P99), pct(float64(first.P99), float64(last.P99)))
	fmt.Fprintf(&b, "| RSS | %s | %s | %s |\n", mb(first.RSSKB), mb(last.RSSKB), pct(float64(first.RSSKB), float64(last.RSSKB)))
	fmt.Fprintf(&b, "| server CPU / check | %s | %s | %s |\n", us(first.CPUPerCheck), us(last.CPUPerCheck), pct(float64(first.CPUPerCheck), float64(last.CPUPerCheck)))
	if first.Goroutines >= 0 && last.Goroutines >= 0 {
		fmt.Fprintf(&b, "| goroutines | %.0f | %.0f | %s |\n", first.Goroutines, last.Goroutines, pct(first.Goroutines, last.Goroutines))
	}
	if first.HeapInuseMB >= 0 && last.HeapInuseMB >= 0 {
		fmt.Fprintf(&b, "| heap in use | %.1f MB | %.1f MB | %s |\n", first.HeapInuseMB, last.HeapInuseMB, pct(first.HeapInuseMB, last.HeapInuseMB))
	}
	return b.String()
}

func soakMarkdown(date time.Time, machine, pinning string, l load, latency time.Duration, ws []soakWindow, decisions map[string]int) string {
	var b strings.Builder
	p := func(format string, a ...any) { fmt.Fprintf(&b, format, a...) }
	p("# toolgate soak\n\nWritten by `make soak` (`bench/loadrun -soak`) on %s.\n\n", date.Format("2006-01-02 15:04 MST"))
	p("- Machine: %s.\n- CPU placement: %s.\n", machine, pinning)
	p("- Load: ghz at %d requests/s, %d callers, windows of %s; the local mix plus 1 call in 8 reaching `cmd/fakellm --latency %s`, each with a different command (no cache hits).\n\n", l.rps, l.concurrency, l.duration, latency)
	if len(ws) == 0 {
		p("No window completed.\n")
		return b.String()
	}
	p("## Drift\n\n%s\n", soakDrift(ws))
	p("## Windows\n\n| end | calls | calls/s | p50 | p99 | errors | server CPU / check | RSS | peak RSS | goroutines | heap in use |\n|---|---|---|---|---|---|---|---|---|---|---|\n")
	for _, w := range ws {
		g, hp := "n/a", "n/a"
		if w.Goroutines >= 0 {
			g = fmt.Sprintf("%.0f", w.Goroutines)
		}
		if w.HeapInuseMB >= 0 {
			hp = fmt.Sprintf("%.1f MB", w.HeapInuseMB)
		}
		p("| %s | %s | %s | %s | %s | %d | %s | %s | %s | %s | %s |\n", w.End, count(float64(w.Count)), count(w.RPS), ms(w.P50), ms(w.P99), w.Errors,
			us(w.CPUPerCheck), mb(w.RSSKB), mb(w.HWMKB), g, hp)
	}
	var errs []string
	for _, w := range ws {
		if w.Errors > 0 {
			errs = append(errs, fmt.Sprintf("%s: %s", w.End, w.ErrorsSummary))
		}
	}
	if len(errs) > 0 {
		p("\nErrors: %s.\n", strings.Join(errs, "; "))
	}
	if len(decisions) > 0 {
		p("\nDecisions in toolgate's log:")
		for _, k := range slices.Sorted(maps.Keys(decisions)) {
			p(" %s %s;", k, count(float64(decisions[k])))
		}
		p("\n")
	}
	return b.String()
}
