package deploy_test

// The central deployment as the local ones use it: the Deployment's
// command line serves TLS with the certificate of the toolgate-tls Secret
// and requires the tokens of toolgate-tokens; the sidecar's command line,
// with the CA and one of those tokens, reaches it and gets its answers; a
// wrong token is refused; the probes ask what the binary answers.

import (
	"bufio"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"io"
	"math/big"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/toolgate/toolgate/fakellm"
	pb "github.com/toolgate/toolgate/gen/toolgate/v1"
)

// documentedSANs are the names the comment of deployment.yaml tells the
// operator to put in the centre's certificate (the cert-manager
// Certificate's dnsNames). The tests issue the certificate with exactly
// these, so the comment is what is tested.
func documentedSANs(t *testing.T) []string {
	t.Helper()
	data, err := os.ReadFile("kubernetes/deployment.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var sans []string
	in := false
	item := regexp.MustCompile(`^#\s+-\s+(\S+)`)
	for line := range strings.Lines(string(data)) {
		if regexp.MustCompile(`^#\s+dnsNames:`).MatchString(line) {
			in = true
			continue
		}
		if !in {
			continue
		}
		m := item.FindStringSubmatch(line)
		if m == nil {
			break
		}
		sans = append(sans, m[1])
	}
	if len(sans) == 0 {
		t.Fatal("deployment.yaml's comment lists no dnsNames for the certificate")
	}
	return sans
}

// probePort is the container port a probe's httpGet names (by name or
// number).
func probePort(t *testing.T, c container, pr *probe) int {
	t.Helper()
	if n, err := strconv.Atoi(pr.HTTPGet.Port); err == nil {
		return n
	}
	return containerPort(t, c, pr.HTTPGet.Port)
}

// secretKey returns the Secret and the key within it that a file path of
// the container reads, through its volume mounts.
func secretKey(t *testing.T, pod podSpec, c container, p string) (secret, key string) {
	t.Helper()
	vol, mountPath, _, ok := c.under(p)
	if !ok {
		t.Fatalf("%s is on no volume mount", p)
	}
	for _, v := range pod.Volumes {
		if v.Name == vol && v.Secret != nil {
			rel, err := filepath.Rel(mountPath, p)
			if err != nil {
				t.Fatal(err)
			}
			return v.Secret.SecretName, rel
		}
	}
	t.Fatalf("%s is on volume %s, which is not a Secret", p, vol)
	return "", ""
}

// issue makes a CA and a server certificate it signed for the names (and
// 127.0.0.1 when ip), PEM encoded.
func issue(t *testing.T, names []string, ip bool) (caPEM, certPEM, keyPEM []byte) {
	t.Helper()
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	caTmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "toolgate centre test CA"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(time.Hour),
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	ca, err := x509.ParseCertificate(caDER)
	if err != nil {
		t.Fatal(err)
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(2),
		Subject:      pkix.Name{CommonName: names[0]},
		DNSNames:     names,
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	if ip {
		tmpl.IPAddresses = []net.IP{net.IPv4(127, 0, 0, 1)}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER}),
		pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER})
}

// testCentre is the central Deployment's command line made runnable here.
type testCentre struct {
	args, env []string
	caPath    string // the CA that issued its certificate
	token     string // a client's token in its token file
}

