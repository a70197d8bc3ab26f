package classifier

import (
	"context"
	"encoding/json"
	"time"

	"go.uber.org/zap"

	"github.com/toolgate/toolgate/internal/ownfile"
	"github.com/toolgate/toolgate/redact"
)

// dumper appends each side-query and its answer to a file as JSON lines,
// for debugging prompts. Credentials are redacted from everything written;
// API keys never reach it at all. The file has the audit log's guarantees
// (ownfile): never written through a link, noticed when removed or
// replaced, reopened on SIGHUP, and written by a goroutine of its own
// through a bounded queue, so that its file system cannot hold a check;
// a record not written is counted (toolgate_classifier_dump_write_failures_total)
// and reported on the main log, rate-limited.
type dumper struct {
	q     *ownfile.Queue
	known []string // API key values, masked wherever they appear
}

// The dump queue's bounds: a record holds a whole prompt (the action up to
// max_action_bytes, the transcript's excerpt) and the model's answer, tens
// of kilobytes; 8 MiB holds hundreds of them, far more than the pool's
// calls in flight. Twice that (the queue and the batch being written) is
// the most it costs.
const (
	dumpQueueBytes   = 8 << 20
	dumpQueueRecords = 4 << 10
)

// dumpWait bounds how long a reopen (SIGHUP) and a close (a reload's
// retired classifier, shutdown) wait for the dump's writer: microseconds
// unless its file system does not answer.
const dumpWait = time.Second

type dumpRecord struct {
	Time         time.Time `json:"time"`
	Key          string    `json:"key"`
	Backend      string    `json:"backend,omitempty"`
	Model        string    `json:"model,omitempty"`
	Stage        string    `json:"stage,omitempty"`
	System       string    `json:"system"`
	User         string    `json:"user"`
	Thinking     string    `json:"thinking,omitempty"`
	Category     string    `json:"category,omitempty"`
	ShouldBlock  *bool     `json:"should_block,omitempty"`
	Reason       string    `json:"reason,omitempty"`
	Error        string    `json:"error,omitempty"`
	LatencyMicro int64     `json:"latency_us"`
	InputTokens  int64     `json:"input_tokens"`
	// CachedInputTokens are those of InputTokens read from the prompt cache.
	CachedInputTokens int64 `json:"cached_input_tokens"`
	OutputTokens      int64 `json:"output_tokens"`
}

func openDump(path string, known []string, log *zap.Logger, failed func(int)) (*dumper, error) {
	f, err := ownfile.Open(ownfile.Options{Path: path, Field: "classifier.dump_file", What: "classifier dump", Log: log, Failed: failed})
	if err != nil {
		return nil, err
	}
	return &dumper{q: ownfile.NewQueue(f, dumpQueueBytes, dumpQueueRecords), known: known}, nil
}

func (d *dumper) write(key string, p Prompt, o outcome, err error, latency time.Duration) error {
	if d == nil {
		return nil
	}
	r := dumpRecord{
		Time: time.Now().UTC(), Key: key, Backend: o.backend, Model: o.model, Stage: o.stage,
		System: redact.String(p.System, d.known...), User: redact.String(p.User, d.known...),
		LatencyMicro: latency.Microseconds(), InputTokens: o.tokens.in, OutputTokens: o.tokens.out, CachedInputTokens: o.tokens.cached,
	}
	if err != nil {
		r.Error = redact.String(err.Error(), d.known...)
	} else {
		block := o.Block
		r.ShouldBlock = &block
		r.Category = o.Category // a name of the policy's, or "unknown"
		r.Thinking = redact.String(o.Thinking, d.known...)
		r.Reason = redact.String(o.Reason, d.known...)
	}
	line, jerr := json.Marshal(r)
	if jerr != nil {
		return jerr
	}
	// A record the queue did not take is counted and reported there.
	_, werr := d.q.Write(append(line, '\n'))
	return werr
}

// reopen reopens the file (SIGHUP), waiting for its writer at most dumpWait.
func (d *dumper) reopen() error {
	if d == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), dumpWait)
	defer cancel()
	return d.q.Reopen(ctx)
}

// close writes what is queued and closes the file, within dumpWait.
func (d *dumper) close() error {
	if d == nil {
		return nil
	}
	return d.q.Close(dumpWait)
}
