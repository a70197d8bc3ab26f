// Command loadrun is toolgate's load harness; make bench and make soak run
// it.
//
// In bench mode (the default) it builds toolgate, the bare server
// (bench/bareserver) and cmd/fakellm, runs the Go benchmarks, then starts
// each target on a free 127.0.0.1 port and drives it with ghz, always
// with the same settings, measuring requests/s, latency percentiles,
// errors and the server's peak RSS; it writes the figures, the ratios to
// the bare server and the issues' targets (met or missed) to -out. It also
// runs the local loads against toolgate served inside this process with a
// CPU profile, to split a check's CPU by component (split.go), and one
// unary load with tracing exported to a sink it serves (tracing.go).
//
//	go run ./bench/loadrun -ghz bin/ghz-v0.93.0 -out bench/results.md
//
// In soak mode (-soak DURATION) it runs the mixed load (local calls and
// calls that reach the fake model) at a fixed rate against one toolgate
// for the duration, in windows, and reports how latency and memory drift
// from the first window to the last.
//
// With -profile DIR, the local targets run against toolgate served inside
// this process (the same wiring, see bench/inproc) with CPU and heap
// profiles written to DIR, for go tool pprof.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"time"
)

type harness struct {
	root string // the module's directory
	work string // temporary directory: binaries, data, logs, reports
	ghz  string
	pin  pinning
	bins struct{ toolgate, bare, fakellm, self, hook, minimal string }

	concurrency int
	duration    time.Duration
	warmup      time.Duration
	streamCount int
	latency     time.Duration // the fake model's
	profileDir  string
	profiles    string // where serve-inproc writes profiles: profileDir, or under work
	workers     int    // profile mode: server.stream_workers of the in-process server, -1 for the default
}

func main() {
	if len(os.Args) > 1 && os.Args[1] == "serve-inproc" {
		if err := serveInproc(os.Args[2:]); err != nil {
			fmt.Fprintln(os.Stderr, "loadrun serve-inproc:", err)
			os.Exit(1)
		}
		return
	}
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "loadrun:", err)
		os.Exit(1)
	}
}

func run() error {
	h := &harness{}
	out := flag.String("out", "bench/results.md", "where to write the results (Markdown)")
	flag.StringVar(&h.ghz, "ghz", "bin/ghz-v0.93.0", "the ghz binary (make bench installs the pinned one)")
	flag.IntVar(&h.concurrency, "c", 50, "concurrent callers, the same for every target")
	flag.DurationVar(&h.duration, "duration", 10*time.Second, "measured time per target")
	flag.DurationVar(&h.warmup, "warmup", 2*time.Second, "unmeasured load before each measurement")
	flag.IntVar(&h.streamCount, "stream-count", 100, "checks sent on each stream of the CheckStream targets")
	flag.DurationVar(&h.latency, "latency", 50*time.Millisecond, "the fake model's latency")
	goBench := flag.Bool("gobench", true, "run the Go benchmarks too")
	benchtime := flag.String("benchtime", "500ms", "go test -benchtime for the Go benchmarks")
	keep := flag.Bool("keep", false, "keep the work directory (logs, ghz reports)")
	soak := flag.Duration("soak", 0, "soak mode: run the mixed load this long (for example 10m)")
	window := flag.Duration("window", 30*time.Second, "soak mode: length of one measured window")
	rate := flag.Int("rps", 400, "soak mode: requests per second (1 in 8 reaches the fake model)")
	flag.StringVar(&h.profileDir, "profile", "", "profile mode: serve toolgate in this process for the local targets and write cpu.pprof and heap.pprof here")
	hookRuns := flag.Int("hook-runs", 300, "processes started for each row of the hook round trip")
	hookOnly := flag.Bool("hook-only", false, "measure only the hook round trip (no Go benchmarks, no load)")
	flag.IntVar(&h.workers, "stream-workers", -1, "profile mode: serve with server.stream_workers N (0: a goroutine per RPC), to compare; -1 keeps the default")
	flag.Parse()
	if flag.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q", flag.Args())
	}

	var err error
	if h.root, err = moduleRoot(); err != nil {
		return err
	}
	if !filepath.IsAbs(*out) {
		*out = filepath.Join(h.root, *out)
	}
	if h.ghz, err = filepath.Abs(h.ghz); err != nil {
		return err
	}
	if _, err := os.Stat(h.ghz); err != nil && !*hookOnly {
		return fmt.Errorf("ghz: %w (make bench installs it)", err)
	}
	taskset, _ := exec.LookPath("taskset")
	h.pin = planPinning(runtime.NumCPU(), taskset)
	if h.work, err = os.MkdirTemp("", "toolgate-loadrun-"); err != nil {
		return err
	}
	h.profiles = h.profileDir
	if h.profiles == "" {
		h.profiles = filepath.Join(h.work, "profiles")
	}
	if *keep {
		fmt.Fprintln(os.Stderr, "work directory:", h.work)
	} else {
		defer os.RemoveAll(h.work)
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := h.build(ctx); err != nil {
		return err
	}
	if *soak > 0 {
		if *out == filepath.Join(h.root, "bench/results.md") {
			*out = filepath.Join(h.root, "bench/soak.md")
		}
		return h.soak(ctx, *soak, *window, *rate, *out)
	}

	res := &results{Date: time.Now().UTC(), Machine: describeMachine(), Pinning: h.pin.why, ServerCores: runtime.NumCPU(), Settings: h.settings(), Latency: h.latency}
	if h.pin.enabled {
		res.ServerCores = len(h.pin.server)
	}
	res.PoolSize, res.Queue = poolShape()
	if h.profileDir == "" {
		logf("hook round trip (%d runs of each)", *hookRuns)
		if res.Hook, err = h.hookRoundTrip(ctx, *hookRuns); err != nil {
			return err
		}
		if *hookOnly {
			*goBench = false
		}
	}
	if *goBench {
		logf("Go benchmarks (-benchtime %s)", *benchtime)
		if res.GoBench, err = h.goBenchmarks(ctx, *benchtime); err != nil {
			return err
		}
	}
	if !*hookOnly {
		if res.Targets, err = h.loadTargets(ctx); err != nil {
			return err
		}
	}
	if h.profileDir != "" {
		for _, t := range res.Targets {
			var parts []string
			perCheck := float64(t.cpuPerCheck()) / float64(time.Microsecond)
			for _, c := range splitCategories {
				parts = append(parts, fmt.Sprintf("%s %.1f µs (%.1f%%)", c, t.CPUSplit.share(c)*perCheck, t.CPUSplit.share(c)*100))
			}
			logf("%s CPU split (%.1f µs of server CPU per check, %.0f checks/s): %s", t.ID, perCheck, t.checksPerSecond(), strings.Join(parts, ", "))
		}
		logf("profiles written to %s (go tool pprof %s/inproc-unary.cpu.pprof)", h.profileDir, h.profileDir)
		return nil
	}
	md := res.markdown()
	if err := os.WriteFile(*out, []byte(md), 0o644); err != nil {
		return err
	}
	logf("wrote %s", *out)
	fmt.Print(res.summary())
	return nil
}

func logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "%s loadrun: %s\n", time.Now().Format("15:04:05"), fmt.Sprintf(format, args...))
}

func moduleRoot() (string, error) {
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		return "", fmt.Errorf("go env GOMOD: %w", err)
	}
	mod := strings.TrimSpace(string(out))
	if mod == "" || mod == os.DevNull {
		return "", errors.New("run loadrun inside the toolgate module")
	}
	return filepath.Dir(mod), nil
}

// build compiles the servers under test once, so that what is measured is
// a binary, not go run.
func (h *harness) build(ctx context.Context) error {
	h.bins.toolgate = filepath.Join(h.work, "toolgate")
	h.bins.bare = filepath.Join(h.work, "bareserver")
	h.bins.fakellm = filepath.Join(h.work, "fakellm")
	h.bins.self = filepath.Join(h.work, "loadrun")
	h.bins.hook = filepath.Join(h.work, "toolgate-hook")
	h.bins.minimal = filepath.Join(h.work, "minimal")
	for _, b := range []struct {
		out, pkg string
		env      []string
	}{
		{h.bins.toolgate, "./cmd/toolgate", nil},
		{h.bins.bare, "./bench/bareserver", nil},
		{h.bins.fakellm, "./cmd/fakellm", nil},
		{h.bins.self, "./bench/loadrun", nil},
		// Static, as make build and make install build it: the dynamic
		// loader alone would cost it about 1 ms per start.
		{h.bins.hook, "./cmd/toolgate-hook", []string{"CGO_ENABLED=0"}},
		{h.bins.minimal, "./bench/minimal", nil},
	} {
		logf("building %s", b.pkg)
		cmd := exec.CommandContext(ctx, "go", "build", "-o", b.out, b.pkg)
		cmd.Env = append(os.Environ(), b.env...)
		cmd.Dir = h.root
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("go build %s: %w\n%s", b.pkg, err, out)
		}
	}
	return nil
}

func (h *harness) settings() string {
	return fmt.Sprintf("ghz %s, --concurrency %d, --connections 1, %s measured after %s of warm-up, --duration-stop wait; "+
		"CheckStream targets send %d checks per stream",
		filepath.Base(h.ghz), h.concurrency, h.duration, h.warmup, h.streamCount)
}