// newTestCentre prepares the Deployment's arguments: its config from the
// ConfigMap (the classifier's base_url set to baseURL unless empty), its
// TLS files and token file as the Secrets they come from would hold them
// (a certificate for the documented names, and 127.0.0.1 when ip), in a
// temporary directory, and listeners on free loopback ports.
func newTestCentre(t *testing.T, baseURL string, ip bool) *testCentre {
	t.Helper()
	m := loadManifests(t)
	_, spec, c := m.deployment(t)
	pod := spec.Template.Spec
	dir := t.TempDir()
	cfgPath := configFile(t, m, dir)
	if baseURL != "" {
		data, err := os.ReadFile(cfgPath)
		if err != nil {
			t.Fatal(err)
		}
		re := regexp.MustCompile(`(?m)^(\s*base_url:\s*)\S+`)
		if n := len(re.FindAllIndex(data, -1)); n != 1 {
			t.Fatalf("the ConfigMap's config has %d classifier base_url lines, want 1 to point at the fake model", n)
		}
		if err := os.WriteFile(cfgPath, re.ReplaceAll(data, []byte("${1}"+baseURL)), 0o600); err != nil {
			t.Fatal(err)
		}
	}

	caPEM, certPEM, keyPEM := issue(t, documentedSANs(t), ip)
	ctr := &testCentre{caPath: filepath.Join(dir, "ca.crt"), token: randomToken(t)}
	if err := os.WriteFile(ctr.caPath, caPEM, 0o644); err != nil {
		t.Fatal(err)
	}
	tokens := "# the local servers and clients of the test\nagent-pods " + ctr.token + "\nci-runner " + randomToken(t) + "\n"
	// What each Secret key holds; the Deployment decides which it reads.
	want := map[string]struct {
		secret, key string
		data        []byte
	}{
		"--tls-cert":   {"toolgate-tls", "tls.crt", certPEM}, // a kubernetes.io/tls Secret's keys
		"--tls-key":    {"toolgate-tls", "tls.key", keyPEM},
		"--token-file": {"toolgate-tokens", "", []byte(tokens)},
	}
	ctr.args = slices.Clone(c.Args)
	for i := 0; i+1 < len(ctr.args); i++ {
		v := &ctr.args[i+1]
		switch f := ctr.args[i]; f {
		case "--config":
			*v = cfgPath
		case "--listen", "--metrics-listen":
			*v = "127.0.0.1:0"
		case "--tls-cert", "--tls-key", "--token-file":
			w := want[f]
			secret, key := secretKey(t, pod, c, *v)
			if secret != w.secret || (w.key != "" && key != w.key) {
				t.Errorf("%s %s reads Secret %s key %s, want %s %s", f, *v, secret, key, w.secret, w.key)
			}
			p := filepath.Join(dir, secret, key)
			if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(p, w.data, 0o600); err != nil {
				t.Fatal(err)
			}
			*v = p
			delete(want, f)
		}
	}
	for f := range want {
		t.Errorf("the Deployment's args have no %s: the centre must serve TLS and require tokens", f)
	}
	for _, e := range c.Env {
		if e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil {
			ctr.env = append(ctr.env, e.Name+"=test-key-not-used")
		}
	}
	return ctr
}

func randomToken(t *testing.T) string {
	t.Helper()
	b := make([]byte, 24)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(b)
}

// served is a toolgate process serving, and where.
type served struct {
	addr, metricsAddr string
}

// startServe runs cmdline (the toolgate binary and its arguments, perhaps
// behind a wrapper that execs it) with the extra env until it logs
// "serving", and stops it with SIGTERM when the test ends, expecting a
// clean exit.
func startServe(t *testing.T, cmdline, env []string) served {
	t.Helper()
	// The timeout only keeps a server that neither serves nor exits from
	// hanging the test.
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	cmd := exec.CommandContext(ctx, cmdline[0], cmdline[1:]...)
	cmd.Env = append(cmd.Environ(), env...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	pr, pw := io.Pipe()
	cmd.Stdout = pw
	if err := cmd.Start(); err != nil {
		cancel()
		t.Fatal(err)
	}
	waited := make(chan error, 1)
	go func() {
		err := cmd.Wait()
		_ = pw.Close()
		waited <- err
	}()
	t.Cleanup(func() {
		defer cancel()
		if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
			t.Errorf("%s: %v", cmdline[0], err)
		}
		if err := <-waited; err != nil {
			t.Errorf("toolgate did not stop cleanly on SIGTERM: %v\n%s", err, stderr.String())
		}
	})
	var lines []string
	sc := bufio.NewScanner(pr)
	for sc.Scan() {
		lines = append(lines, sc.Text())
		var line struct {
			Msg         string `json:"msg"`
			Addr        string `json:"addr"`
			MetricsAddr string `json:"metrics_addr"`
		}
		if json.Unmarshal(sc.Bytes(), &line) == nil && line.Msg == "serving" {
			go func() { _, _ = io.Copy(io.Discard, pr) }()
			return served{addr: line.Addr, metricsAddr: line.MetricsAddr}
		}
	}
	err := <-waited
	waited <- err // for the cleanup
	t.Fatalf("%q did not serve (%v):\n%s\n%s", cmdline, err, strings.Join(lines, "\n"), stderr.String())
	return served{}
}

