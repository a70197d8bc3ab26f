package app

import (
	"net"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/toolgate/toolgate/config"
	pb "github.com/toolgate/toolgate/gen/toolgate/v1"
	"github.com/toolgate/toolgate/upstream"
)

// scriptedCentre serves WatchPolicies from a script: each stream gets
// the newest document given, and each one given after.
type scriptedCentre struct {
	pb.UnimplementedUpstreamServiceServer
	mu      sync.Mutex
	doc     []byte
	changed chan struct{} // closed and replaced at each new document
}

// startScriptedCentre serves a centre that sends first, then each
// document given to send; it is stopped when the test ends.
func startScriptedCentre(t *testing.T, first []byte) (addr string, send func([]byte)) {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	c := &scriptedCentre{doc: first, changed: make(chan struct{})}
	s := grpc.NewServer()
	pb.RegisterUpstreamServiceServer(s, c)
	go func() { _ = s.Serve(lis) }()
	t.Cleanup(s.Stop)
	return lis.Addr().String(), func(doc []byte) {
		c.mu.Lock()
		defer c.mu.Unlock()
		c.doc = doc
		close(c.changed)
		c.changed = make(chan struct{})
	}
}

func (c *scriptedCentre) WatchPolicies(_ *pb.WatchPoliciesRequest, s grpc.ServerStreamingServer[pb.WatchPoliciesResponse]) error {
	for {
		c.mu.Lock()
		doc, changed := c.doc, c.changed
		c.mu.Unlock()
		if err := s.Send(&pb.WatchPoliciesResponse{PolicySet: &pb.PolicySet{Version: upstream.Version(doc), Document: doc}}); err != nil {
			return err
		}
		select {
		case <-s.Context().Done():
			return nil
		case <-changed:
		}
	}
}

