package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"
)

// load is one ghz run's settings. Every target of make bench is driven
// with the same ones (except where a target says otherwise), so that the
// figures compare as ratios.
type load struct {
	method string // "Check" or "CheckStream"
	data   string // JSON call data file
	// dataFor, when set, makes the call data for each run instead: calls
	// meant to reach the classifier must differ from one run to the next.
	dataFor     func(run string) ([]byte, error)
	concurrency int
	duration    time.Duration
	streamCount int // messages per stream (CheckStream)
	rps         int // 0: as fast as the server answers
}

// ghzReport is the part of ghz's JSON report the harness reads.
type ghzReport struct {
	Count               uint64         `json:"count"`
	Total               time.Duration  `json:"total"`
	Average             time.Duration  `json:"average"`
	Fastest             time.Duration  `json:"fastest"`
	Slowest             time.Duration  `json:"slowest"`
	RPS                 float64        `json:"rps"`
	ErrorDist           map[string]int `json:"errorDistribution"`
	StatusCodeDist      map[string]int `json:"statusCodeDistribution"`
	LatencyDistribution []struct {
		Percentage int           `json:"percentage"`
		Latency    time.Duration `json:"latency"`
	} `json:"latencyDistribution"`
}

func parseGhzReport(b []byte) (*ghzReport, error) {
	var r ghzReport
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, fmt.Errorf("ghz report: %w", err)
	}
	if r.Count == 0 {
		return nil, fmt.Errorf("ghz report: no calls made (errors: %v)", r.ErrorDist)
	}
	return &r, nil
}

// percentile returns the latency at p percent, or false when ghz did not
// report it.
func (r *ghzReport) percentile(p int) (time.Duration, bool) {
	for _, l := range r.LatencyDistribution {
		if l.Percentage == p {
			return l.Latency, true
		}
	}
	return 0, false
}

// errors counts the calls that did not end with OK.
func (r *ghzReport) errors() uint64 {
	var n uint64
	for code, c := range r.StatusCodeDist {
		if code != "OK" {
			n += uint64(c)
		}
	}
	// Calls that failed before a status (dial, deadline on the client).
	if sum := sumCounts(r.StatusCodeDist); sum < r.Count {
		n += r.Count - sum
	}
	return n
}

func sumCounts(m map[string]int) uint64 {
	var n uint64
	for _, c := range m {
		n += uint64(c)
	}
	return n
}

// errorSummary lists the error messages, most frequent first.
func (r *ghzReport) errorSummary() string {
	type kv struct {
		k string
		v int
	}
	var l []kv
	for k, v := range r.ErrorDist {
		l = append(l, kv{k, v})
	}
	sort.Slice(l, func(i, j int) bool { return l[i].v > l[j].v || l[i].v == l[j].v && l[i].k < l[j].k })
	var parts []string
	for _, e := range l {
		parts = append(parts, fmt.Sprintf("%d× %s", e.v, e.k))
	}
	return strings.Join(parts, "; ")
}

// ghzArgs are the ghz flags for one run against addr, reporting JSON to
// out.
func (h *harness) ghzArgs(addr string, l load, out string) []string {
	args := []string{
		"--insecure",
		"--proto", filepath.Join(h.root, "proto/toolgate/v1/permission.proto"),
		"--import-paths", filepath.Join(h.root, "proto"),
		"--call", "toolgate.v1.PermissionService/" + l.method,
		"--data-file", l.data,
		"--concurrency", strconv.Itoa(l.concurrency),
		"--connections", "1",
		"--duration", l.duration.String(),
		// Calls in flight when the time is up finish and count: cutting
		// them would show up as errors that the server did not make.
		"--duration-stop", "wait",
		"--timeout", "20s",
		"--format", "json",
		"--output", out,
	}
	if h.pin.enabled {
		args = append(args, "--cpus", strconv.Itoa(len(h.pin.load)))
	}
	if l.streamCount > 0 {
		args = append(args, "--stream-call-count", strconv.Itoa(l.streamCount))
	}
	if l.rps > 0 {
		args = append(args, "--rps", strconv.Itoa(l.rps))
	}
	return append(args, addr)
}

// runGhz runs ghz against addr and returns its report.
func (h *harness) runGhz(ctx context.Context, addr string, l load, name string) (*ghzReport, error) {
	out := filepath.Join(h.work, name+".ghz.json")
	if l.dataFor != nil {
		b, err := l.dataFor(name)
		if err != nil {
			return nil, err
		}
		l.data = filepath.Join(h.work, name+".data.json")
		if err := os.WriteFile(l.data, b, 0o644); err != nil {
			return nil, err
		}
	}
	cmd := h.pin.command(ctx, h.pin.load, h.ghz, h.ghzArgs(addr, l, out)...)
	var stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stderr, &stderr
	if err := cmd.Run(); err != nil {
		if ee, ok := err.(*exec.ExitError); ok && ee.ExitCode() > 0 {
			// ghz exits 1 when calls failed; the report says which.
			if b, rerr := os.ReadFile(out); rerr == nil {
				return parseGhzReport(b)
			}
		}
		return nil, fmt.Errorf("ghz %s: %w: %s", name, err, strings.TrimSpace(stderr.String()))
	}
	b, err := os.ReadFile(out)
	if err != nil {
		return nil, err
	}
	return parseGhzReport(b)
}
