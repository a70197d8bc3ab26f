package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
)

// pinning splits the CPUs between the server under test and the load
// (ghz, and the fake model): on a shared two-core machine, letting them
// fight over both cores halves the server's throughput and makes figures
// meaningless (see NOTES.md).
type pinning struct {
	enabled      bool
	server, load []int
	why          string // how the CPUs were split, or why they were not
}

func planPinning(ncpu int, taskset string) pinning {
	switch {
	case taskset == "":
		return pinning{why: "not pinned: taskset (util-linux) is not installed; server and load share all CPUs"}
	case ncpu < 2:
		return pinning{why: "not pinned: one CPU only"}
	}
	p := pinning{enabled: true}
	half := ncpu / 2
	for i := range ncpu {
		if i < half {
			p.server = append(p.server, i)
		} else {
			p.load = append(p.load, i)
		}
	}
	p.why = fmt.Sprintf("pinned with taskset: servers on CPU %s (GOMAXPROCS=%d), ghz and the fake model on CPU %s (GOMAXPROCS=%d)",
		cpuList(p.server), len(p.server), cpuList(p.load), len(p.load))
	return p
}

func cpuList(cpus []int) string {
	s := make([]string, len(cpus))
	for i, c := range cpus {
		s[i] = strconv.Itoa(c)
	}
	return strings.Join(s, ",")
}

// command builds a command running on cpus (all CPUs when pinning is off).
func (p pinning) command(ctx context.Context, cpus []int, name string, args ...string) *exec.Cmd {
	var cmd *exec.Cmd
	if p.enabled {
		cmd = exec.CommandContext(ctx, "taskset", append([]string{"-c", cpuList(cpus), name}, args...)...)
		cmd.Env = append(os.Environ(), "GOMAXPROCS="+strconv.Itoa(len(cpus)))
	} else {
		cmd = exec.CommandContext(ctx, name, args...)
		cmd.Env = os.Environ()
	}
	// The harness stops its children itself, gracefully; the context only
	// guards against a harness that dies first.
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) }
	cmd.WaitDelay = 15 * time.Second
	return cmd
}

// proc is a server the harness started; its stdout goes to a file.
type proc struct {
	name   string
	cmd    *exec.Cmd
	stdout string
	done   chan error
}

func startProc(cmd *exec.Cmd, name, dir string) (*proc, error) {
	out := filepath.Join(dir, name+".stdout")
	f, err := os.Create(out)
	if err != nil {
		return nil, err
	}
	errf, err := os.Create(filepath.Join(dir, name+".stderr"))
	if err != nil {
		_ = f.Close()
		return nil, err
	}
	cmd.Stdout, cmd.Stderr = f, errf
	if err := cmd.Start(); err != nil {
		_ = f.Close()
		_ = errf.Close()
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	p := &proc{name: name, cmd: cmd, stdout: out, done: make(chan error, 1)}
	go func() {
		p.done <- cmd.Wait()
		_ = f.Close()
		_ = errf.Close()
	}()
	return p, nil
}

// pid is the server's own process id: taskset execs it, so the pid is the
// same.
func (p *proc) pid() int { return p.cmd.Process.Pid }

// waitLine polls the process's stdout until match finds what it wants in
// a line, the process exits or the timeout passes.
func (p *proc) waitLine(timeout time.Duration, match func(line string) (string, bool)) (string, error) {
	deadline := time.Now().Add(timeout)
	for {
		if v, ok := scanFile(p.stdout, match); ok {
			return v, nil
		}
		select {
		case err := <-p.done:
			p.done <- err
			return "", fmt.Errorf("%s exited before it was ready (%v); see %s and its .stderr", p.name, err, p.stdout)
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return "", fmt.Errorf("%s not ready after %s; see %s", p.name, timeout, p.stdout)
		}
	}
}

func scanFile(path string, match func(string) (string, bool)) (string, bool) {
	f, err := os.Open(path)
	if err != nil {
		return "", false
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		if v, ok := match(sc.Text()); ok {
			return v, true
		}
	}
	return "", false
}

// firstLine matches any non-empty line (bareserver and fakellm print
// their address first).
func firstLine(line string) (string, bool) {
	line = strings.TrimSpace(line)
	return line, line != ""
}

// servingAddr finds toolgate's "serving" log line and its address.
func servingAddr(line string) (string, bool) {
	var l struct {
		Msg  string `json:"msg"`
		Addr string `json:"addr"`
	}
	if json.Unmarshal([]byte(line), &l) != nil || l.Msg != "serving" || l.Addr == "" {
		return "", false
	}
	return l.Addr, true
}

// stop sends SIGTERM and waits for the exit, killing after the timeout.
func (p *proc) stop(timeout time.Duration) error {
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-p.done:
		p.done <- err
		return err
	case <-time.After(timeout):
		_ = p.cmd.Process.Kill()
		err := <-p.done
		p.done <- err
		return fmt.Errorf("%s did not stop within %s after SIGTERM; killed", p.name, timeout)
	}
}