// hostsWrapper returns a command prefix that runs a program in a mount
// namespace of its own where /etc/hosts maps names to 127.0.0.1, or nil
// where that cannot be done (not root, no unshare): then the test dials
// 127.0.0.1 and cannot check the name in the certificate end to end.
func hostsWrapper(t *testing.T, names []string) []string {
	t.Helper()
	unshare, err := exec.LookPath("unshare")
	if err != nil || os.Geteuid() != 0 {
		return nil
	}
	hosts := filepath.Join(t.TempDir(), "hosts")
	if err := os.WriteFile(hosts, []byte("127.0.0.1 localhost "+strings.Join(names, " ")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	prefix := []string{unshare, "-m", "--propagation", "private", "sh", "-c", `mount --bind "$0" /etc/hosts && exec "$@"`, hosts}
	if out, err := exec.CommandContext(t.Context(), prefix[0], append(prefix[1:], "true")...).CombinedOutput(); err != nil {
		t.Logf("no mount namespace here (%v: %s); dialling 127.0.0.1", err, out)
		return nil
	}
	return prefix
}

// sidecarArgs is the sidecar's command line with its paths moved into a
// temporary directory, its upstream at upstream, and its CA and token
// file the given ones.
func sidecarArgs(t *testing.T, upstream, caPath, tokenPath string) []string {
	t.Helper()
	// A short directory: a socket's path holds 107 bytes.
	d, err := os.MkdirTemp("", "tg")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(d) })
	args := slices.Clone(sidecarPod(t).sidecar.Args)
	for i := 1; i+1 < len(args); i++ {
		v := &args[i+1]
		switch args[i] {
		case "--listen":
			*v = "127.0.0.1:0"
		case "--unix-socket":
			*v = filepath.Join(d, "toolgate.sock")
		case "--state-dir":
			*v = filepath.Join(d, "state")
			if err := os.Mkdir(*v, 0o700); err != nil {
				t.Fatal(err)
			}
		case "--upstream":
			*v = upstream
		case "--upstream-tls-ca":
			*v = caPath
		case "--upstream-token-file":
			*v = tokenPath
		}
	}
	return append(args, "--metrics-listen", "off")
}

// centreSays is the fake model's reason: a local answer carrying it came
// from the centre's classifier.
const centreSays = "fakellm: the centre's model blocks this"

