// Package server is toolgate's gRPC face: it validates requests, maps them
// to the engine, and maps decisions back. It holds no policy logic.
package server

import (
	"errors"
	"fmt"
	"io/fs"
	"net"
	"path/filepath"
	"runtime"
	"strconv"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/keepalive"
)

// Config configures the gRPC server. Field paths in errors match the YAML
// config (server.*).
type Config struct {
	// Listen is the TCP address to listen on; loopback by default.
	Listen string `yaml:"listen"`
	// UnixSocket, when set, is a Unix socket the server listens on as well
	// as Listen: clients on the same machine (the hook adapters, toolgate
	// check) reach it with no TCP port open, as unix:PATH.
	UnixSocket string `yaml:"unix_socket"`
	// UnixSocketMode is the socket's permission bits, in octal: connecting
	// needs write permission, so 0600 lets only the server's user connect,
	// 0660 its group too.
	UnixSocketMode string `yaml:"unix_socket_mode"`
	// UnattestedFiles is what the server takes of a check whose client
	// sent no attestation of where it runs: "local_peers" (the default)
	// counts a peer on this machine (loopback or the Unix socket) whose
	// working directory exists here as sharing the server's disk;
	// "unseen" counts no such check as sharing it. Behind a proxy on
	// loopback (a mesh sidecar, Envoy in the pod) every peer looks local,
	// so a central server set "unseen": then only attested checks are
	// allowed by proofs about files.
	UnattestedFiles string `yaml:"unattested_files"`
	// MetricsListen is the HTTP address serving Prometheus /metrics;
	// empty turns metrics off.
	MetricsListen string `yaml:"metrics_listen"`
	// Hook is the hook listener, for agents' hooks over HTTP; off by
	// default.
	Hook HookConfig `yaml:"hook"`
	// MaxToolInputBytes caps the encoded size of tool.input.
	MaxToolInputBytes int `yaml:"max_tool_input_bytes"`
	// MaxTranscriptEntries caps the transcript of one check, and the
	// transcript a stream keeps (older entries are dropped first).
	MaxTranscriptEntries int `yaml:"max_transcript_entries"`
	// MaxStreamInFlight bounds the checks of one stream that wait on the
	// classifier at once; past it, the stream is not read until one
	// finishes. Checks the local stages decide are answered as they
	// arrive and hold no slot.
	MaxStreamInFlight int `yaml:"max_stream_in_flight"`
	// MaxTranscriptEntryBytes caps the text of one transcript entry.
	MaxTranscriptEntryBytes int `yaml:"max_transcript_entry_bytes"`
	// MaxHeldTranscriptBytes caps the transcripts all open streams hold
	// together, counted as they are held in memory (text, and tool-call
	// inputs as Go maps, which can be twenty times their encoded size): a
	// transcript that would pass it is refused with RESOURCE_EXHAUSTED.
	MaxHeldTranscriptBytes int `yaml:"max_held_transcript_bytes"`
	// MaxRecvMsgBytes caps one message from a client; larger ones are
	// refused with ResourceExhausted before they are decoded.
	MaxRecvMsgBytes int `yaml:"max_recv_msg_bytes"`
	// MaxConcurrentStreams caps the RPCs one connection runs at once;
	// further ones wait for a free slot. Each open stream may hold a
	// header list (MaxHeaderListBytes) and a stream window
	// (StreamWindowBytes) of unread data, so this also bounds what one
	// connection can make the server hold: 256 × (16 + 64) KiB = 20 MiB.
	// An agent runs one stream per session and a few unary checks at
	// once; 256 leaves a shared sidecar or proxy connection plenty.
	MaxConcurrentStreams uint32 `yaml:"max_concurrent_streams"`
	// MaxMessageItems bounds, per request and before it is decoded, the
	// things decoding allocates one by one: Struct fields and values,
	// list elements, transcript entries, repeated strings. A request past
	// it is refused with RESOURCE_EXHAUSTED without being decoded. A
	// million empty objects are 4 MB on the wire and over 130 MB decoded;
	// real requests are far below the default (100,000, about 25 MiB
	// decoded at worst): a MultiEdit of 100 edits is about 400 items, a
	// full transcript of 500 entries with tool calls a few thousand.
	MaxMessageItems int `yaml:"max_message_items"`
	// MaxValueDepth bounds how deep Struct and list values nest in a
	// request, checked before it is decoded: past it the request is
	// refused with INVALID_ARGUMENT, as protobuf's own recursion limit
	// (10,000) is. Real tool inputs nest under 20 deep; conversions and
	// the engine walk values recursively, so deep ones cost stack.
	MaxValueDepth int `yaml:"max_value_depth"`
	// DecodeBudgetBytes bounds the estimated decoded size of all the
	// requests being decoded and held by handlers at once (estimated on
	// the wire, before decoding). A request that would pass it is refused
	// with RESOURCE_EXHAUSTED, not decoded. Requests over 1 MiB decoded
	// may use only three quarters of it, so that ordinary checks keep
	// being decoded while large ones flood the server. Size the pod's
	// memory limit at least this plus 128 MiB.
	DecodeBudgetBytes int64 `yaml:"decode_budget_bytes"`
	// StreamWindowBytes is each stream's HTTP/2 flow-control window: how
	// much a client may send on one stream that the server has not read.
	// Fixed rather than auto-tuned: grpc-go's BDP estimation grows it to
	// 16 MiB a stream, and a stream the server stops reading (its client
	// does not read the answers) then holds that much. A message larger
	// than the window costs one window update more when read (grpc-go
	// opens the window to the message's size once it reads its header),
	// nothing measurable on loopback (BenchmarkLargeCheckWindow).
	StreamWindowBytes int32 `yaml:"stream_window_bytes"`
	// ConnWindowBytes is each connection's HTTP/2 flow-control window.
	// grpc-go returns it as data arrives, whether or not a stream reads
	// it, so it bounds throughput, not memory; fixed with the stream
	// window (grpc-go fixes both or tunes both).
	ConnWindowBytes int32 `yaml:"conn_window_bytes"`
	// MaxHeaderListBytes caps a request's header list, uncompressed
	// (HTTP/2 SETTINGS_MAX_HEADER_LIST_SIZE). Without it grpc-go accepts
	// 16 MiB, and HPACK lets a client send that in a few hundred bytes:
	// 40 streams held 1.4 GiB. A bearer token, traceparent/tracestate,
	// baggage and a user agent are under 4 KiB; 16 KiB leaves room for
	// a JWT with many claims and a proxy's additions.
	MaxHeaderListBytes uint32 `yaml:"max_header_list_bytes"`
	// StreamWorkers are goroutines that serve RPCs one after another and
	// keep the stacks they grew (a check's analysis recurses deeply, and a
	// fresh goroutine grows its stack again on every call). An RPC that
	// finds every worker busy gets a goroutine of its own, so none waits
	// for a worker. The connection's reader hands out a whole burst of
	// RPCs before any worker runs, so there are many more workers than
	// CPUs (idle ones cost a stack each). 0 starts a goroutine per RPC.
	StreamWorkers uint32 `yaml:"stream_workers"`
	// Keepalive sets pings and connection ages.
	Keepalive KeepaliveConfig `yaml:"keepalive"`
	// TLS turns on TLS, and mutual TLS with a client CA.
	TLS TLSConfig `yaml:"tls"`
	// TokenFile, when set, requires a bearer token from every client
	// except health checks. Each line is "NAME TOKEN"; # starts a comment.
	TokenFile string `yaml:"token_file"`
	// Tracing exports OpenTelemetry spans of RPCs; off by default.
	Tracing TracingConfig `yaml:"tracing"`
	// Version is reported with traces; set by the binary, not in YAML.
	Version string `yaml:"-"`
	// Audit sends each decision with its redacted tool input to a file.
	Audit AuditConfig `yaml:"audit"`
	// Reflection turns on gRPC server reflection (for grpcurl).
	Reflection bool `yaml:"reflection"`
	// ShutdownTimeout bounds the graceful stop; after it, open calls are cut.
	ShutdownTimeout time.Duration `yaml:"shutdown_timeout"`
}

