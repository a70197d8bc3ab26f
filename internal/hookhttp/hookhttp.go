// Package hookhttp is toolgate-hook's way to the server: the hook input is
// posted as it came to the server's hook listener (server.hook), which
// runs the same adapters as toolgate hook and answers with the decision;
// the answer is written in the agent's format here. It imports only the
// standard library and toolgate's light packages: a hook starts for every
// tool call, and gRPC and protobuf would take most of its time in
// initialisation alone.
package hookhttp

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/textproto"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/toolgate/toolgate/hook/hookout"
	"github.com/toolgate/toolgate/internal/attest"
	"github.com/toolgate/toolgate/internal/clientflags"
	"github.com/toolgate/toolgate/internal/hookcli"
)

// The protocol's names.
const (
	// PathPrefix is followed by the agent's command-line name.
	PathPrefix = "/hook/"
	// AnswerHeader "1" asks for an Answer instead of the agent's output.
	AnswerHeader = "Toolgate-Answer"
	// ProjectDirHeader carries CLAUDE_PROJECT_DIR, which Claude Code sets
	// in a command hook's environment.
	ProjectDirHeader = "Toolgate-Claude-Project-Dir"
	// AttestationHeader is the client's attestation for one directory,
	// as a URL query (dir, boot_id, dev, ino); the server uses the one
	// for the check's working directory.
	AttestationHeader = "Toolgate-Attestation"
	// AddrHeader is the address the client was given: failure reasons
	// name it, as toolgate hook's do.
	AddrHeader = "Toolgate-Addr"
)

// Answer is the hook listener's answer when asked for one: the decision,
// or why there is none. Tool is the call's tool name once the input was
// read.
type Answer struct {
	Tool     string `json:"tool"`
	Decision string `json:"decision,omitempty"`
	Reason   string `json:"reason,omitempty"`
	Failure  string `json:"failure,omitempty"`
}

// DefaultAddr is toolgate-hook's --addr: the hook listener, which a server
// opens with --hook-listen (server.hook.listen).
var DefaultAddr = hookcli.Addr{Env: "TOOLGATE_HOOK_ADDR", Default: "127.0.0.1:50052", Usage: "the server's hook listener, host:port or unix:PATH"}

// MaxInput is the most hook input sent: the adapters' bound and one byte,
// so that the server names an input over it as toolgate hook does.
const MaxInput = 16<<20 + 1

// maxAnswer bounds the answer read.
const maxAnswer = 1 << 20

