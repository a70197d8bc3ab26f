package main

import (
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"sync"

	"go.yaml.in/yaml/v3"
	"google.golang.org/protobuf/encoding/protowire"

	"github.com/toolgate/toolgate/config"
)

// traceSampleRatio is server.tracing.sample_ratio of the traced target.
const traceSampleRatio = 0.1

// tracedConfig is the embedded default config with server.tracing set, so
// that it decides the workload as toolgate-unary does (its policy repeats
// the built-in one, which a file extends: each rule is kept once).
func tracedConfig(endpoint string, ratio float64) ([]byte, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(config.DefaultYAML(), &doc); err != nil {
		return nil, err
	}
	if doc.Kind != yaml.DocumentNode || len(doc.Content) != 1 || doc.Content[0].Kind != yaml.MappingNode {
		return nil, errors.New("default config: not a mapping")
	}
	var server *yaml.Node
	top := doc.Content[0].Content
	for i := 0; i+1 < len(top); i += 2 {
		if top[i].Value == "server" {
			server = top[i+1]
		}
	}
	if server == nil || server.Kind != yaml.MappingNode {
		return nil, errors.New("default config: no server section")
	}
	for i := 0; i+1 < len(server.Content); i += 2 {
		if server.Content[i].Value == "tracing" {
			return nil, errors.New("default config: server.tracing already set")
		}
	}
	var tracing yaml.Node
	if err := tracing.Encode(map[string]any{"otlp_endpoint": endpoint, "sample_ratio": ratio}); err != nil {
		return nil, err
	}
	server.Content = append(server.Content, &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: "tracing"}, &tracing)
	return yaml.Marshal(&doc)
}

// otlpSink is an OTLP/HTTP collector that keeps nothing: it answers 200
// to POST /v1/traces and counts what it was sent, the proof that the
// traced target exported spans.
type otlpSink struct {
	srv *http.Server
	url string

	mu                      sync.Mutex
	requests, bytes, spans  int64
	malformed, wrongRequest int64
}

func startOTLPSink() (*otlpSink, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	s := &otlpSink{url: "http://" + l.Addr().String()}
	s.srv = &http.Server{Handler: s}
	go func() { _ = s.srv.Serve(l) }()
	return s, nil
}

func (s *otlpSink) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost || r.URL.Path != "/v1/traces" {
		s.mu.Lock()
		s.wrongRequest++
		s.mu.Unlock()
		http.NotFound(w, r)
		return
	}
	b, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	n, err := countSpans(b)
	s.mu.Lock()
	s.requests++
	s.bytes += int64(len(b))
	s.spans += int64(n)
	if err != nil {
		s.malformed++
	}
	s.mu.Unlock()
	// An empty body is a full success to the OTLP exporter.
	w.WriteHeader(http.StatusOK)
}

// counts are what the sink received so far.
func (s *otlpSink) counts() (requests, bytes, spans int64, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.malformed > 0:
		err = fmt.Errorf("OTLP sink: %d of %d export requests were not OTLP protobuf", s.malformed, s.requests)
	case s.wrongRequest > 0:
		err = fmt.Errorf("OTLP sink: %d requests were not POST /v1/traces", s.wrongRequest)
	}
	return s.requests, s.bytes, s.spans, err
}

func (s *otlpSink) close() { _ = s.srv.Close() }

// countSpans counts the spans of an ExportTraceServiceRequest:
// resource_spans (1) → scope_spans (2) → spans (2).
func countSpans(b []byte) (int, error) {
	return countNested(b, 1, 2, 2)
}

// countNested counts the length-delimited fields at path, descending
// through embedded messages.
func countNested(b []byte, path ...protowire.Number) (int, error) {
	n := 0
	for len(b) > 0 {
		num, typ, l := protowire.ConsumeTag(b)
		if l < 0 {
			return n, protowire.ParseError(l)
		}
		b = b[l:]
		if num == path[0] && typ == protowire.BytesType {
			v, l := protowire.ConsumeBytes(b)
			if l < 0 {
				return n, protowire.ParseError(l)
			}
			b = b[l:]
			if len(path) == 1 {
				n++
				continue
			}
			m, err := countNested(v, path[1:]...)
			n += m
			if err != nil {
				return n, err
			}
			continue
		}
		l = protowire.ConsumeFieldValue(num, typ, b)
		if l < 0 {
			return n, protowire.ParseError(l)
		}
		b = b[l:]
	}
	return n, nil
}

// writeTracedConfig writes the traced target's config file.
func writeTracedConfig(path, endpoint string) error {
	b, err := tracedConfig(endpoint, traceSampleRatio)
	if err != nil {
		return err
	}
	return os.WriteFile(path, b, 0o644)
}