// KeepaliveConfig holds the server's keepalive settings.
type KeepaliveConfig struct {
	// MinTime is the shortest ping interval a client may use; a client
	// pinging more often is sent GOAWAY ("too_many_pings").
	MinTime time.Duration `yaml:"min_time"`
	// PermitWithoutStream lets clients ping with no RPC open (idle hook
	// clients and load balancers do).
	PermitWithoutStream bool `yaml:"permit_without_stream"`
	// Time and Timeout: the server pings an idle connection after Time
	// and closes it when no answer comes within Timeout.
	Time    time.Duration `yaml:"time"`
	Timeout time.Duration `yaml:"timeout"`
	// MaxConnectionAge, when set, closes connections after this age (plus
	// MaxConnectionAgeGrace for open RPCs) so that clients rebalance over
	// replicas that were added since they connected.
	MaxConnectionAge      time.Duration `yaml:"max_connection_age"`
	MaxConnectionAgeGrace time.Duration `yaml:"max_connection_age_grace"`
}

// TLSConfig names PEM files.
type TLSConfig struct {
	CertFile string `yaml:"cert_file"`
	KeyFile  string `yaml:"key_file"`
	// ClientCAFile, when set, requires client certificates signed by it.
	ClientCAFile string `yaml:"client_ca_file"`
}

