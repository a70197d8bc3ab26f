package main

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/toolgate/toolgate/fakellm"
)

// TestServeWithClassifier runs serve --classifier-url/--classifier-model
// against the fake and checks that verdicts are obeyed and every fault
// fails closed.
func TestServeWithClassifier(t *testing.T) {
	fake := fakellm.Start(t, func(r *fakellm.Request) fakellm.Reply {
		if strings.Contains(r.User, "terraform apply") {
			return fakellm.Reply{Block: true, Reason: "production deploy"}
		}
		return fakellm.Reply{Reason: "routine"}
	})
	addr := startServe(t, "--classifier-url", fake.URL(), "--classifier-model", "m")

	check := func(t *testing.T, command string) (int, map[string]any) {
		t.Helper()
		var out, errOut bytes.Buffer
		code := run(t.Context(), []string{"check", "--addr", addr, "--tool", "Bash", "--input", `{"command":"` + command + `"}`, "--timeout", "20s"}, &out, &errOut)
		var resp map[string]any
		if err := json.Unmarshal(out.Bytes(), &resp); err != nil {
			t.Fatalf("exit %d, output %q %q", code, out.String(), errOut.String())
		}
		return code, resp
	}

	code, resp := check(t, "terraform apply -auto-approve")
	if code != exitDeny || resp["source"] != "DECISION_SOURCE_CLASSIFIER" || resp["reason"] != "production deploy" {
		t.Fatalf("block: exit %d %v", code, resp)
	}
	code, resp = check(t, "make build")
	if code != exitAllow || resp["source"] != "DECISION_SOURCE_CLASSIFIER" {
		t.Fatalf("allow: exit %d %v", code, resp)
	}
	reqs := fake.Requests()
	if len(reqs) != 2 || reqs[0].Tool != "classify_result" || reqs[0].Model != "m" {
		t.Fatalf("upstream requests: %d, first forced %q model %q", len(reqs), reqs[0].Tool, reqs[0].Model)
	}

	for _, fault := range fakellm.Faults {
		t.Run(string(fault), func(t *testing.T) {
			// A server per fault, so that no breaker opened by an earlier
			// fault hides this one.
			faulty := fakellm.Start(t, fakellm.Always(fakellm.Reply{Fault: fault, RetryAfter: -1}))
			addr := startServe(t, "--classifier-url", faulty.URL(), "--classifier-model", "m")
			start := time.Now()
			var out, errOut bytes.Buffer
			code := run(t.Context(), []string{"check", "--addr", addr, "--tool", "Bash", "--input", `{"command":"make deploy"}`, "--timeout", "20s"}, &out, &errOut)
			var resp map[string]any
			if err := json.Unmarshal(out.Bytes(), &resp); err != nil {
				t.Fatalf("exit %d, output %q %q", code, out.String(), errOut.String())
			}
			if code != exitDeny || resp["source"] != "DECISION_SOURCE_CLASSIFIER_UNAVAILABLE" {
				t.Fatalf("exit %d %v", code, resp)
			}
			if want := faultReason[fault]; !strings.Contains(resp["reason"].(string), want) {
				t.Errorf("reason %q does not name the fault (%q)", resp["reason"], want)
			}
			if faulty.Count() == 0 {
				t.Error("the fake was never asked")
			}
			// The default classifier deadline is 5s; a generous bound.
			if d := time.Since(start); d > 8*time.Second {
				t.Errorf("took %s", d)
			}
		})
	}
}

// faultReason is what a deny reason says for each fault.
var faultReason = map[fakellm.Fault]string{
	fakellm.FaultRateLimit:   "HTTP 429",
	fakellm.FaultServerError: "HTTP 500",
	fakellm.FaultBadRequest:  "HTTP 400",
	fakellm.FaultHang:        "within",
	fakellm.FaultReset:       "transport",
	fakellm.FaultNoToolCall:  "no classify_result call",
	fakellm.FaultMalformed:   "not a JSON object",
	fakellm.FaultWrongSchema: "do not match the schema",
}
