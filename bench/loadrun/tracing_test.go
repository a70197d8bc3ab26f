package main

import (
	"bytes"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"google.golang.org/protobuf/encoding/protowire"

	"github.com/toolgate/toolgate/app"
	"github.com/toolgate/toolgate/engine"
)

// The traced target's file loads as toolgate serve --config loads it:
// tracing on, and the default policy exactly as embedded.
func TestTracedConfig(t *testing.T) {
	path := filepath.Join(t.TempDir(), "traced.yaml")
	if err := writeTracedConfig(path, "http://127.0.0.1:4318"); err != nil {
		t.Fatal(err)
	}
	got, err := app.LoadConfig(path)
	if err != nil {
		b, _ := os.ReadFile(path)
		t.Fatalf("%v\n%s", err, b)
	}
	if tr := got.Server.Tracing; tr.OTLPEndpoint != "http://127.0.0.1:4318" || tr.SampleRatio != traceSampleRatio {
		t.Errorf("tracing %+v", tr)
	}
	def, err := app.LoadConfig("")
	if err != nil {
		t.Fatal(err)
	}
	if def.Server.Tracing.OTLPEndpoint != "" {
		t.Fatal("the default config traces already; the traced target would compare nothing")
	}
	if !reflect.DeepEqual(got.File.Policies, def.File.Policies) || got.File.Policies[engine.DefaultPolicy].Permissions.Deny == nil {
		t.Error("the traced config's policies differ from the embedded default's")
	}
	// Only tracing differs in the server section.
	got.Server.Tracing = def.Server.Tracing
	if !reflect.DeepEqual(got.Server, def.Server) {
		t.Errorf("server section\n%+v\nwant\n%+v", got.Server, def.Server)
	}
}

// otlpRequest is an ExportTraceServiceRequest with the given spans per
// scope, per resource, and fields the count must skip.
func otlpRequest(resources ...[]int) []byte {
	msg := func(b []byte, num protowire.Number, v []byte) []byte {
		b = protowire.AppendTag(b, num, protowire.BytesType)
		return protowire.AppendBytes(b, v)
	}
	var req []byte
	for _, scopes := range resources {
		rs := msg(nil, 1, []byte("resource"))
		for _, n := range scopes {
			ss := msg(nil, 1, []byte("scope"))
			for range n {
				span := msg(nil, 5, []byte("toolgate.check"))
				ss = msg(ss, 2, span)
			}
			ss = msg(ss, 3, []byte("https://opentelemetry.io/schemas/1.26.0"))
			rs = msg(rs, 2, ss)
		}
		rs = protowire.AppendTag(rs, 4, protowire.VarintType)
		rs = protowire.AppendVarint(rs, 7)
		req = msg(req, 1, rs)
	}
	return req
}

func TestCountSpans(t *testing.T) {
	if n, err := countSpans(otlpRequest([]int{3, 0, 2}, []int{4})); err != nil || n != 9 {
		t.Errorf("got %d, %v; want 9", n, err)
	}
	if n, err := countSpans(nil); err != nil || n != 0 {
		t.Errorf("empty request: %d, %v", n, err)
	}
	if _, err := countSpans([]byte(`{"resourceSpans":[]}`)); err == nil {
		t.Error("JSON counted as protobuf")
	}
}

func TestOTLPSink(t *testing.T) {
	s, err := startOTLPSink()
	if err != nil {
		t.Fatal(err)
	}
	defer s.close()
	body := otlpRequest([]int{2}, []int{1})
	for range 2 {
		resp, err := http.Post(s.url+"/v1/traces", "application/x-protobuf", bytes.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		if resp.StatusCode != http.StatusOK || resp.ContentLength != 0 {
			t.Errorf("answered %s with %d bytes, want 200 and nothing", resp.Status, resp.ContentLength)
		}
		resp.Body.Close()
	}
	if req, b, spans, err := s.counts(); err != nil || req != 2 || b != 2*int64(len(body)) || spans != 6 {
		t.Errorf("counts %d requests, %d bytes, %d spans, %v", req, b, spans, err)
	}
	resp, err := http.Get(s.url + "/v1/traces")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if _, _, _, err := s.counts(); err == nil || !strings.Contains(err.Error(), "POST /v1/traces") {
		t.Errorf("a GET went unreported: %v", err)
	}
}