// TestCentreServesTheSidecar runs the central Deployment's command line
// (TLS from toolgate-tls, tokens from toolgate-tokens, the ConfigMap's
// config with its classifier on the fake model) and the sidecar's
// (its upstream, CA and token pointed at that centre): a classifier-bound
// check sent to the sidecar is answered by the centre's classifier; a
// sidecar with a wrong token gets no answer from the centre and fails
// closed; the probes' paths answer on the running centre. Where a mount
// namespace is available the sidecar dials the centre by the very name in
// its --upstream, so the certificate's documented names are checked too.
func TestCentreServesTheSidecar(t *testing.T) {
	bin := toolgateBinary(t)
	fake := fakellm.Start(t, fakellm.Always(fakellm.Reply{Block: true, Reason: centreSays}))

	sideUp := flagValue(t, sidecarPod(t).sidecar.Args, "--upstream")
	upHost, _, err := net.SplitHostPort(sideUp)
	if err != nil {
		t.Fatalf("the sidecar's --upstream %s: %v", sideUp, err)
	}
	sans := documentedSANs(t)
	if !slices.Contains(sans, upHost) {
		t.Errorf("the sidecar dials %s, which is not among the certificate's documented dnsNames %q", upHost, sans)
	}
	wrap := hostsWrapper(t, []string{upHost})
	ctr := newTestCentre(t, fake.URL(), wrap == nil)
	centre := startServe(t, append([]string{bin}, ctr.args...), ctr.env)
	_, centrePort, err := net.SplitHostPort(centre.addr)
	if err != nil {
		t.Fatal(err)
	}
	if wrap == nil {
		upHost = "127.0.0.1"
	}
	upstream := net.JoinHostPort(upHost, centrePort)

	// The probes ask the running centre what the manifest says they ask.
	_, _, c := loadManifests(t).deployment(t)
	for name, pr := range map[string]*probe{"readinessProbe": c.ReadinessProbe, "livenessProbe": c.LivenessProbe} {
		if pr == nil || pr.HTTPGet == nil {
			t.Errorf("%s is not an httpGet probe", name)
			continue
		}
		// "serving" is logged as the listeners start serving, and the
		// health status turns SERVING just after: wait for the 200, as
		// the kubelet does.
		code := 0
		for deadline := time.Now().Add(10 * time.Second); code != http.StatusOK && time.Now().Before(deadline); {
			if code = httpStatus(t, "http://"+centre.metricsAddr+pr.HTTPGet.Path); code != http.StatusOK {
				time.Sleep(20 * time.Millisecond)
			}
		}
		if code != http.StatusOK {
			t.Errorf("%s: GET %s on the serving centre: %d, want 200", name, pr.HTTPGet.Path, code)
		}
	}

	project := t.TempDir()
	if err := os.WriteFile(filepath.Join(project, "package.json"), []byte(`{"name":"p","version":"1.0.0"}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	local := func(token string) served {
		tok := filepath.Join(t.TempDir(), "token")
		if err := os.WriteFile(tok, []byte(token+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		return startServe(t, slices.Concat(wrap, []string{bin}, sidecarArgs(t, upstream, ctr.caPath, tok)), nil)
	}

	good := local(ctr.token)
	resp := npmInstall(t, good.addr, project)
	if resp.GetSource() != pb.DecisionSource_DECISION_SOURCE_CLASSIFIER || !strings.Contains(resp.GetReason(), centreSays) {
		t.Errorf("through the sidecar: %v from %v (%q), want the centre's classifier's answer", resp.GetDecision(), resp.GetSource(), resp.GetReason())
	}
	if resp.GetDecision() == pb.Decision_DECISION_ALLOW {
		t.Errorf("the centre's model blocked, the sidecar answered ALLOW")
	}
	asked := fake.Count()
	if asked == 0 {
		t.Error("the fake model was never asked")
	}

	bad := local(randomToken(t))
	resp = npmInstall(t, bad.addr, project)
	if resp.GetSource() != pb.DecisionSource_DECISION_SOURCE_UPSTREAM_UNAVAILABLE || resp.GetDecision() == pb.Decision_DECISION_ALLOW {
		t.Errorf("with a wrong token: %v from %v (%q), want a fail-closed answer from upstream_unavailable", resp.GetDecision(), resp.GetSource(), resp.GetReason())
	}
	if !strings.Contains(resp.GetReason(), "Unauthenticated") {
		t.Errorf("with a wrong token: reason %q, want the centre's refusal (Unauthenticated), not another failure", resp.GetReason())
	}
	// The refusal came before the classifier: this check cost no model call.
	if n := fake.Count(); n != asked {
		t.Errorf("the fake model was asked %d times after the refused check, %d before", n, asked)
	}
}

// npmInstall asks the toolgate at addr (plaintext loopback, as the agent
// asks its sidecar) about `npm install left-pad` in project, a check no
// local stage decides.
func npmInstall(t *testing.T, addr, project string) *pb.CheckResponse {
	t.Helper()
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	in, err := structpb.NewStruct(map[string]any{"command": "npm install left-pad"})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	resp, err := pb.NewPermissionServiceClient(conn).Check(ctx, &pb.CheckRequest{
		SessionId:        "deploy-test",
		Tool:             &pb.ToolCall{Name: "Bash", Input: in},
		WorkingDirectory: project,
	})
	if err != nil {
		t.Fatalf("check through %s: %v", addr, err)
	}
	return resp
}

func httpStatus(t *testing.T, url string) int {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	return resp.StatusCode
}
