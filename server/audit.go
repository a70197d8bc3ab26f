package server

import (
	"fmt"
	"io"
	"strings"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"google.golang.org/protobuf/encoding/protojson"

	pb "github.com/toolgate/toolgate/gen/toolgate/v1"
	"github.com/toolgate/toolgate/internal/ownfile"
	"github.com/toolgate/toolgate/redact"
)

// AuditConfig sends every decision, with its redacted tool input and
// reason, to a JSON lines file of its own, rotated by size.
type AuditConfig struct {
	// File is the audit log; empty turns the audit log off.
	File string `yaml:"file"`
	// MaxSizeMB rotates the file when it reaches this many megabytes.
	MaxSizeMB int `yaml:"max_size_mb"`
	// MaxBackups is how many rotated files are kept.
	MaxBackups int `yaml:"max_backups"`
}

func (c AuditConfig) validate() error {
	if c.File == "" {
		return nil
	}
	if c.MaxSizeMB <= 0 || c.MaxBackups < 0 {
		return fmt.Errorf("server.audit: max_size_mb must be positive and max_backups not negative, got %d and %d", c.MaxSizeMB, c.MaxBackups)
	}
	// The backups are kept from the agents by glob (see Backups): a path
	// that is itself a glob would guard other files, or not its own.
	if strings.ContainsAny(c.File, "*?[]\\") {
		return fmt.Errorf("server.audit.file: %q may not hold glob characters (*?[]\\): toolgate keeps its backups from the agents by glob", c.File)
	}
	return nil
}

// The audit queue's bounds. A check's handler hands its record to the
// queue and goes on; a writer goroutine writes it, so that an audit file
// system that stops answering (NFS, FUSE) holds that goroutine alone,
// never a check. 16 MiB is seconds of records at the rates one server
// decides (a record is a few hundred bytes, a large tool input's at most
// max_recv_msg_bytes, 4 MiB by default), enough to ride out a slow disk's
// pauses; twice that (the queue and the batch being written) is a small
// part of the memory a pod is given. 16,384 records bounds the
// bookkeeping of many small records in the same space. A record that
// finds the queue full is counted in toolgate_audit_write_failures_total
// and reported on the main log, like one the disk refused.
const (
	auditQueueBytes   = 16 << 20
	auditQueueRecords = 16 << 10
)

// auditWait bounds how long a SIGHUP's reopen waits for the audit writer,
// and how long Shutdown waits for it to write what is queued and close
// the file: microseconds unless its file system does not answer.
const auditWait = time.Second

// openAudit opens the audit log, creating the file now so that a path the
// server cannot write is a startup error, not records lost later. A record
// that cannot be written later is counted (failed) and reported on the
// main log, rate-limited (see ownfile).
func openAudit(c AuditConfig, log *zap.Logger, failed func(int)) (*zap.Logger, *ownfile.Queue, error) {
	f, err := ownfile.Open(ownfile.Options{
		Path: c.File, Field: "server.audit.file", What: "audit",
		MaxSize: int64(c.MaxSizeMB) << 20, MaxBackups: c.MaxBackups,
		Log: log, Failed: failed,
	})
	if err != nil {
		return nil, nil, err
	}
	q := ownfile.NewQueue(f, auditQueueBytes, auditQueueRecords)
	enc := zap.NewProductionEncoderConfig()
	enc.TimeKey = "ts"
	enc.EncodeTime = zapcore.ISO8601TimeEncoder
	// No zapcore.Lock: the queue serialises its writes itself. zap's own
	// error output would log each failure again, unlimited.
	core := zapcore.NewCore(zapcore.NewJSONEncoder(enc), zapcore.AddSync(q), zap.InfoLevel)
	return zap.New(core, zap.ErrorOutput(zapcore.AddSync(io.Discard))), q, nil
}

// auditFields are what the audit log adds to the decision line: the tool
// input and the reason, with credentials masked.
func auditFields(req *pb.CheckRequest, resp *pb.CheckResponse) []zap.Field {
	input := "{}"
	if in := req.GetTool().GetInput(); in != nil {
		if b, err := protojson.Marshal(in); err == nil {
			input = string(b)
		}
	}
	return []zap.Field{
		zap.String("tool_input", redact.String(input)),
		zap.String("reason", redact.String(resp.GetReason())),
		zap.String("working_directory", req.GetWorkingDirectory()),
		zap.Bool("unattended", req.GetUnattended()),
	}
}

// Backups are the globs of the files the audit log writes besides the
// file itself: its backups, rotated (with lumberjack's gzip suffix too) or
// set aside, beside it. Empty without an audit log.
func (c AuditConfig) Backups() []string {
	if c.File == "" {
		return nil
	}
	return ownfile.Backups(c.File)
}