// TestCentreEncodingOtherThanOurs: a centre whose encoder writes the
// served form otherwise than this build (flow style, another order) has
// its set put in force under the version it sent, the hash of those
// bytes, at start and for every later set.
func TestCentreEncodingOtherThanOurs(t *testing.T) {
	a := []byte("policies: {default: {permissions: {deny: [\"Bash(make deploy)\"]}}}\n")
	b := []byte("policies: {default: {permissions: {deny: [\"Bash(make deploy)\", \"Bash(make release)\"]}}}\n")
	addr, send := startScriptedCentre(t, a)
	local := startServedLocal(t, addr, filepath.Join(t.TempDir(), "state"))
	dir := t.TempDir()
	check := func(cmd string) *pb.CheckResponse {
		t.Helper()
		res, err := local.client.Check(t.Context(), &pb.CheckRequest{Tool: tool(t, "Bash", map[string]any{"command": cmd}), WorkingDirectory: dir})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	if res := check("make deploy"); res.GetDecision() != pb.Decision_DECISION_DENY || res.GetPolicyVersion() != upstream.Version(a) {
		t.Fatalf("at start: %v, version %s, want %s", res.GetDecision(), res.GetPolicyVersion(), upstream.Version(a))
	}
	send(b)
	waitFor(t, "the centre's second set", func() bool {
		res := check("make release")
		return res.GetDecision() == pb.Decision_DECISION_DENY && res.GetPolicyVersion() == upstream.Version(b)
	})
	if strings.Contains(local.logs.String(), "refused") {
		t.Errorf("a set was refused:\n%s", grep(local.logs.String(), "refused"))
	}
}

// TestPolicySetRefusedAtStartIsCounted: a set the local server refuses at
// start (its rule does not compile) is counted as the watch counts one,
// and logged once however often the centre sends it again.
func TestPolicySetRefusedAtStartIsCounted(t *testing.T) {
	addr, _ := startScriptedCentre(t, []byte(policyBadRule))
	cfg, err := LoadConfig("")
	if err != nil {
		t.Fatal(err)
	}
	local := start(t, cfg, WithOverrides(func(c *Config) error {
		c.Server.Listen, c.Server.MetricsListen = "127.0.0.1:0", "127.0.0.1:0"
		c.Upstream.Address = addr
		return nil
	}))
	const refused = `toolgate_upstream_policy_updates_total{result="refused"} `
	first := strings.TrimSpace(grep(scrape(t, local.app.MetricsAddr().String()), refused))
	if !strings.HasPrefix(first, refused) || first == refused+"0" {
		t.Fatalf("refusal at start not counted: %q", first)
	}
	// The watch is sent the same set again, and refuses it again.
	waitFor(t, "the watch's refusal", func() bool {
		return strings.TrimSpace(grep(scrape(t, local.app.MetricsAddr().String()), refused)) != first
	})
	if n := strings.Count(local.logs.String(), "policy set from the upstream refused"); n != 1 {
		t.Errorf("the refused set was logged %d times:\n%s", n, grep(local.logs.String(), "refused"))
	}
}

// TestStateFromAnotherUpstream: a kept set received from another upstream
// than the one configured is used (the centre is down), with a warning
// naming both.
func TestStateFromAnotherUpstream(t *testing.T) {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := lis.Addr().String()
	lis.Close()
	state := filepath.Join(t.TempDir(), "state")
	doc := "policies:\n  default:\n    permissions: {deny: [\"Bash(make deploy)\"]}\n"
	if err := upstream.SaveState(state, &upstream.Saved{Version: upstream.Version([]byte(doc)), Upstream: "elsewhere.example:7000", Received: time.Now(), Document: doc}); err != nil {
		t.Fatal(err)
	}
	cfg, err := LoadConfig("")
	if err != nil {
		t.Fatal(err)
	}
	local := start(t, cfg, WithOverrides(func(c *Config) error {
		c.Server.Listen, c.Server.MetricsListen = "127.0.0.1:0", ""
		c.Upstream.Address, c.Upstream.StateDir, c.Upstream.Timeout = dead, state, time.Second
		return nil
	}))
	res, err := local.client.Check(t.Context(), &pb.CheckRequest{Tool: tool(t, "Bash", map[string]any{"command": "make deploy"}), WorkingDirectory: t.TempDir()})
	if err != nil || res.GetPolicyVersion() != upstream.Version([]byte(doc)) {
		t.Fatalf("the kept set is not in force: %v %v", res, err)
	}
	line := grep(local.logs.String(), "came from another upstream")
	if !strings.Contains(line, "elsewhere.example:7000") || !strings.Contains(line, dead) {
		t.Errorf("no warning naming both upstreams:\n%s", local.logs.String())
	}
}

// TestLocalServerOffersNoUpstreamService: a local server is no centre:
// its own callers cannot use it to relay Classify or WatchPolicies to
// its upstream with its credentials (Unimplemented); the centre offers
// both.
func TestLocalServerOffersNoUpstreamService(t *testing.T) {
	centre := start(t, loadConfig(t, configFile(t, t.TempDir(), localOnly+policyDenyMake)))
	local := startServedLocal(t, centre.app.Addr().String(), filepath.Join(t.TempDir(), "state"))
	up := pb.NewUpstreamServiceClient(local.conn)
	_, err := up.Classify(t.Context(), &pb.ClassifyRequest{Check: &pb.CheckRequest{Tool: tool(t, "Bash", map[string]any{"command": "make deploy"}), WorkingDirectory: t.TempDir()}})
	if status.Code(err) != codes.Unimplemented {
		t.Errorf("Classify at the local server: %v, want Unimplemented", err)
	}
	ws, err := up.WatchPolicies(t.Context(), &pb.WatchPoliciesRequest{})
	if err == nil {
		_, err = ws.Recv()
	}
	if status.Code(err) != codes.Unimplemented {
		t.Errorf("WatchPolicies at the local server: %v, want Unimplemented", err)
	}
	ws, err = pb.NewUpstreamServiceClient(centre.conn).WatchPolicies(t.Context(), &pb.WatchPoliciesRequest{})
	if err == nil {
		_, err = ws.Recv()
	}
	if err != nil {
		t.Errorf("WatchPolicies at the centre: %v", err)
	}
}

// TestServedBoundsAgree: the watch's cap on a document (checked before
// hashing) and the config's (checked before parsing) are one bound, and a
// message from the centre can carry a document of that size.
func TestServedBoundsAgree(t *testing.T) {
	if upstream.MaxDocumentBytes != config.MaxServedBytes || upstream.MaxRecvMsgBytes <= upstream.MaxDocumentBytes {
		t.Errorf("upstream caps a document at %d bytes and a message at %d, config at %d", upstream.MaxDocumentBytes, upstream.MaxRecvMsgBytes, config.MaxServedBytes)
	}
}
