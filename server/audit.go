package server

import (
	"fmt"
	"io"
	"strings"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"google.golang.org/protobuf/encoding/protojson"

	pb "github.com/toolgate/toolgate/gen/toolgate/v1"
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

// openAudit opens the audit log, creating the file now so that a path the
// server cannot write is a startup error, not records lost later. A record
// that cannot be written later is counted (failed) and reported on the
// main log by the file itself, rate-limited (see auditFile).
func openAudit(c AuditConfig, log *zap.Logger, failed func()) (*zap.Logger, *auditFile, error) {
	w, err := newAuditFile(c, log, failed)
	if err != nil {
		return nil, nil, err
	}
	enc := zap.NewProductionEncoderConfig()
	enc.TimeKey = "ts"
	enc.EncodeTime = zapcore.ISO8601TimeEncoder
	// No zapcore.Lock: the file serialises its writes itself. zap's own
	// error output would log each failure again, unlimited.
	core := zapcore.NewCore(zapcore.NewJSONEncoder(enc), zapcore.AddSync(w), zap.InfoLevel)
	return zap.New(core, zap.ErrorOutput(zapcore.AddSync(io.Discard))), w, nil
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
	}
}
