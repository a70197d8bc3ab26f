package server

import (
	"bytes"
	"fmt"
	"io"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"google.golang.org/protobuf/encoding/protojson"
	"gopkg.in/natefinch/lumberjack.v2"

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
	if c.File != "" && (c.MaxSizeMB <= 0 || c.MaxBackups < 0) {
		return fmt.Errorf("server.audit: max_size_mb must be positive and max_backups not negative, got %d and %d", c.MaxSizeMB, c.MaxBackups)
	}
	return nil
}

// openAudit opens the audit log, creating the file now so that a path the
// server cannot write is a startup error, not records lost later. Later
// write errors go to the main log.
func openAudit(c AuditConfig, log *zap.Logger) (*zap.Logger, io.Closer, error) {
	w := &lumberjack.Logger{Filename: c.File, MaxSize: c.MaxSizeMB, MaxBackups: c.MaxBackups}
	if _, err := w.Write(nil); err != nil {
		return nil, nil, fmt.Errorf("server.audit.file: %w", err)
	}
	enc := zap.NewProductionEncoderConfig()
	enc.TimeKey = "ts"
	enc.EncodeTime = zapcore.ISO8601TimeEncoder
	core := zapcore.NewCore(zapcore.NewJSONEncoder(enc), zapcore.Lock(zapcore.AddSync(w)), zap.InfoLevel)
	return zap.New(core, zap.ErrorOutput(zapcore.AddSync(auditErrors{log}))), w, nil
}

// auditErrors reports the audit logger's own write failures.
type auditErrors struct{ log *zap.Logger }

func (a auditErrors) Write(p []byte) (int, error) {
	a.log.Error("audit log write failed; the decision was made but not audited", zap.ByteString("error", bytes.TrimSpace(p)))
	return len(p), nil
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