// Decide is a hookcli.Decider: it posts the hook input to the hook
// listener at p.Conn.Addr (host:port, or unix:PATH) and returns the
// agent's output for the answer.
func Decide(ctx context.Context, p hookcli.Params, in io.Reader) ([]byte, error) {
	body, err := hookcli.Within(ctx, func() ([]byte, error) {
		b, err := io.ReadAll(io.LimitReader(in, MaxInput))
		if err != nil {
			return nil, fmt.Errorf("hook input: %w", err)
		}
		return b, nil
	})
	if err != nil {
		return nil, err
	}
	// What the server's answer would name, for a failure before it: the
	// tool, and the directories to attest (the working directory is the
	// adapter's choice, made on the server).
	var peek struct {
		Cwd string `json:"cwd"`
	}
	_ = json.Unmarshal(body, &peek)
	call := hookout.Peek(body)
	fail := func(why string) error { return &hookcli.Failure{Call: call, Why: why} }

	token, err := p.Conn.Token()
	if err != nil {
		return nil, fail(err.Error())
	}
	path := PathPrefix + p.Agent
	q := url.Values{}
	if p.Mode != "" {
		q.Set("mode", p.Mode)
	}
	if p.Unattended {
		q.Set("unattended", "1")
	}
	if len(q) > 0 {
		path += "?" + q.Encode()
	}
	headers := []string{
		AnswerHeader, "1",
		AddrHeader, url.QueryEscape(p.Conn.Addr),
	}
	if token != "" {
		headers = append(headers, "Authorization", "Bearer "+token)
	}
	project := ""
	if p.Agent == hookout.Claude && p.Getenv != nil {
		if project = p.Getenv("CLAUDE_PROJECT_DIR"); project != "" {
			headers = append(headers, ProjectDirHeader, url.QueryEscape(project))
		}
	}
	for _, dir := range []string{project, peek.Cwd} {
		if a, ok := attest.For(dir); ok {
			headers = append(headers, AttestationHeader, EncodeAttestation(dir, a))
		}
	}
	status, data, err := post(ctx, p.Conn, path, headers, body)
	var ans Answer
	switch {
	case errors.Is(err, errSetup):
		return nil, fail(err.Error())
	case err != nil:
		return nil, fail(hookcli.ServerFailure(p.Conn.Addr, transportCode(ctx, err), ""))
	case status == 404:
		return nil, fail(hookcli.ServerFailure(p.Conn.Addr, "Unimplemented", ""))
	case status != 200 || json.Unmarshal(data, &ans) != nil || (ans.Decision == "" && ans.Failure == ""):
		// Not a hook listener's answer (another server at the address):
		// nothing in it is a decision.
		return nil, fail(hookcli.ServerFailure(p.Conn.Addr, "Unknown", ""))
	}
	// The server names the check's tool; the event is the input's.
	call.Tool = ans.Tool
	if ans.Failure != "" {
		return nil, &hookcli.Failure{Call: call, Why: ans.Failure}
	}
	var out bytes.Buffer
	if err := hookout.Write(&out, p.Agent, call, ans.Decision, ans.Reason); err != nil {
		return nil, &hookcli.Failure{Call: call, Why: err.Error()}
	}
	return out.Bytes(), nil
}

// transportCode names a failed exchange as gRPC would: the deadline (the
// context's, or the connection's, which is the same), a cancel, else an
// unreachable server.
func transportCode(ctx context.Context, err error) string {
	dl, ok := ctx.Deadline()
	switch {
	case errors.Is(err, os.ErrDeadlineExceeded), errors.Is(err, context.DeadlineExceeded),
		errors.Is(ctx.Err(), context.DeadlineExceeded), ok && !time.Now().Before(dl):
		return "DeadlineExceeded"
	case errors.Is(ctx.Err(), context.Canceled):
		return "Canceled"
	}
	return "Unavailable"
}

// errSetup marks a failure before anything was sent: the flags, the
// files they name, a header that cannot be sent.
var errSetup = errors.New("")

type setupError struct{ error }

func (e setupError) Is(target error) bool { return target == errSetup }