// Enabled reports whether TLS is configured.
func (c TLSConfig) Enabled() bool { return c.CertFile != "" }

// Values of Config.UnattestedFiles.
const (
	UnattestedLocalPeers = "local_peers"
	UnattestedUnseen     = "unseen"
)

// DefaultConfig returns the defaults.
func DefaultConfig() Config {
	return Config{
		Listen:                  "127.0.0.1:50051",
		UnixSocketMode:          "0600",
		UnattestedFiles:         UnattestedLocalPeers,
		MetricsListen:           "127.0.0.1:9464",
		Hook:                    defaultHookConfig(),
		MaxToolInputBytes:       256 << 10,
		MaxTranscriptEntries:    500,
		MaxStreamInFlight:       32,
		MaxTranscriptEntryBytes: 64 << 10,
		MaxHeldTranscriptBytes:  64 << 20,
		MaxRecvMsgBytes:         4 << 20,
		MaxConcurrentStreams:    256,
		MaxMessageItems:         100_000,
		MaxValueDepth:           512,
		DecodeBudgetBytes:       128 << 20,
		StreamWindowBytes:       64 << 10,
		ConnWindowBytes:         1 << 20,
		MaxHeaderListBytes:      16 << 10,
		StreamWorkers:           uint32(max(64, 16*runtime.GOMAXPROCS(0))),
		Keepalive: KeepaliveConfig{
			MinTime:             10 * time.Second,
			PermitWithoutStream: true,
			Time:                2 * time.Hour,
			Timeout:             20 * time.Second,
		},
		Audit:           AuditConfig{MaxSizeMB: 100, MaxBackups: 10},
		Tracing:         TracingConfig{SampleRatio: 1},
		Reflection:      true,
		ShutdownTimeout: 10 * time.Second,
	}
}

// Validate reports the first bad field.
func (c *Config) Validate() error {
	var errs []error
	if _, _, err := net.SplitHostPort(c.Listen); err != nil {
		errs = append(errs, fmt.Errorf("server.listen: %q is not host:port: %w", c.Listen, err))
	}
	if c.UnixSocket != "" {
		if !filepath.IsAbs(c.UnixSocket) || len(c.UnixSocket) >= maxUnixSocketPath {
			errs = append(errs, fmt.Errorf("server.unix_socket: %q must be an absolute path shorter than %d bytes", c.UnixSocket, maxUnixSocketPath))
		}
	}
	if _, err := c.SocketMode(); err != nil {
		errs = append(errs, err)
	}
	if c.UnattestedFiles != UnattestedLocalPeers && c.UnattestedFiles != UnattestedUnseen {
		errs = append(errs, fmt.Errorf("server.unattested_files: %q: want %s or %s", c.UnattestedFiles, UnattestedLocalPeers, UnattestedUnseen))
	}
	if c.MetricsListen != "" {
		if _, _, err := net.SplitHostPort(c.MetricsListen); err != nil {
			errs = append(errs, fmt.Errorf("server.metrics_listen: %q is not host:port (empty turns metrics off): %w", c.MetricsListen, err))
		}
	}
	errs = append(errs, c.Hook.validate(c.TokenFile != "", c.TLS.Enabled())...)
	if c.MaxToolInputBytes <= 0 {
		errs = append(errs, fmt.Errorf("server.max_tool_input_bytes: must be positive, got %d", c.MaxToolInputBytes))
	}
	if c.MaxTranscriptEntries <= 0 {
		errs = append(errs, fmt.Errorf("server.max_transcript_entries: must be positive, got %d", c.MaxTranscriptEntries))
	}
	if c.MaxHeldTranscriptBytes <= 0 {
		errs = append(errs, fmt.Errorf("server.max_held_transcript_bytes: must be positive, got %d", c.MaxHeldTranscriptBytes))
	}
	if c.MaxTranscriptEntryBytes <= 0 {
		errs = append(errs, fmt.Errorf("server.max_transcript_entry_bytes: must be positive, got %d", c.MaxTranscriptEntryBytes))
	}
	if c.MaxRecvMsgBytes < c.MaxToolInputBytes {
		errs = append(errs, fmt.Errorf("server.max_recv_msg_bytes: %d is below max_tool_input_bytes %d", c.MaxRecvMsgBytes, c.MaxToolInputBytes))
	}
	if c.MaxConcurrentStreams == 0 {
		errs = append(errs, errors.New("server.max_concurrent_streams: must be positive"))
	}
	if c.MaxMessageItems <= 0 {
		errs = append(errs, fmt.Errorf("server.max_message_items: must be positive, got %d", c.MaxMessageItems))
	}
	if c.MaxValueDepth <= 0 {
		errs = append(errs, fmt.Errorf("server.max_value_depth: must be positive, got %d", c.MaxValueDepth))
	}
	// A lone request at the per-message bounds must fit in the part of the
	// budget large requests may use, or it could never be decoded.
	if need := maxRequestCost(c.MaxRecvMsgBytes, c.MaxMessageItems); c.DecodeBudgetBytes-c.DecodeBudgetBytes/4 < need {
		errs = append(errs, fmt.Errorf("server.decode_budget_bytes: %d is too small for one request at max_recv_msg_bytes and max_message_items (needs %d, plus a quarter kept for small requests)", c.DecodeBudgetBytes, need*4/3+1))
	}
	// grpc-go ignores windows under 64 KiB (the HTTP/2 default).
	if c.StreamWindowBytes < 64<<10 {
		errs = append(errs, fmt.Errorf("server.stream_window_bytes: must be at least 65536, got %d", c.StreamWindowBytes))
	}
	if c.ConnWindowBytes < 64<<10 {
		errs = append(errs, fmt.Errorf("server.conn_window_bytes: must be at least 65536, got %d", c.ConnWindowBytes))
	}
	if c.MaxHeaderListBytes < 4<<10 {
		errs = append(errs, fmt.Errorf("server.max_header_list_bytes: must be at least 4096 (a bearer token and trace headers), got %d", c.MaxHeaderListBytes))
	}
	k := c.Keepalive
	if k.MinTime <= 0 || k.Time <= 0 || k.Timeout <= 0 || k.MaxConnectionAge < 0 || k.MaxConnectionAgeGrace < 0 {
		errs = append(errs, fmt.Errorf("server.keepalive: min_time, time and timeout must be positive and the ages not negative, got %+v", k))
	}
	if (c.TLS.CertFile == "") != (c.TLS.KeyFile == "") {
		errs = append(errs, errors.New("server.tls: cert_file and key_file go together"))
	}
	if c.TLS.ClientCAFile != "" && !c.TLS.Enabled() {
		errs = append(errs, errors.New("server.tls.client_ca_file: needs cert_file and key_file"))
	}
	if err := c.Tracing.validate(); err != nil {
		errs = append(errs, err)
	}
	if err := c.Audit.validate(); err != nil {
		errs = append(errs, err)
	}
	if c.MaxStreamInFlight <= 0 {
		errs = append(errs, fmt.Errorf("server.max_stream_in_flight: must be positive, got %d", c.MaxStreamInFlight))
	}
	if c.ShutdownTimeout <= 0 {
		errs = append(errs, fmt.Errorf("server.shutdown_timeout: must be positive, got %s", c.ShutdownTimeout))
	}
	return errors.Join(errs...)
}

