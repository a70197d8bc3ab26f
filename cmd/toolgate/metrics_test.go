package main

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/toolgate/toolgate/fakellm"
)

var metricsAddrRe = regexp.MustCompile(`"msg":"serving".*"metrics_addr":"([^"]*)"`)

// metricsAddr is the metrics address the "serving" line logged.
func metricsAddr(t *testing.T, logs func() string) string {
	t.Helper()
	m := metricsAddrRe.FindStringSubmatch(logs())
	if m == nil {
		t.Fatalf("no metrics_addr in the serving line:\n%s", logs())
	}
	return m[1]
}

// scrape fetches /metrics from addr.
func scrape(t *testing.T, addr string) string {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, "http://"+addr+"/metrics", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /metrics: %s\n%s", resp.Status, body)
	}
	return string(body)
}

// hasLine reports whether the exposition has this exact sample line.
func hasLine(exposition, line string) bool {
	return strings.Contains("\n"+exposition, "\n"+line+"\n")
}

func TestServeMetricsEndpoint(t *testing.T) {
	// startServeLogs passes --metrics-listen off first; the later flag wins.
	addr, logs := startServeLogs(t, "--metrics-listen", "127.0.0.1:0")
	maddr := metricsAddr(t, logs)
	if maddr == "off" || !strings.HasPrefix(maddr, "127.0.0.1:") {
		t.Fatalf("metrics_addr %q, want a loopback address", maddr)
	}
	before := scrape(t, maddr)
	if !hasLine(before, `toolgate_policy_reloads_total{result="failure"} 0`) {
		t.Errorf("reload counters not at zero before any reload")
	}
	for range 2 {
		if code, out, errOut := runCheck(t, "--addr", addr, "--tool", "Read", "--input", `{"file_path":"/usr/include/stdio.h"}`); code != exitAllow {
			t.Fatalf("check: exit %d %s %s", code, out, errOut)
		}
	}
	if code, out, errOut := runCheck(t, "--addr", addr, "--tool", "Bash", "--input", `{"command":"rm -rf /"}`); code != exitDeny {
		t.Fatalf("check: exit %d %s %s", code, out, errOut)
	}
	body := scrape(t, maddr)
	for _, line := range []string{
		`toolgate_decisions_total{decision="allow",source="safe_tool",tool_kind="read"} 2`,
		`toolgate_decisions_total{decision="deny",source="rule",tool_kind="shell"} 1`,
		`toolgate_decision_duration_seconds_count{source="safe_tool"} 2`,
		`grpc_server_handled_total{grpc_code="OK",grpc_method="Check",grpc_service="toolgate.v1.PermissionService",grpc_type="unary"} 3`,
		`toolgate_policy_reloads_total{result="success"} 0`,
	} {
		if !hasLine(body, line) {
			t.Errorf("missing %s", line)
		}
	}
	// The Go and process collectors are on the same registry.
	for _, name := range []string{"go_goroutines ", "process_cpu_seconds_total ", "# TYPE toolgate_decision_duration_seconds histogram"} {
		if !strings.Contains(body, name) {
			t.Errorf("no %q in the exposition", name)
		}
	}
	// Only GET /metrics is served.
	for _, c := range []struct {
		method, path string
		code         int
	}{
		{http.MethodGet, "/", http.StatusNotFound},
		{http.MethodGet, "/debug/pprof/", http.StatusNotFound},
		{http.MethodPost, "/metrics", http.StatusMethodNotAllowed},
	} {
		req, err := http.NewRequestWithContext(t.Context(), c.method, "http://"+maddr+c.path, nil)
		if err != nil {
			t.Fatal(err)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != c.code {
			t.Errorf("%s %s: %d, want %d", c.method, c.path, resp.StatusCode, c.code)
		}
	}
}

func TestServeMetricsOff(t *testing.T) {
	_, logs := startServeLogs(t)
	if got := metricsAddr(t, logs); got != "off" {
		t.Fatalf("metrics_addr %q with --metrics-listen off", got)
	}
}

func TestServeMetricsListenerTaken(t *testing.T) {
	taken := startServe(t) // a gRPC listener: its port is in use
	// Bounded, so that a serve that wrongly starts fails instead of hanging.
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	var out, errOut bytes.Buffer
	code := run(ctx, []string{"serve", "--listen", "127.0.0.1:0", "--metrics-listen", taken}, &out, &errOut)
	if code == 0 || !strings.Contains(errOut.String(), "--metrics-listen") {
		t.Fatalf("exit %d, stderr %q: want a startup error naming the flag", code, errOut.String())
	}
}

// Reloads are counted by result, and a reload that builds a new classifier
// records into the same classifier metrics (made once per process).
func TestServeMetricsReloadsAndClassifier(t *testing.T) {
	fake := fakellm.Start(t, nil)
	cls := "classifier:\n  backends:\n    - {name: fake, base_url: \"" + fake.URL() + "\", model: m}\n"
	path := filepath.Join(t.TempDir(), "toolgate.yaml")
	writeAtomically(t, path, cls+policyNoRules)
	addr, logs := startServeLogs(t, "--config", path, "--metrics-listen", "127.0.0.1:0")
	maddr := metricsAddr(t, logs)
	check := func(command string) {
		t.Helper()
		if code, out, errOut := runCheck(t, "--addr", addr, "--tool", "Bash", "--input", `{"command":"`+command+`"}`, "--timeout", "20s"); code != exitAllow {
			t.Fatalf("check %q: exit %d %s %s", command, code, out, errOut)
		}
	}
	check("make build")
	if body := scrape(t, maddr); !hasLine(body, `toolgate_classifier_requests_total{backend="fake",outcome="allow"} 1`) {
		t.Fatalf("classifier call not counted:\n%s", grepLines(body, "toolgate_classifier"))
	}

	// A bad file is refused and counted as a failure.
	writeAtomically(t, path, cls+policyBadRule)
	waitFor(t, "a failed reload to be counted", func() bool {
		return hasLine(scrape(t, maddr), `toolgate_policy_reloads_total{result="failure"} 1`)
	})
	// A new model rebuilds the classifier; the reload succeeds and the new
	// classifier counts into the same series.
	writeAtomically(t, path, strings.Replace(cls, "model: m", "model: n", 1)+policyNoRules)
	waitFor(t, "a successful reload to be counted", func() bool {
		return hasLine(scrape(t, maddr), `toolgate_policy_reloads_total{result="success"} 1`)
	})
	check("make test")
	body := scrape(t, maddr)
	for _, line := range []string{
		`toolgate_classifier_requests_total{backend="fake",outcome="allow"} 2`,
		`toolgate_classifier_inflight{backend="fake"} 0`,
		`toolgate_classifier_duration_seconds_count{backend="fake"} 2`,
		`toolgate_decisions_total{decision="allow",source="classifier",tool_kind="shell"} 2`,
		`toolgate_policy_reloads_total{result="failure"} 1`,
	} {
		if !hasLine(body, line) {
			t.Errorf("missing %s", line)
		}
	}
	if len(fake.Requests()) != 2 {
		t.Errorf("%d upstream requests, want 2", len(fake.Requests()))
	}
}

// grepLines keeps the lines containing s, for failure messages.
func grepLines(text, s string) string {
	var out []string
	for l := range strings.Lines(text) {
		if strings.Contains(l, s) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "")
}