// memStatus reads a process's peak and current resident set size (kB).
func memStatus(pid int) (hwm, rss int64, err error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, 0, err
	}
	return parseMemStatus(string(b))
}

func parseMemStatus(status string) (hwm, rss int64, err error) {
	found := 0
	for _, line := range strings.Split(status, "\n") {
		key, val, ok := strings.Cut(line, ":")
		if !ok || key != "VmHWM" && key != "VmRSS" {
			continue
		}
		f := strings.Fields(val)
		if len(f) != 2 || f[1] != "kB" {
			return 0, 0, fmt.Errorf("unexpected %s line %q", key, line)
		}
		n, err := strconv.ParseInt(f[0], 10, 64)
		if err != nil {
			return 0, 0, fmt.Errorf("%s: %w", key, err)
		}
		if key == "VmHWM" {
			hwm = n
		} else {
			rss = n
		}
		found++
	}
	if found != 2 {
		return 0, 0, errors.New("VmHWM or VmRSS missing from /proc/PID/status")
	}
	return hwm, rss, nil
}

// waitServing polls the gRPC health service until it reports SERVING.
func waitServing(ctx context.Context, addr string, timeout time.Duration) error {
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return err
	}
	defer conn.Close()
	hc := healthpb.NewHealthClient(conn)
	deadline := time.Now().Add(timeout)
	for {
		cctx, cancel := context.WithTimeout(ctx, time.Second)
		resp, err := hc.Check(cctx, &healthpb.HealthCheckRequest{})
		cancel()
		if err == nil && resp.GetStatus() == healthpb.HealthCheckResponse_SERVING {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s not SERVING after %s (last: %v, %v)", addr, timeout, resp.GetStatus(), err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// freeAddr returns a 127.0.0.1 address with a port that was free a moment
// ago (for listeners whose address the process does not report).
func freeAddr() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	addr := l.Addr().String()
	return addr, l.Close()
}

// clockTicks is USER_HZ, the unit of /proc/PID/stat times: 100 on every
// Linux architecture Go supports.
const clockTicks = 100

// cpuTime is the CPU time (user and system, all threads) a process has
// used so far.
func cpuTime(pid int) (time.Duration, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	return parseCPUTime(string(b))
}

func parseCPUTime(stat string) (time.Duration, error) {
	// The command name (field 2) may hold spaces; fields after it are
	// counted from its closing parenthesis.
	i := strings.LastIndexByte(stat, ')')
	if i < 0 {
		return 0, errors.New("malformed /proc/PID/stat")
	}
	f := strings.Fields(stat[i+1:])
	// f[0] is field 3 (state); utime and stime are fields 14 and 15.
	if len(f) < 13 {
		return 0, errors.New("short /proc/PID/stat")
	}
	var ticks int64
	for _, s := range f[11:13] {
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("/proc/PID/stat: %w", err)
		}
		ticks += n
	}
	return time.Duration(ticks) * time.Second / clockTicks, nil
}
