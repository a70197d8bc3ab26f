package classifier

import (
	"encoding/json"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/toolgate/toolgate/redact"
)

// dumper appends each side-query and its answer to a file as JSON lines,
// for debugging prompts. Credentials are redacted from everything written;
// API keys never reach it at all.
type dumper struct {
	mu    sync.Mutex
	f     *os.File
	known []string // API key values, masked wherever they appear
}

type dumpRecord struct {
	Time         time.Time `json:"time"`
	Key          string    `json:"key"`
	Backend      string    `json:"backend,omitempty"`
	Model        string    `json:"model,omitempty"`
	Stage        string    `json:"stage,omitempty"`
	System       string    `json:"system"`
	User         string    `json:"user"`
	Thinking     string    `json:"thinking,omitempty"`
	ShouldBlock  *bool     `json:"should_block,omitempty"`
	Reason       string    `json:"reason,omitempty"`
	Error        string    `json:"error,omitempty"`
	LatencyMicro int64     `json:"latency_us"`
	InputTokens  int64     `json:"input_tokens"`
	OutputTokens int64     `json:"output_tokens"`
}

func openDump(path string, known []string) (*dumper, error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return nil, fmt.Errorf("classifier.dump_file: %w", err)
	}
	return &dumper{f: f, known: known}, nil
}

func (d *dumper) write(key string, p Prompt, o outcome, err error, latency time.Duration) error {
	if d == nil {
		return nil
	}
	r := dumpRecord{
		Time: time.Now().UTC(), Key: key, Backend: o.backend, Model: o.model, Stage: o.stage,
		System: redact.String(p.System, d.known...), User: redact.String(p.User, d.known...),
		LatencyMicro: latency.Microseconds(), InputTokens: o.inTok, OutputTokens: o.outTok,
	}
	if err != nil {
		r.Error = redact.String(err.Error(), d.known...)
	} else {
		block := o.Block
		r.ShouldBlock = &block
		r.Thinking = redact.String(o.Thinking, d.known...)
		r.Reason = redact.String(o.Reason, d.known...)
	}
	line, jerr := json.Marshal(r)
	if jerr != nil {
		return jerr
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	_, werr := d.f.Write(append(line, '\n'))
	return werr
}

func (d *dumper) close() error {
	if d == nil {
		return nil
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.f.Close()
}
