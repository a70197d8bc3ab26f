package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// hookTarget is issue 25's: a hook's round trip (process start, connect,
// check, answer) at most this many times a minimal Go program's start.
const hookTarget = 2.5

// hookResult is the hook's round trip against a minimal Go program's
// start, the runs interleaved so that both see the same machine.
type hookResult struct {
	Runs     int
	Pinning  string
	Rows     []hookRow
	Decision string // what the hook printed for the measured call
}

type hookRow struct {
	Label    string
	P50, P90 time.Duration
}

// ratio is row i's median over the minimal program's.
func (r *hookResult) ratio(i int) float64 {
	return float64(r.Rows[i].P50) / float64(max(1, r.Rows[0].P50))
}

// hookRoundTrip starts toolgate with its hook listener on TCP loopback
// and a Unix socket, then runs, in turn, the minimal program,
// toolgate-hook over each, and toolgate hook over gRPC, runs times each,
// every one fed a Claude Code PreToolUse input for a Read in a project
// (a safe tool: the decision is local and always ALLOW). The server runs
// on the server CPUs; the processes measured on the load CPUs.
func (h *harness) hookRoundTrip(ctx context.Context, runs int) (*hookResult, error) {
	project := filepath.Join(h.work, "hook-project")
	if err := os.MkdirAll(project, 0o755); err != nil {
		return nil, err
	}
	hookAddr, err := freeAddr()
	if err != nil {
		return nil, err
	}
	sock := filepath.Join(h.work, "hook.sock")
	cmd := h.pin.command(ctx, h.pin.server, h.bins.toolgate, "serve", "--listen", "127.0.0.1:0", "--metrics-listen", "off",
		"--hook-listen", hookAddr, "--hook-unix-socket", sock)
	p, err := startProc(cmd, "hook-server", h.work)
	if err != nil {
		return nil, err
	}
	defer func() { _ = p.stop(15 * time.Second) }()
	grpcAddr, err := p.waitLine(10*time.Second, servingAddr)
	if err != nil {
		return nil, err
	}
	if err := waitServing(ctx, grpcAddr, 10*time.Second); err != nil {
		return nil, err
	}
	input := fmt.Appendf(nil, `{"session_id":"bench","transcript_path":"","cwd":%q,"permission_mode":"default","hook_event_name":"PreToolUse","tool_name":"Read","tool_input":{"file_path":%q},"tool_use_id":"t1"}`,
		project, filepath.Join(project, "main.go"))
	rows := []struct {
		label string
		argv  []string
	}{
		{"minimal Go program (start, exit)", []string{h.bins.minimal}},
		{"toolgate-hook, TCP loopback", []string{h.bins.hook, "claude-code", "--addr", hookAddr}},
		{"toolgate-hook, Unix socket", []string{h.bins.hook, "claude-code", "--addr", "unix:" + sock}},
		{"toolgate hook (gRPC)", []string{h.bins.toolgate, "hook", "claude-code", "--addr", grpcAddr}},
	}
	env := append(os.Environ(), "CLAUDE_PROJECT_DIR="+project)
	res := &hookResult{Runs: runs, Pinning: "not pinned"}
	if h.pin.enabled {
		// Children inherit the harness's CPUs: pinned without taskset,
		// whose own exec would be counted in every run.
		restore, err := pinSelf(h.pin.load)
		if err != nil {
			return nil, err
		}
		defer restore()
		env = append(env, "GOMAXPROCS="+strconv.Itoa(len(h.pin.load)))
		res.Pinning = fmt.Sprintf("server on CPU %s, the processes measured on CPU %s (GOMAXPROCS=%d)", cpuList(h.pin.server), cpuList(h.pin.load), len(h.pin.load))
	}
	// Each must print an allow before it is measured.
	for _, r := range rows[1:] {
		out, err := runOnce(ctx, r.argv, env, input)
		if err != nil || !strings.Contains(string(out), `"permissionDecision":"allow"`) {
			return nil, fmt.Errorf("%s: %v, printed %q; want an allow", r.label, err, out)
		}
		res.Decision = strings.TrimSpace(string(out))
	}
	times := make([][]time.Duration, len(rows))
	for range runs {
		for i, r := range rows {
			start := time.Now()
			if _, err := runOnce(ctx, r.argv, env, input); err != nil {
				return nil, fmt.Errorf("%s: %w", r.label, err)
			}
			times[i] = append(times[i], time.Since(start))
		}
	}
	for i, r := range rows {
		slices.Sort(times[i])
		res.Rows = append(res.Rows, hookRow{Label: r.label, P50: times[i][len(times[i])/2], P90: times[i][len(times[i])*9/10]})
	}
	return res, nil
}

func runOnce(ctx context.Context, argv, env []string, input []byte) ([]byte, error) {
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Env = env
	cmd.Stdin = bytes.NewReader(input)
	var out bytes.Buffer
	cmd.Stdout = &out
	err := cmd.Run()
	return out.Bytes(), err
}

// pinSelf runs this process on cpus until restore is called.
func pinSelf(cpus []int) (restore func(), err error) {
	var old, set unix.CPUSet
	if err := unix.SchedGetaffinity(0, &old); err != nil {
		return nil, err
	}
	for _, c := range cpus {
		set.Set(c)
	}
	if err := unix.SchedSetaffinity(0, &set); err != nil {
		return nil, err
	}
	return func() { _ = unix.SchedSetaffinity(0, &old) }, nil
}

func (r *hookResult) markdown(p func(string, ...any)) {
	p("## Hook round trip (issue 25)\n\n")
	p("An agent starts its hook for every tool call. Each run is one process: started, fed a Claude Code `PreToolUse` input for a `Read` in a project on stdin, "+
		"connected, answered (ALLOW by the safe-tool stage) and exited; the minimal Go program (bench/minimal) only starts and exits. "+
		"toolgate-hook is built static (CGO_ENABLED=0), as make build and make install build it; toolgate as make build builds it. "+
		"%d runs of each, interleaved; %s.\n\n", r.Runs, r.Pinning)
	p("| | p50 | p90 | p50 / minimal |\n|---|---|---|---|\n")
	for i, row := range r.Rows {
		p("| %s | %s | %s | %.2f |\n", row.Label, ms(row.P50), ms(row.P90), r.ratio(i))
	}
	p("\n| target | measured | |\n|---|---|---|\n")
	p("| toolgate-hook's round trip (TCP loopback, the default) at most %.1f times a minimal Go program's start | %.2f times (%s vs %s) | %s |\n\n",
		hookTarget, r.ratio(1), ms(r.Rows[1].P50), ms(r.Rows[0].P50), metWord(r.ratio(1) <= hookTarget))
}

func (r *hookResult) summary() string {
	return fmt.Sprintf("%-8s issue 25: toolgate-hook round trip at most %.1f times a minimal Go program's start: %.2f times (%s vs %s)\n",
		strings.Trim(metWord(r.ratio(1) <= hookTarget), "*"), hookTarget, r.ratio(1), ms(r.Rows[1].P50), ms(r.Rows[0].P50))
}
