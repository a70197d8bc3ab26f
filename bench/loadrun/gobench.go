package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"regexp"
	"runtime"
	"strconv"
	"strings"
)

// goBench is one Go benchmark's figures.
type goBench struct {
	Pkg, Name   string
	NsPerOp     float64
	BytesPerOp  int64
	AllocsPerOp int64
}

// goBenchPkgs are the packages with benchmarks of the decision path.
var goBenchPkgs = []string{"./engine/...", "./bench/"}

func (h *harness) goBenchmarks(ctx context.Context, benchtime string) ([]goBench, error) {
	args := append([]string{"test", "-run", "^$", "-bench", ".", "-benchmem", "-benchtime", benchtime, "-count", "1"}, goBenchPkgs...)
	cmd := exec.CommandContext(ctx, "go", args...)
	cmd.Dir = h.root
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	benches, perr := parseGoBench(io.TeeReader(out, os.Stderr))
	if err := cmd.Wait(); err != nil {
		return nil, fmt.Errorf("go test -bench: %w", err)
	}
	return benches, perr
}

var benchLine = regexp.MustCompile(`^(Benchmark\S+?)(-\d+)?\s+\d+\s+([\d.]+) ns/op(?:\s+(\d+) B/op\s+(\d+) allocs/op)?`)

// parseGoBench reads go test -bench output.
func parseGoBench(r io.Reader) ([]goBench, error) {
	var out []goBench
	pkg := ""
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		line := sc.Text()
		if p, ok := strings.CutPrefix(line, "pkg: "); ok {
			pkg = strings.TrimPrefix(strings.TrimSpace(p), "github.com/toolgate/toolgate/")
			continue
		}
		m := benchLine.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		b := goBench{Pkg: pkg, Name: strings.TrimPrefix(m[1], "Benchmark")}
		var err error
		if b.NsPerOp, err = strconv.ParseFloat(m[3], 64); err != nil {
			return nil, err
		}
		if m[4] != "" {
			b.BytesPerOp, _ = strconv.ParseInt(m[4], 10, 64)
			b.AllocsPerOp, _ = strconv.ParseInt(m[5], 10, 64)
		}
		out = append(out, b)
	}
	return out, sc.Err()
}

// describeMachine names the machine the figures come from.
func describeMachine() string {
	model := "unknown CPU"
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		model = cpuModel(string(b))
	}
	gover := runtime.Version()
	if out, err := exec.Command("go", "env", "GOVERSION").Output(); err == nil {
		gover = strings.TrimSpace(string(out))
	}
	return fmt.Sprintf("%d CPUs (nproc), %s, %s, %s/%s", runtime.NumCPU(), model, gover, runtime.GOOS, runtime.GOARCH)
}

func cpuModel(cpuinfo string) string {
	for _, line := range strings.Split(cpuinfo, "\n") {
		if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return "unknown CPU"
}