// maxUnixSocketPath is the size of sun_path on Linux, its NUL included.
const maxUnixSocketPath = 108

// SocketMode parses UnixSocketMode.
func (c *Config) SocketMode() (fs.FileMode, error) {
	m, err := strconv.ParseUint(c.UnixSocketMode, 8, 32)
	if err != nil || m > 0o777 {
		return 0, fmt.Errorf("server.unix_socket_mode: %q is not octal permission bits (0600, 0660)", c.UnixSocketMode)
	}
	return fs.FileMode(m), nil
}

// serverOptions turns the limits and TLS settings into grpc options.
func (c *Config) serverOptions() ([]grpc.ServerOption, error) {
	opts := []grpc.ServerOption{
		grpc.MaxRecvMsgSize(c.MaxRecvMsgBytes),
		grpc.MaxConcurrentStreams(c.MaxConcurrentStreams),
		grpc.StaticStreamWindowSize(c.StreamWindowBytes),
		grpc.StaticConnWindowSize(c.ConnWindowBytes),
		grpc.MaxHeaderListSize(c.MaxHeaderListBytes),
		grpc.NumStreamWorkers(c.StreamWorkers),
		grpc.KeepaliveEnforcementPolicy(keepalive.EnforcementPolicy{
			MinTime:             c.Keepalive.MinTime,
			PermitWithoutStream: c.Keepalive.PermitWithoutStream,
		}),
		grpc.KeepaliveParams(keepalive.ServerParameters{
			Time:                  c.Keepalive.Time,
			Timeout:               c.Keepalive.Timeout,
			MaxConnectionAge:      c.Keepalive.MaxConnectionAge,
			MaxConnectionAgeGrace: c.Keepalive.MaxConnectionAgeGrace,
		}),
	}
	if c.TLS.Enabled() {
		creds, err := tlsCredentials(c.TLS)
		if err != nil {
			return nil, err
		}
		opts = append(opts, grpc.Creds(creds))
	}
	return opts, nil
}