// post sends one HTTP/1.1 request to the hook listener and reads its
// answer: a client of a few dozen lines, because net/http alone takes a
// third of a hook's start. The listener is toolgate's, which answers with
// a Content-Length; anything else is no answer. headers are name, value
// pairs. No proxy: an answer comes from the server named, or from nowhere.
func post(ctx context.Context, c *clientflags.Flags, path string, headers []string, body []byte) (int, []byte, error) {
	var conf *tls.Config
	if c.UseTLS() {
		var err error
		if conf, err = c.TLSConfig(); err != nil {
			return 0, nil, setupError{err}
		}
	}
	network, addr, host := "tcp", strings.TrimPrefix(c.Addr, "dns:///"), ""
	if p, ok := strings.CutPrefix(c.Addr, "unix:"); ok {
		network, addr, host = "unix", p, "localhost"
		if conf != nil && conf.ServerName == "" {
			conf.ServerName = "localhost" // as gRPC names a unix: target
		}
	} else {
		h, _, err := net.SplitHostPort(addr)
		if err != nil {
			return 0, nil, setupError{fmt.Errorf("--addr %q: want host:port or unix:PATH", c.Addr)}
		}
		host = addr
		if conf != nil && conf.ServerName == "" {
			conf.ServerName = h
		}
	}
	var req bytes.Buffer
	fmt.Fprintf(&req, "POST %s HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\nConnection: close\r\n", path, host, len(body))
	for i := 0; i+1 < len(headers); i += 2 {
		if strings.ContainsFunc(headers[i+1], func(r rune) bool { return r < ' ' || r == 0x7f }) {
			return 0, nil, setupError{fmt.Errorf("the %s header holds a control character", headers[i])}
		}
		fmt.Fprintf(&req, "%s: %s\r\n", headers[i], headers[i+1])
	}
	req.WriteString("\r\n")
	req.Write(body)

	var d net.Dialer
	conn, err := d.DialContext(ctx, network, addr)
	if err != nil {
		return 0, nil, err
	}
	defer conn.Close()
	// The deadline bounds every read and write; a cancel closes.
	if dl, ok := ctx.Deadline(); ok {
		_ = conn.SetDeadline(dl)
	}
	stop := context.AfterFunc(ctx, func() { _ = conn.Close() })
	defer stop()
	if conf != nil {
		tc := tls.Client(conn, conf)
		if err := tc.HandshakeContext(ctx); err != nil {
			return 0, nil, err
		}
		conn = tc
	}
	if _, err := conn.Write(req.Bytes()); err != nil {
		return 0, nil, err
	}
	tp := textproto.NewReader(bufio.NewReader(io.LimitReader(conn, maxAnswer+64<<10)))
	line, err := tp.ReadLine()
	if err != nil {
		return 0, nil, err
	}
	proto, rest, _ := strings.Cut(line, " ")
	code, _, _ := strings.Cut(rest, " ")
	status, err := strconv.Atoi(code)
	if !strings.HasPrefix(proto, "HTTP/1.") || err != nil {
		return 0, nil, fmt.Errorf("not an HTTP answer")
	}
	h, err := tp.ReadMIMEHeader()
	if err != nil {
		return 0, nil, err
	}
	n, err := strconv.Atoi(h.Get("Content-Length"))
	if err != nil || n < 0 || n > maxAnswer || h.Get("Transfer-Encoding") != "" {
		return status, nil, nil // no answer toolgate's listener gives
	}
	data := make([]byte, n)
	if _, err := io.ReadFull(tp.R, data); err != nil {
		return 0, nil, err
	}
	return status, data, nil
}

// EncodeAttestation is the AttestationHeader value for dir.
func EncodeAttestation(dir string, a attest.Attestation) string {
	return url.Values{
		"dir":     {dir},
		"boot_id": {a.BootID},
		"dev":     {strconv.FormatUint(a.Device, 10)},
		"ino":     {strconv.FormatUint(a.Inode, 10)},
		"mnt":     {strconv.FormatUint(a.MountNS, 10)},
		"rootdev": {strconv.FormatUint(a.RootDevice, 10)},
		"rootino": {strconv.FormatUint(a.RootInode, 10)},
	}.Encode()
}

// ParseAttestation returns the attestation the header values give for
// dir, if one does and is well formed.
func ParseAttestation(values []string, dir string) (attest.Attestation, bool) {
	if dir == "" {
		return attest.Attestation{}, false
	}
	for _, v := range values {
		q, err := url.ParseQuery(v)
		if err != nil || q.Get("dir") != dir {
			continue
		}
		dev, err1 := strconv.ParseUint(q.Get("dev"), 10, 64)
		ino, err2 := strconv.ParseUint(q.Get("ino"), 10, 64)
		if err1 != nil || err2 != nil || q.Get("boot_id") == "" {
			return attest.Attestation{}, false
		}
		// The view's fields are optional: without them, the server counts
		// only the directory's files as the client's.
		mnt, _ := strconv.ParseUint(q.Get("mnt"), 10, 64)
		rdev, _ := strconv.ParseUint(q.Get("rootdev"), 10, 64)
		rino, _ := strconv.ParseUint(q.Get("rootino"), 10, 64)
		return attest.Attestation{BootID: q.Get("boot_id"), Device: dev, Inode: ino, MountNS: mnt, RootDevice: rdev, RootInode: rino}, true
	}
	return attest.Attestation{}, false
}
