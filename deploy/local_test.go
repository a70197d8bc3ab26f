package deploy_test

// The local role's deployments: the systemd units and the launchd agent
// for a developer's machine or a CI runner, and the sidecar beside an
// agent's pod. Beyond parsing, they must keep what the server sees the
// agent's files (the same paths, nothing hidden or replaced), agree with
// the central deployment they forward to, and use only flags that
// `toolgate serve` accepts.

import (
	"bufio"
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"math/big"
	"net"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// The toolgate binary, built once for the tests that run it.
var built struct {
	once sync.Once
	dir  string
	path string
	err  error
}

func TestMain(m *testing.M) {
	code := m.Run()
	if built.dir != "" {
		_ = os.RemoveAll(built.dir)
	}
	os.Exit(code)
}

func toolgateBinary(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("builds the toolgate binary")
	}
	built.once.Do(func() {
		built.dir, built.err = os.MkdirTemp("", "toolgate-deploy-test-")
		if built.err != nil {
			return
		}
		built.path = filepath.Join(built.dir, "toolgate")
		out, err := exec.Command("go", "build", "-o", built.path, "github.com/toolgate/toolgate/cmd/toolgate").CombinedOutput()
		if err != nil {
			built.err = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if built.err != nil {
		t.Fatal(built.err)
	}
	return built.path
}

// serveFlags are the flags `toolgate serve -h` lists: name → takes a value.
func serveFlags(t *testing.T) map[string]bool {
	t.Helper()
	var out bytes.Buffer
	cmd := exec.CommandContext(t.Context(), toolgateBinary(t), "serve", "-h")
	cmd.Stdout, cmd.Stderr = &out, &out
	_ = cmd.Run() // -h may exit non-zero; the listing is what counts
	flags := map[string]bool{}
	sc := bufio.NewScanner(&out)
	for sc.Scan() {
		// flag.PrintDefaults: "  -name TYPE" (no TYPE for a bool), the
		// usage on the next line after a tab, or after one on this line.
		line, _, _ := strings.Cut(sc.Text(), "\t")
		if !strings.HasPrefix(line, "  -") {
			continue
		}
		f := strings.Fields(line)
		flags[strings.TrimPrefix(f[0], "-")] = len(f) > 1
	}
	if !flags["listen"] || !flags["unix-socket"] {
		t.Fatalf("toolgate serve -h lists no --listen or --unix-socket; cannot read its flags:\n%s", out.String())
	}
	return flags
}

// checkServeArgs returns what toolgate serve would refuse in a
// deployment's command line: a flag it does not have, a value missing, an
// argument that is not a flag.
func checkServeArgs(args []string, flags map[string]bool) (problems []string) {
	if len(args) == 0 || args[0] != "serve" {
		return []string{fmt.Sprintf("arguments %q do not start with serve", args)}
	}
	for i := 1; i < len(args); i++ {
		a := args[i]
		if !strings.HasPrefix(a, "-") {
			problems = append(problems, fmt.Sprintf("%q is not a flag, and serve takes no arguments", a))
			continue
		}
		name, _, hasValue := strings.Cut(strings.TrimPrefix(strings.TrimPrefix(a, "-"), "-"), "=")
		takesValue, ok := flags[name]
		if !ok {
			problems = append(problems, fmt.Sprintf("toolgate serve has no flag --%s", name))
			continue
		}
		if takesValue && !hasValue {
			if i+1 == len(args) {
				problems = append(problems, fmt.Sprintf("--%s has no value", name))
			}
			i++
		}
	}
	return problems
}

// localCommandLines are the local deployments' serve command lines, each
// without the program.
func localCommandLines(t *testing.T) map[string][]string {
	t.Helper()
	lines := map[string][]string{}
	for _, f := range []string{"systemd/toolgate.service", "systemd/toolgate@.service"} {
		lines[f] = execStart(t, readUnit(t, f))[1:]
	}
	lines["launchd/dev.toolgate.plist"] = launchdArgs(t)[1:]
	lines["kubernetes/sidecar"] = sidecarPod(t).sidecar.Args
	return lines
}

// A deployment's command line is checked against the binary: a flag that
// is renamed or dropped breaks this test, not a host's or a pod's start.
func TestDeploymentFlagsAreServeFlags(t *testing.T) {
	flags := serveFlags(t)
	lines := localCommandLines(t)
	_, _, central := loadManifests(t).deployment(t)
	lines["kubernetes (central)"] = central.Args
	for _, where := range slices.Sorted(maps.Keys(lines)) {
		for _, p := range checkServeArgs(lines[where], flags) {
			t.Errorf("%s: %s", where, p)
		}
	}
}

// TestCheckServeArgs shows that the check above catches what it is for.
func TestCheckServeArgs(t *testing.T) {
	flags := map[string]bool{"listen": true, "no-reflection": false}
	for _, tc := range []struct {
		args []string
		bad  bool
	}{
		{args: []string{"serve", "--listen", "127.0.0.1:1", "--no-reflection"}},
		{args: []string{"serve", "--listen=127.0.0.1:1", "-no-reflection"}},
		{args: []string{"serve", "--listn", "127.0.0.1:1"}, bad: true},
		{args: []string{"serve", "--listen"}, bad: true},
		{args: []string{"serve", "stray"}, bad: true},
		{args: []string{"serve", "--no-reflection", "stray"}, bad: true},
		{args: []string{"check", "--listen", "x"}, bad: true},
	} {
		if problems := checkServeArgs(tc.args, flags); (len(problems) > 0) != tc.bad {
			t.Errorf("%q: problems %q, want some: %v", tc.args, problems, tc.bad)
		}
	}
}

// TestLocalDeploymentsStartTheServer runs the binary with each local
// deployment's command line, its paths moved into a temporary directory
// (the upstream's CA and token made up, the environment file's address
// filled in, listeners on free ports), and checks that it serves, that
// its socket is its user's only, and that it stops cleanly. The centre is
// not there: a local server starts without it (it connects when a check
// needs it, and fails closed while it cannot).
func TestLocalDeploymentsStartTheServer(t *testing.T) {
	bin := toolgateBinary(t)
	dir := t.TempDir()
	ca := filepath.Join(dir, "ca.pem")
	if err := os.WriteFile(ca, testCA(t), 0o644); err != nil {
		t.Fatal(err)
	}
	token := filepath.Join(dir, "token")
	if err := os.WriteFile(token, []byte("deploy-test-token-0123456789\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	env := readEnvFile(t, "systemd/upstream.env")
	lines := localCommandLines(t)
	for _, where := range slices.Sorted(maps.Keys(lines)) {
		t.Run(strings.ReplaceAll(where, "/", "_"), func(t *testing.T) {
			// A short directory: a socket's path holds 107 bytes.
			d, err := os.MkdirTemp("", "tg")
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = os.RemoveAll(d) })
			args := slices.Clone(lines[where])
			sock := ""
			for i := 1; i+1 < len(args); i++ {
				v := &args[i+1]
				switch args[i] {
				case "--listen":
					*v = "127.0.0.1:0"
				case "--unix-socket":
					sock = filepath.Join(d, "toolgate.sock")
					*v = sock
				case "--state-dir":
					*v = filepath.Join(d, "state") // made by systemd, the install, or the emptyDir
					if err := os.Mkdir(*v, 0o700); err != nil {
						t.Fatal(err)
					}
				case "--upstream-tls-ca":
					*v = ca
				case "--upstream-token-file":
					*v = token
				case "--upstream":
					if name, ok := strings.CutPrefix(*v, "${"); ok {
						*v = env[strings.TrimSuffix(name, "}")]
					}
				}
			}
			for _, a := range args {
				if strings.ContainsAny(a, "%$") {
					t.Fatalf("argument %q is left unsubstituted; teach this test its meaning", a)
				}
			}
			if !slices.Contains(args, "--metrics-listen") {
				args = append(args, "--metrics-listen", "off") // its default port may be taken here
			}
			if sock == "" {
				t.Fatal("no --unix-socket")
			}
			serveUntilReady(t, bin, args, nil, func() {
				fi, err := os.Lstat(sock)
				if err != nil {
					t.Errorf("socket: %v", err)
				} else if fi.Mode().Type() != fs.ModeSocket || fi.Mode().Perm() != 0o600 {
					t.Errorf("socket %s has mode %s, want a socket 0600: the deployments give it to the agents' user only", sock, fi.Mode())
				}
			})
		})
	}
}

// testCA returns a self-signed CA certificate, PEM encoded.
func testCA(t *testing.T) []byte {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "toolgate deploy test CA"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(time.Hour),
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}

// unit is a systemd unit file: section → key → values in order.
type unit map[string]map[string][]string

func readUnit(t *testing.T, path string) unit {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	u := unit{}
	section := ""
	var cont string // a line continued with a backslash
	for n, line := range strings.Split(string(data), "\n") {
		if cont == "" {
			line = strings.TrimSpace(line)
			if line == "" || line[0] == '#' || line[0] == ';' {
				continue
			}
		} else {
			line = cont + " " + strings.TrimSpace(line)
			cont = ""
		}
		if s, ok := strings.CutSuffix(line, "\\"); ok {
			cont = strings.TrimSpace(s)
			continue
		}
		if strings.HasPrefix(line, "[") && strings.HasSuffix(line, "]") {
			section = line[1 : len(line)-1]
			u[section] = map[string][]string{}
			continue
		}
		k, v, ok := strings.Cut(line, "=")
		if !ok || section == "" {
			t.Fatalf("%s:%d: not a key=value line in a section: %q", path, n+1, line)
		}
		k, v = strings.TrimSpace(k), strings.TrimSpace(v)
		u[section][k] = append(u[section][k], v)
	}
	if cont != "" {
		t.Fatalf("%s: ends in a continued line", path)
	}
	return u
}

// get returns a [Service] (or other section's) setting's last value.
func (u unit) get(section, key string) string {
	v := u[section][key]
	if len(v) == 0 {
		return ""
	}
	return v[len(v)-1]
}

func execStart(t *testing.T, u unit) []string {
	t.Helper()
	cmd := u.get("Service", "ExecStart")
	if strings.ContainsAny(cmd, `"'`) {
		t.Fatalf("ExecStart %q quotes; this test splits at spaces only", cmd)
	}
	f := strings.Fields(cmd)
	if len(f) < 2 || !path.IsAbs(f[0]) || path.Base(f[0]) != "toolgate" {
		t.Fatalf("ExecStart %q does not run an absolute path to toolgate", cmd)
	}
	return f
}

func isYes(v string) bool { return slices.Contains([]string{"yes", "true", "on", "1"}, v) }

func isLoopback(t *testing.T, where, hostport string) {
	t.Helper()
	host, _, err := net.SplitHostPort(hostport)
	if ip := net.ParseIP(host); err != nil || ip == nil || !ip.IsLoopback() {
		t.Errorf("%s: --listen %s is not a loopback address: this server holds a token at the centre and answers anyone who reaches it", where, hostport)
	}
}

// viewChanging are settings that would show the server other files than
// the agents see at the same paths (or hide them), with the values that
// do. A per-host server proves things about those files.
var viewChanging = map[string]func(string) bool{
	"PrivateTmp":           func(v string) bool { return v != "" && v != "no" && v != "false" },
	"PrivateDevices":       isYes,
	"ProtectKernelModules": isYes,
	"ProtectKernelLogs":    isYes,
	"ProtectProc":          func(v string) bool { return v != "" && v != "default" },
	"ProcSubset":           func(v string) bool { return v == "pid" },
	"DynamicUser":          isYes, // implies PrivateTmp
	"InaccessiblePaths":    func(v string) bool { return v != "" },
	"TemporaryFileSystem":  func(v string) bool { return v != "" },
	"BindPaths":            func(v string) bool { return v != "" },
	"BindReadOnlyPaths":    func(v string) bool { return v != "" },
	"RootDirectory":        func(v string) bool { return v != "" },
	"RootImage":            func(v string) bool { return v != "" },
}

func TestSystemdUnits(t *testing.T) {
	env := readEnvFile(t, "systemd/upstream.env")
	for _, tc := range []struct {
		file, wantedBy string
		system         bool
	}{
		{"systemd/toolgate.service", "default.target", false},
		{"systemd/toolgate@.service", "multi-user.target", true},
	} {
		t.Run(path.Base(tc.file), func(t *testing.T) {
			u := readUnit(t, tc.file)
			args := execStart(t, u)[1:]
			if len(args) == 0 || args[0] != "serve" {
				t.Fatalf("ExecStart runs %q, not serve", args)
			}
			isLoopback(t, tc.file, flagValue(t, args, "--listen"))

			// The socket and the state live in the directories systemd
			// makes for the unit (writable under ProtectSystem=strict,
			// removed or kept as their kind says).
			rt := u.get("Service", "RuntimeDirectory")
			if s := flagValue(t, args, "--unix-socket"); rt == "" || path.Dir(s) != "%t/"+rt {
				t.Errorf("--unix-socket %s is not in the unit's RuntimeDirectory %%t/%s", s, rt)
			}
			sd := u.get("Service", "StateDirectory")
			if s := flagValue(t, args, "--state-dir"); sd == "" || s != "%S/"+sd {
				t.Errorf("--state-dir %s is not the unit's StateDirectory %%S/%s", s, sd)
			}
			for _, k := range []string{"RuntimeDirectoryMode", "StateDirectoryMode"} {
				if m := u.get("Service", k); m != "0700" {
					t.Errorf("%s=%q, want 0700: the last policy and the socket are the user's only", k, m)
				}
			}

			// The upstream comes from an environment file that must exist
			// (no "-"): without it the server would run with no centre.
			up := flagValue(t, args, "--upstream")
			name, ok := strings.CutPrefix(up, "${")
			name, ok2 := strings.CutSuffix(name, "}")
			if !ok || !ok2 {
				t.Errorf("--upstream %s: want ${NAME} from the EnvironmentFile", up)
			} else if _, _, err := net.SplitHostPort(env[name]); err != nil {
				t.Errorf("--upstream ${%s}: systemd/upstream.env sets it to %q, not host:port", name, env[name])
			}
			ef := u["Service"]["EnvironmentFile"]
			if len(ef) != 1 || strings.HasPrefix(ef[0], "-") || path.Base(ef[0]) != "upstream.env" {
				t.Errorf("EnvironmentFile %q: want one upstream.env, required (no leading -)", ef)
			}

			if r := u.get("Service", "Restart"); r != "always" && r != "on-failure" {
				t.Errorf("Restart=%q: a server that exits leaves the hooks failing closed until it is back", r)
			}
			if w := u.get("Install", "WantedBy"); w != tc.wantedBy {
				t.Errorf("WantedBy=%q, want %s", w, tc.wantedBy)
			}

			// Hardening limits what the server may do...
			want := map[string]string{
				"NoNewPrivileges": "yes",
				"ProtectSystem":   "strict",
				// ...but it must read the projects, which are under /home.
				"ProtectHome": "read-only",
			}
			if tc.system {
				want["User"] = "%i" // the agents' user: "~" and file access are theirs
				if tok := flagValue(t, args, "--upstream-token-file"); strings.HasPrefix(tok, "%d/") {
					id := strings.TrimPrefix(tok, "%d/")
					if lc := u.get("Service", "LoadCredential"); !strings.HasPrefix(lc, id+":") {
						t.Errorf("--upstream-token-file %s names credential %q, LoadCredential=%q", tok, id, lc)
					}
				} else {
					t.Errorf("--upstream-token-file %s: want the credential copy in %%d, so the file itself stays root's", tok)
				}
			} else {
				// A user manager sets up ProtectSystem and ProtectHome only
				// in a user namespace.
				want["PrivateUsers"] = "yes"
				if v := u.get("Service", "User"); v != "" {
					t.Errorf("User=%s in a user unit", v)
				}
			}
			for k, v := range want {
				if got := u.get("Service", k); got != v {
					t.Errorf("%s=%q, want %s", k, got, v)
				}
			}
			// ...never what it sees.
			for k, bad := range viewChanging {
				if v := u.get("Service", k); bad(v) {
					t.Errorf("%s=%s gives the server another view of the files than the agents': its proofs would be about other files", k, v)
				}
			}
		})
	}
}

func readEnvFile(t *testing.T, path string) map[string]string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	env := map[string]string{}
	for line := range strings.Lines(string(data)) {
		line = strings.TrimSpace(line)
		if line == "" || line[0] == '#' {
			continue
		}
		k, v, ok := strings.Cut(line, "=")
		if !ok {
			t.Fatalf("%s: %q is not NAME=value", path, line)
		}
		env[k] = v
	}
	return env
}

// TestSystemdAnalyzeVerify has systemd check the units where it is
// installed: unknown or misspelled settings, bad values and specifiers.
// It needs the ExecStart binary to exist, so it checks copies that run the
// binary built here.
func TestSystemdAnalyzeVerify(t *testing.T) {
	analyze, err := exec.LookPath("systemd-analyze")
	if err != nil {
		t.Skip("systemd-analyze is not installed")
	}
	bin := toolgateBinary(t)
	dir := t.TempDir()
	for _, tc := range []struct{ file, as string }{
		{"systemd/toolgate.service", "toolgate.service"},
		{"systemd/toolgate@.service", "toolgate@runner.service"},
	} {
		data, err := os.ReadFile(tc.file)
		if err != nil {
			t.Fatal(err)
		}
		exe := execStart(t, readUnit(t, tc.file))[0]
		p := filepath.Join(dir, tc.as)
		if err := os.WriteFile(p, bytes.ReplaceAll(data, []byte(exe), []byte(bin)), 0o644); err != nil {
			t.Fatal(err)
		}
		args := []string{"verify", p}
		if !strings.Contains(tc.as, "@") {
			args = []string{"--user", "verify", p}
		}
		cmd := exec.CommandContext(t.Context(), analyze, args...)
		rt := filepath.Join(dir, "runtime")
		if err := os.MkdirAll(rt, 0o700); err != nil {
			t.Fatal(err)
		}
		cmd.Env = append(os.Environ(), "XDG_RUNTIME_DIR="+rt) // a user manager's, for --user
		out, err := cmd.CombinedOutput()
		if err != nil || len(bytes.TrimSpace(out)) > 0 {
			t.Errorf("systemd-analyze %s: %v\n%s", strings.Join(args[:len(args)-1], " "), err, out)
		}
	}
}

// plistValue is one value of an XML property list.
type plistValue struct {
	kind string // string, integer, real, true, false, date, data, array, dict
	text string
	arr  []plistValue
	dict map[string]plistValue
}

func readPlist(t *testing.T, path string) plistValue {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	v, err := parsePlist(data)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return v
}

// parsePlist parses an XML property list as plutil -lint would: well-formed
// XML, the plist DOCTYPE, a plist root holding one value, dicts of
// key/value pairs with no repeated key, and only the plist value elements.
func parsePlist(data []byte) (plistValue, error) {
	if !bytes.Contains(data, []byte(`<!DOCTYPE plist PUBLIC "-//Apple//DTD PLIST 1.0//EN" "http://www.apple.com/DTDs/PropertyList-1.0.dtd">`)) {
		return plistValue{}, errors.New("no plist DOCTYPE")
	}
	d := xml.NewDecoder(bytes.NewReader(data))
	d.Strict = true
	root, err := nextStart(d)
	if err != nil {
		return plistValue{}, err
	}
	if root.Name.Local != "plist" {
		return plistValue{}, fmt.Errorf("root element <%s>, want <plist>", root.Name.Local)
	}
	v, err := plistElem(d)
	if err != nil {
		return v, err
	}
	if end, err := nextNonSpace(d); err != nil {
		return v, err
	} else if e, ok := end.(xml.EndElement); !ok || e.Name.Local != "plist" {
		return v, errors.New("the plist holds more than one value")
	}
	if tok, err := nextNonSpace(d); !errors.Is(err, io.EOF) {
		return v, fmt.Errorf("content after </plist>: %v %v", tok, err)
	}
	return v, nil
}

// nextNonSpace returns the next token that is not white space, a comment
// or a directive.
func nextNonSpace(d *xml.Decoder) (xml.Token, error) {
	for {
		tok, err := d.Token()
		if err != nil {
			return nil, err
		}
		switch tk := tok.(type) {
		case xml.CharData:
			if len(bytes.TrimSpace(tk)) == 0 {
				continue
			}
			return nil, fmt.Errorf("text %q outside a value", tk)
		case xml.Comment, xml.ProcInst, xml.Directive:
			continue
		}
		return tok, nil
	}
}

func nextStart(d *xml.Decoder) (xml.StartElement, error) {
	tok, err := nextNonSpace(d)
	if err != nil {
		return xml.StartElement{}, err
	}
	s, ok := tok.(xml.StartElement)
	if !ok {
		return xml.StartElement{}, fmt.Errorf("want an element, found %T", tok)
	}
	return s, nil
}

// plistElem reads the next value element.
func plistElem(d *xml.Decoder) (plistValue, error) {
	s, err := nextStart(d)
	if err != nil {
		return plistValue{}, err
	}
	return plistBody(d, s)
}

func plistBody(d *xml.Decoder, s xml.StartElement) (plistValue, error) {
	v := plistValue{kind: s.Name.Local}
	switch v.kind {
	case "string", "integer", "real", "date", "data", "true", "false":
		var text string
		if err := d.DecodeElement(&text, &s); err != nil {
			return v, err
		}
		v.text = text
		if (v.kind == "true" || v.kind == "false") && text != "" {
			return v, fmt.Errorf("<%s> holds text", v.kind)
		}
		return v, nil
	case "array", "dict":
	default:
		return v, fmt.Errorf("<%s> is not a property list element", v.kind)
	}
	v.dict = map[string]plistValue{}
	for {
		tok, err := nextNonSpace(d)
		if err != nil {
			return v, err
		}
		if _, ok := tok.(xml.EndElement); ok {
			return v, nil
		}
		start, ok := tok.(xml.StartElement)
		if !ok {
			return v, fmt.Errorf("unexpected %T in <%s>", tok, v.kind)
		}
		if v.kind == "array" {
			item, err := plistBody(d, start)
			if err != nil {
				return v, err
			}
			v.arr = append(v.arr, item)
			continue
		}
		if start.Name.Local != "key" {
			return v, fmt.Errorf("<dict> holds <%s> where a <key> belongs", start.Name.Local)
		}
		var key string
		if err := d.DecodeElement(&key, &start); err != nil {
			return v, err
		}
		if _, dup := v.dict[key]; dup {
			return v, fmt.Errorf("key %s twice", key)
		}
		val, err := plistElem(d)
		if err != nil {
			return v, fmt.Errorf("key %s: %w", key, err)
		}
		v.dict[key] = val
	}
}

const launchdPlist = "launchd/dev.toolgate.plist"

// launchdArgs returns the agent's ProgramArguments.
func launchdArgs(t *testing.T) []string {
	t.Helper()
	pl := readPlist(t, launchdPlist)
	pa := pl.dict["ProgramArguments"]
	if pa.kind != "array" || len(pa.arr) < 2 {
		t.Fatalf("ProgramArguments is %s of %d, want an array of the program and its arguments", pa.kind, len(pa.arr))
	}
	var args []string
	for i, a := range pa.arr {
		if a.kind != "string" {
			t.Fatalf("ProgramArguments[%d] is a %s, not a string", i, a.kind)
		}
		args = append(args, a.text)
	}
	return args
}

// The placeholder the install replaces with the developer's home.
const launchdHome = "/Users/USERNAME/"

func TestLaunchdAgent(t *testing.T) {
	pl := readPlist(t, launchdPlist)
	if pl.kind != "dict" {
		t.Fatalf("the plist holds a %s, not a dict", pl.kind)
	}
	// Keys launchd knows (launchd.plist(5)); a misspelled one is ignored
	// by launchd, and what it meant silently lost.
	known := []string{"Label", "ProgramArguments", "RunAtLoad", "KeepAlive", "ThrottleInterval",
		"StandardOutPath", "StandardErrorPath", "EnvironmentVariables", "ProcessType", "WorkingDirectory", "Umask"}
	for k := range pl.dict {
		if !slices.Contains(known, k) {
			t.Errorf("key %s is not one launchd reads (or not one this test knows)", k)
		}
	}
	if l := pl.dict["Label"]; l.kind != "string" || l.text+".plist" != path.Base(launchdPlist) {
		t.Errorf("Label %q: launchctl names the job by it, and the file is named for it", l.text)
	}
	for _, k := range []string{"RunAtLoad", "KeepAlive"} {
		if v := pl.dict[k]; v.kind != "true" {
			t.Errorf("%s is %s, want <true/>: the server starts at login and comes back when it exits", k, v.kind)
		}
	}
	for _, k := range []string{"StandardOutPath", "StandardErrorPath"} {
		if v := pl.dict[k]; v.kind != "string" || !strings.HasPrefix(v.text, launchdHome+"Library/Logs/") {
			t.Errorf("%s %q: want a file in %sLibrary/Logs", k, v.text, launchdHome)
		}
	}

	args := launchdArgs(t)
	if !path.IsAbs(args[0]) || path.Base(args[0]) != "toolgate" {
		t.Errorf("ProgramArguments[0] %q is not an absolute path to toolgate (launchd searches no PATH)", args[0])
	}
	args = args[1:]
	isLoopback(t, launchdPlist, flagValue(t, args, "--listen"))
	for _, f := range []string{"--unix-socket", "--state-dir", "--upstream-tls-ca", "--upstream-token-file"} {
		if v := flagValue(t, args, f); !strings.HasPrefix(v, launchdHome) {
			t.Errorf("%s %s: want a path in the developer's home, %s (launchd expands neither ~ nor variables)", f, v, launchdHome)
		}
	}
	// macOS's sun_path holds 104 bytes with the terminating NUL: the
	// socket's path must fit with a long user name.
	sock := strings.Replace(flagValue(t, args, "--unix-socket"), "USERNAME", strings.Repeat("u", 24), 1)
	if len(sock) > 103 {
		t.Errorf("--unix-socket %s: %d bytes with a 24-byte user name, macOS takes 103", sock, len(sock))
	}
	if _, _, err := net.SplitHostPort(flagValue(t, args, "--upstream")); err != nil {
		t.Errorf("--upstream: %v", err)
	}
}

func TestParsePlist(t *testing.T) {
	for body, ok := range map[string]bool{
		`<dict><key>A</key><array><string>x</string><integer>1</integer></array><key>B</key><true/></dict>`: true,
		`<dict><key>Label</key><string>x</string>`:                                                          false, // unclosed
		`<dict><key>A</key><true/><key>A</key><false/></dict>`:                                              false, // a key twice
		`<dict><string>x</string></dict>`:                                                                   false, // no key
		`<dict><key>A</key></dict>`:                                                                         false, // no value
		`<dict><key>A</key><bool>yes</bool></dict>`:                                                         false, // not a plist element
		`<dict></dict><dict></dict>`:                                                                        false, // two values
		`<dict><key>A</key><true>x</true></dict>`:                                                           false,
	} {
		doc := `<?xml version="1.0" encoding="UTF-8"?>` + "\n" +
			`<!DOCTYPE plist PUBLIC "-//Apple//DTD PLIST 1.0//EN" "http://www.apple.com/DTDs/PropertyList-1.0.dtd">` + "\n" +
			`<plist version="1.0">` + body + `</plist>`
		if _, err := parsePlist([]byte(doc)); (err == nil) != ok {
			t.Errorf("%s: error %v, want ok %v", body, err, ok)
		}
	}
}

// sidecar is the agent's pod of deploy/kubernetes/sidecar.
type sidecar struct {
	pod     podSpec
	sidecar container
	agent   container
	m       manifests
}

func sidecarPod(t *testing.T) sidecar {
	t.Helper()
	m := loadManifestsIn(t, "kubernetes/sidecar")
	var spec deploymentSpec
	o := m.one(t, "Deployment")
	decode(t, &o.Spec, &spec)
	s := sidecar{pod: spec.Template.Spec, m: m}
	if !isSubset(spec.Selector.MatchLabels, spec.Template.Metadata.Labels) {
		t.Errorf("selector %v does not select the pod template's labels %v", spec.Selector.MatchLabels, spec.Template.Metadata.Labels)
	}
	var found []string
	for _, c := range slices.Concat(s.pod.InitContainers, s.pod.Containers) {
		if img, _, _ := strings.Cut(c.Image, ":"); img == "toolgate" {
			s.sidecar = c
			found = append(found, c.Name)
		}
	}
	if len(found) != 1 {
		t.Fatalf("want one toolgate container, found %q", found)
	}
	if len(s.pod.Containers) != 1 || s.pod.Containers[0].Name == s.sidecar.Name {
		t.Fatalf("want the agent as the pod's one container, beside the toolgate sidecar")
	}
	s.agent = s.pod.Containers[0]
	return s
}

func (c container) mount(path string) (name string, readOnly, ok bool) {
	for _, vm := range c.VolumeMounts {
		if vm.MountPath == path {
			return vm.Name, vm.ReadOnly, true
		}
	}
	return "", false, false
}

// under returns the mount holding p.
func (c container) under(p string) (name, mountPath string, readOnly, ok bool) {
	best := -1
	for i, vm := range c.VolumeMounts {
		rel, err := filepath.Rel(vm.MountPath, p)
		if err != nil || rel == ".." || strings.HasPrefix(rel, "../") {
			continue
		}
		if best < 0 || len(vm.MountPath) > len(c.VolumeMounts[best].MountPath) {
			best = i
		}
	}
	if best < 0 {
		return "", "", false, false
	}
	vm := c.VolumeMounts[best]
	return vm.Name, vm.MountPath, vm.ReadOnly, true
}

func (c container) env(name string) string {
	for _, e := range c.Env {
		if e.Name == name {
			return e.Value
		}
	}
	return ""
}

func TestKubernetesSidecar(t *testing.T) {
	s := sidecarPod(t)
	tg, agent := s.sidecar, s.agent
	args := tg.Args

	// A native sidecar: started before the agent, running beside it, and
	// not holding a Job open.
	if !slices.ContainsFunc(s.pod.InitContainers, func(c container) bool { return c.Name == tg.Name }) || tg.RestartPolicy != "Always" {
		t.Errorf("toolgate is not an init container with restartPolicy Always (a native sidecar)")
	}
	isLoopback(t, "sidecar", flagValue(t, args, "--listen"))

	// The agent's files at the agent's paths: every volume both mount is
	// mounted at the same path, the agent's working directory included.
	for _, am := range agent.VolumeMounts {
		for _, sm := range tg.VolumeMounts {
			if am.Name == sm.Name && (am.MountPath != sm.MountPath || am.SubPath != sm.SubPath) {
				t.Errorf("volume %s: the agent mounts it at %s (subPath %q), the sidecar at %s (subPath %q)",
					am.Name, am.MountPath, am.SubPath, sm.MountPath, sm.SubPath)
			}
		}
	}
	if agent.WorkingDir == "" {
		t.Fatal("the agent has no workingDir")
	}
	ws, wsPath, _, ok := agent.under(agent.WorkingDir)
	if !ok {
		t.Fatalf("the agent's workingDir %s is on no volume the sidecar could share", agent.WorkingDir)
	}
	if name, _, ok := tg.mount(wsPath); !ok || name != ws {
		t.Errorf("the sidecar does not mount the workspace volume %s at %s", ws, wsPath)
	}
	// /tmp holds agents' outputs (a read root) and links lead there.
	if name, _, ok := agent.mount("/tmp"); !ok {
		t.Error("the agent's /tmp is not a volume: the sidecar would resolve /tmp in its own")
	} else if sname, _, ok := tg.mount("/tmp"); !ok || sname != name {
		t.Errorf("the sidecar does not mount the agent's /tmp (%s)", name)
	}

	// One user: the socket is its owner's only, and the sidecar reads the
	// files with the agent's rights; "~" in rules is the agent's home.
	uid := func(c container) int64 {
		if c.SecurityContext.RunAsUser != nil {
			return *c.SecurityContext.RunAsUser
		}
		return s.pod.SecurityContext.RunAsUser
	}
	if uid(tg) != uid(agent) || uid(tg) == 0 {
		t.Errorf("the sidecar runs as uid %d, the agent as %d: want one non-root user", uid(tg), uid(agent))
	}
	if h := agent.env("HOME"); h == "" || tg.env("HOME") != h {
		t.Errorf("HOME: the agent's %q, the sidecar's %q: \"~\" in rules must be the agent's home", h, tg.env("HOME"))
	}

	// The socket: a volume the sidecar writes and the agent only reads,
	// so the agent cannot put a server of its own in its place.
	sock := flagValue(t, args, "--unix-socket")
	if a := agent.env("TOOLGATE_ADDR"); a != "unix:"+sock {
		t.Errorf("the agent's TOOLGATE_ADDR %q, the sidecar's socket %s", a, sock)
	}
	sv, sro, ok := tg.mount(path.Dir(sock))
	av, aro, aok := agent.mount(path.Dir(sock))
	switch {
	case !ok || sro:
		t.Errorf("the socket's directory %s is not a writable mount of the sidecar", path.Dir(sock))
	case !aok || av != sv:
		t.Errorf("the agent does not mount the socket's volume %s at %s", sv, path.Dir(sock))
	case !aro:
		t.Errorf("the agent mounts the socket's directory writable: it could replace the socket")
	}
	if _, _, ro, ok := tg.under(flagValue(t, args, "--state-dir")); !ok || ro {
		t.Error("--state-dir is not on a writable volume of the sidecar (the root filesystem is read-only)")
	}

	// The token: a Secret only the sidecar mounts.
	tok := flagValue(t, args, "--upstream-token-file")
	tv, _, _, ok := tg.under(tok)
	if !ok {
		t.Fatalf("--upstream-token-file %s is on no volume", tok)
	}
	secret := false
	for _, v := range s.pod.Volumes {
		if v.Name == tv && v.Secret != nil {
			secret = true
		}
	}
	if !secret {
		t.Errorf("--upstream-token-file %s is not on a Secret volume", tok)
	}
	for _, m := range agent.VolumeMounts {
		if m.Name == tv {
			t.Errorf("the agent mounts the sidecar's token volume %s", tv)
		}
	}

	// The upstream is the central Service, by its name and gRPC port.
	up := flagValue(t, args, "--upstream")
	host, port, err := net.SplitHostPort(up)
	if err != nil {
		t.Fatalf("--upstream %s: %v", up, err)
	}
	svcName, rest, _ := strings.Cut(host, ".")
	if rest != "" && !regexp.MustCompile(`^[a-z0-9-]+\.svc(\.cluster\.local)?$`).MatchString(rest) {
		t.Errorf("--upstream %s is not a Service's cluster DNS name", up)
	}
	matched := false
	for _, svc := range loadManifests(t).byKind["Service"] {
		var spec serviceSpec
		decode(t, &svc.Spec, &spec)
		for _, p := range spec.Ports {
			if svc.Metadata.Name == svcName && p.Name == "grpc" && fmt.Sprint(p.Port) == port {
				matched = true
			}
		}
	}
	if !matched {
		t.Errorf("--upstream %s names no central Service's grpc port (deploy/kubernetes/service.yaml)", up)
	}

	sc := tg.SecurityContext
	if !isTrue(sc.ReadOnlyRootFilesystem) || sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation ||
		!slices.Contains(sc.Capabilities.Drop, "ALL") {
		t.Error("the sidecar's securityContext: want readOnlyRootFilesystem, no privilege escalation, capabilities dropped")
	}

	k := s.m.one(t, "Kustomization")
	want := slices.DeleteFunc(slices.Clone(s.m.files), func(f string) bool { return f == "kustomization.yaml" })
	if got := slices.Sorted(slices.Values(k.Resources)); !slices.Equal(got, want) {
		t.Errorf("kustomization resources %v, files %v", got, want)
	}
}

// docs/deployment.md, before its first section, points at the files it
// describes (its links are relative to docs/).
func TestDocsDeploymentLinks(t *testing.T) {
	data, err := os.ReadFile("../docs/deployment.md")
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(data), "# Deployment\n")
	if !ok {
		t.Fatal("docs/deployment.md has no # Deployment heading")
	}
	if i := strings.Index(section, "\n## "); i >= 0 {
		section = section[:i]
	}
	links := map[string]bool{}
	for _, m := range regexp.MustCompile(`\]\(\.\./(deploy/[^)#]*)\)`).FindAllStringSubmatch(section, -1) {
		links[m[1]] = true
		if _, err := os.Stat(filepath.Join("..", m[1])); err != nil {
			t.Errorf("docs/deployment.md links %s: %v", m[1], err)
		}
	}
	for _, f := range []string{"deploy/systemd/toolgate.service", "deploy/systemd/toolgate@.service",
		"deploy/launchd/dev.toolgate.plist", "deploy/kubernetes/sidecar/", "deploy/kubernetes/"} {
		if !links[f] {
			t.Errorf("docs/deployment.md does not link %s", f)
		}
	}
}
