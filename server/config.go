// Package server is toolgate's gRPC face: it validates requests, maps them
// to the engine, and maps decisions back. It holds no policy logic.
package server

import (
	"errors"
	"fmt"
	"net"
	"time"
)

// Config configures the gRPC server. Field paths in errors match the YAML
// config (server.*).
type Config struct {
	// Listen is the TCP address to listen on; loopback by default.
	Listen string `yaml:"listen"`
	// MetricsListen is the HTTP address serving Prometheus /metrics;
	// empty turns metrics off.
	MetricsListen string `yaml:"metrics_listen"`
	// MaxToolInputBytes caps the encoded size of tool.input.
	MaxToolInputBytes int `yaml:"max_tool_input_bytes"`
	// MaxTranscriptEntries caps the transcript of one check, and the
	// transcript a stream keeps (older entries are dropped first).
	MaxTranscriptEntries int `yaml:"max_transcript_entries"`
	// MaxStreamInFlight bounds the checks of one stream that run at once;
	// further checks wait (the stream is not read) until one finishes.
	MaxStreamInFlight int `yaml:"max_stream_in_flight"`
	// Reflection turns on gRPC server reflection (for grpcurl).
	Reflection bool `yaml:"reflection"`
	// ShutdownTimeout bounds the graceful stop; after it, open calls are cut.
	ShutdownTimeout time.Duration `yaml:"shutdown_timeout"`
}

// DefaultConfig returns the defaults.
func DefaultConfig() Config {
	return Config{
		Listen:               "127.0.0.1:50051",
		MetricsListen:        "127.0.0.1:9464",
		MaxToolInputBytes:    256 << 10,
		MaxTranscriptEntries: 500,
		MaxStreamInFlight:    32,
		Reflection:           true,
		ShutdownTimeout:      10 * time.Second,
	}
}

// Validate reports the first bad field.
func (c *Config) Validate() error {
	var errs []error
	if _, _, err := net.SplitHostPort(c.Listen); err != nil {
		errs = append(errs, fmt.Errorf("server.listen: %q is not host:port: %w", c.Listen, err))
	}
	if c.MetricsListen != "" {
		if _, _, err := net.SplitHostPort(c.MetricsListen); err != nil {
			errs = append(errs, fmt.Errorf("server.metrics_listen: %q is not host:port (empty turns metrics off): %w", c.MetricsListen, err))
		}
	}
	if c.MaxToolInputBytes <= 0 {
		errs = append(errs, fmt.Errorf("server.max_tool_input_bytes: must be positive, got %d", c.MaxToolInputBytes))
	}
	if c.MaxTranscriptEntries <= 0 {
		errs = append(errs, fmt.Errorf("server.max_transcript_entries: must be positive, got %d", c.MaxTranscriptEntries))
	}
	if c.MaxStreamInFlight <= 0 {
		errs = append(errs, fmt.Errorf("server.max_stream_in_flight: must be positive, got %d", c.MaxStreamInFlight))
	}
	if c.ShutdownTimeout <= 0 {
		errs = append(errs, fmt.Errorf("server.shutdown_timeout: must be positive, got %s", c.ShutdownTimeout))
	}
	return errors.Join(errs...)
}
