package fakellm_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/toolgate/toolgate/fakellm"
)

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// tail keeps the last bytes written to it and counts them all.
type tail struct {
	n   int64
	buf []byte
}

func (w *tail) Write(p []byte) (int, error) {
	w.n += int64(len(p))
	w.buf = append(w.buf, p...)
	if len(w.buf) > 64<<10 {
		w.buf = append(w.buf[:0], w.buf[len(w.buf)-(64<<10):]...)
	}
	return len(p), nil
}

// stream posts a request for api to srv and reads the body through dec
// (nil: as sent), keeping only its tail.
func stream(t *testing.T, client *http.Client, srv *fakellm.Server, api string, dec func(io.Reader) (io.Reader, error)) (*http.Response, *tail) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, srv.URL()+pathFor(api), bytes.NewReader(mustJSON(t, bodyFor(api, "classify_result", "s", "u"))))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	for k, v := range headerFor(api) {
		req.Header[k] = v
	}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var body io.Reader = resp.Body
	if dec != nil {
		if body, err = dec(body); err != nil {
			t.Fatal(err)
		}
	}
	w := &tail{}
	if _, err := io.Copy(w, body); err != nil {
		t.Fatalf("%s: reading the body: %v", api, err)
	}
	return resp, w
}

// checkTrailingAnswer checks that the body is whitespace then one normal
// answer.
func checkTrailingAnswer(t *testing.T, api string, resp *http.Response, w *tail, pad int64) {
	t.Helper()
	answer := bytes.TrimLeft(w.buf, " ")
	if got := w.n - int64(len(answer)); got != pad {
		t.Errorf("%s: %d bytes before the answer, want %d", api, got, pad)
	}
	name, args := toolCall(t, api, result{resp: resp, body: answer})
	if name != "classify_result" || fullVerdict(t, args).ShouldBlock {
		t.Errorf("%s: answer %s", api, answer)
	}
}

func TestNullBody(t *testing.T) {
	srv := fakellm.Start(t, fakellm.Always(fakellm.Reply{Fault: fakellm.FaultNullBody}))
	for _, api := range apis {
		r := post(t, srv, api, bodyFor(api, "classify_result", "s", "u"))
		if r.resp.StatusCode != http.StatusOK || r.resp.Header.Get("Content-Type") != "application/json" || string(r.body) != "null\n" {
			t.Errorf("%s: %d %q %q", api, r.resp.StatusCode, r.resp.Header.Get("Content-Type"), r.body)
		}
	}
}

func TestOversized(t *testing.T) {
	srv := fakellm.Start(t, fakellm.Always(fakellm.Reply{Fault: fakellm.FaultOversized}))
	for _, api := range apis {
		resp, w := stream(t, freshClient(t), srv, api, nil)
		if resp.ContentLength != -1 {
			t.Errorf("%s: Content-Length %d, want none", api, resp.ContentLength)
		}
		checkTrailingAnswer(t, api, resp, w, fakellm.OversizedBytes)
	}
}

func TestGzipBomb(t *testing.T) {
	srv := fakellm.Start(t, fakellm.Always(fakellm.Reply{Fault: fakellm.FaultGzipBomb}))
	raw := &http.Transport{DisableCompression: true}
	t.Cleanup(raw.CloseIdleConnections)
	for _, api := range apis {
		// As sent: gzip, though the client did not ask for it, small on
		// the wire.
		resp, w := stream(t, &http.Client{Transport: raw}, srv, api, nil)
		if resp.Header.Get("Content-Encoding") != "gzip" || resp.ContentLength != w.n || w.n > 512<<10 {
			t.Errorf("%s: Content-Encoding %q, Content-Length %d, %d bytes", api, resp.Header.Get("Content-Encoding"), resp.ContentLength, w.n)
		}
	}
	// Decompressed (both members, checksums checked) by a client that
	// asked for gzip.
	resp, w := stream(t, freshClient(t), srv, fakellm.APIChat, nil)
	if !resp.Uncompressed {
		t.Error("the transport did not decompress")
	}
	checkTrailingAnswer(t, fakellm.APIChat, resp, w, fakellm.GzipBombBytes)
}

func TestSlowDrip(t *testing.T) {
	srv := fakellm.Start(t, fakellm.Always(fakellm.Reply{Fault: fakellm.FaultSlowDrip}))
	const wait = time.Second
	ctx, cancel := context.WithTimeout(t.Context(), wait)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, srv.URL()+"/chat/completions", bytes.NewReader(mustJSON(t, chatBody("classify_result", "s", "u"))))
	if err != nil {
		t.Fatal(err)
	}
	resp, err := freshClient(t).Do(req)
	if err != nil {
		t.Fatalf("no headers before the deadline: %v", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("status %d", resp.StatusCode)
	}
	got, err := io.ReadAll(resp.Body)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("read %q, %v; want the client's deadline mid-body", got, err)
	}
	// About one byte per DripInterval: some, far from all.
	if len(got) == 0 || len(got) > int(2*wait/fakellm.DripInterval) || got[0] != '{' {
		t.Errorf("read %d bytes %q in %s", len(got), got, wait)
	}
}

func TestCloseEndsSlowDrip(t *testing.T) {
	srv := fakellm.New(fakellm.Always(fakellm.Reply{Fault: fakellm.FaultSlowDrip}))
	if err := srv.Listen("127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, srv.URL()+"/responses", bytes.NewReader(mustJSON(t, responsesBody("classify_result", "s", "u"))))
	if err != nil {
		t.Fatal(err)
	}
	resp, err := freshClient(t).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if _, err := io.ReadFull(resp.Body, make([]byte, 1)); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if err := srv.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
	// Generous: Close must not wait for the minute the drip would take.
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("Close took %s", d)
	}
	if _, err := io.ReadAll(resp.Body); err == nil {
		t.Error("the body ended cleanly; want the connection dropped mid-body")
	}
}
