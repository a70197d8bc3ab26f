package app

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/encoding/protojson"

	"github.com/toolgate/toolgate/approvals"
	"github.com/toolgate/toolgate/approvals/store"
	"github.com/toolgate/toolgate/approvals/web"
	"github.com/toolgate/toolgate/approvals/webhook"
	"github.com/toolgate/toolgate/engine"
	pb "github.com/toolgate/toolgate/gen/toolgate/v1"
	"github.com/toolgate/toolgate/server"
	"github.com/toolgate/toolgate/upstream"
)

// shipperCloseWait bounds shutdown's wait for the shipper to write what
// is in memory to its spool: microseconds unless its disk stalled.
const shipperCloseWait = time.Second

// startShipper makes a local server with a state directory ship its
// decision records to the centre; the returned option hands them to it.
// Without a state directory nothing is shipped: the records would have
// nowhere to wait for the centre.
func (a *App) startShipper(cfg *Config, conn *grpc.ClientConn, um *upstream.Metrics, metrics *serveMetrics) ([]server.Option, error) {
	if cfg.Upstream.StateDir == "" {
		a.log.Warn("decision records are not shipped to the upstream: set upstream.state_dir (--state-dir) for their spool")
		return nil, nil
	}
	if err := um.RegisterRecords(metrics.reg); err != nil {
		return nil, err
	}
	sh, err := upstream.NewShipper(conn, upstream.ShipperOptions{
		Dir: upstream.SpoolDirOf(cfg.Upstream.StateDir), MaxBytes: int64(cfg.Upstream.RecordsSpoolMaxMB) << 20,
		Timeout: cfg.Upstream.Timeout, Log: a.log, Metrics: um,
	})
	if err != nil {
		return nil, fmt.Errorf("upstream.state_dir: the decision records' spool: %w", err)
	}
	// Closed after the gRPC server (closers run in reverse), so that the
	// last checks' records are spooled, and before the connection.
	a.onClose("decision records shipper", func() { sh.Close(shipperCloseWait) })
	return []server.Option{server.WithRecorder(sh)}, nil
}

// openApprovals opens the approvals store of a central server whose
// config has an approvals section: the approval queue that unattended
// questions wait in, and where ShipRecords keeps the local servers'
// decision records. Without the section there is neither: a policy's
// queued questions are denied (approval_unavailable), and ShipRecords
// answers FAILED_PRECONDITION (the local servers keep their records
// spooled).
func (a *App) openApprovals(cfg *Config, log *zap.Logger, reg *prometheus.Registry) ([]server.Option, engine.Approver, error) {
	if cfg.Upstream.Enabled() || cfg.File == nil || !cfg.File.Approvals.Written() {
		return nil, nil, nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	st, err := cfg.Approvals.Open(ctx, nil)
	if err != nil {
		return nil, nil, err
	}
	// Closed after the gRPC server: no ShipRecords is running then.
	a.onClose("approvals store", func() {
		if err := st.Close(); err != nil {
			a.log.Error("closing the approvals store", zap.Error(err))
		}
	})
	opts := approvals.Options{RuleTTL: cfg.Approvals.RuleTTL, MaxRuleTTL: cfg.Approvals.MaxRuleTTL, Origin: server.Origin, Host: server.Host, Log: log.Named("approvals"),
		MaxPending: cfg.Approvals.MaxPending, MaxPendingPerOrigin: cfg.Approvals.MaxPendingPerOrigin}
	var wn *webhook.Notifier
	if wh := cfg.Approvals.Webhook; wh.Enabled() {
		n, err := webhook.New(wh, nil, nil, log.Named("webhook"))
		if err != nil {
			_ = st.Close()
			return nil, nil, err
		}
		// Closed before the store (closers run in reverse), after the
		// server: no new question is queued then.
		a.onClose("approvals webhook", n.Close)
		opts.Notifier, wn = n, n
	}
	q := approvals.New(st, opts)
	a.approvals = q
	if err := reg.Register(newApprovalMetrics(q, wn)); err != nil {
		return nil, nil, err
	}
	stop := maintain(q, cfg.Approvals.Retention, approvalsMaintainEvery, log)
	a.onClose("approvals maintenance", stop)
	sink := recordSink(st)
	rec := newCentreRecorder(sink, log)
	// Closed after the server (no check is decided then), before the
	// store.
	a.onClose("centre decision records", rec.Close)
	if err := a.startApprovalsPage(cfg, q, log); err != nil {
		return nil, nil, err
	}
	return []server.Option{server.WithRecordSink(sink), server.WithRecorder(rec), server.WithApprovals(q)}, q, nil
}

// startApprovalsPage serves the approvers' page on approvals.web.listen,
// when set. Approvers sign in with a token of role approver from the
// server's token file, read once at start as the server reads it.
func (a *App) startApprovalsPage(cfg *Config, q *approvals.Queue, log *zap.Logger) error {
	wc := cfg.Approvals.Web
	if wc.Listen == "" {
		return nil
	}
	tokens, err := server.LoadTokens(cfg.Server.TokenFile)
	if err != nil {
		return err
	}
	lis, err := web.Listen(wc)
	if err != nil {
		return fmt.Errorf("approvals.web: %w", err)
	}
	a.approvalsWeb = lis.Addr()
	h := web.New(web.Options{Queue: q, Authenticate: tokens.Approver, Secure: wc.TLSEnabled(), SessionTTL: wc.SessionTTL, Log: log.Named("approvals_web")})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := web.Serve(ctx, lis, h, log.Named("approvals_web")); err != nil {
			log.Error("the approvers' page stopped", zap.Error(err))
		}
	}()
	a.onClose("approvals page", func() { cancel(); <-done })
	log.Info("approvers' page", zap.String("addr", lis.Addr().String()), zap.Bool("tls", wc.TLSEnabled()))
	return nil
}

// approvalsMaintainEvery is how often a centre expires the approvals
// nobody waits on and prunes what is past retention.
const approvalsMaintainEvery = time.Minute

// maintain runs q's maintenance now and every period until stop, which
// waits for a run in progress.
func maintain(q *approvals.Queue, retention, period time.Duration, log *zap.Logger) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(period)
		defer t.Stop()
		for {
			expired, pruned, err := q.Maintain(ctx, retention)
			if err != nil && ctx.Err() == nil {
				log.Warn("approvals maintenance", zap.Error(err))
			} else if expired+pruned > 0 {
				log.Info("approvals maintenance", zap.Int("expired", expired), zap.Int("pruned", pruned))
			}
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
		}
	}()
	return func() { cancel(); <-done }
}

// recordSink stores shipped records. What exceeds the store's bounds is
// cut rather than refused: the store takes a batch whole or not at all,
// and one long reason must not cost the batch.
func recordSink(st store.Store) server.RecordSink {
	return func(ctx context.Context, recs []*pb.DecisionRecord) (int, error) {
		out := make([]store.Record, 0, len(recs))
		for _, r := range recs {
			t := time.UnixMicro(r.GetTimeUnixMicros())
			if r.GetTimeUnixMicros() <= 0 {
				t = time.Now()
			}
			data, err := protojson.Marshal(r)
			if err != nil || len(data) > store.MaxRecordBytes {
				data = nil
			}
			out = append(out, store.Record{
				ID: r.GetId(), Time: t,
				Host:     store.Fit(r.GetHost(), store.MaxFieldBytes),
				Project:  store.Fit(r.GetProject(), store.MaxFieldBytes),
				Session:  store.Fit(r.GetSessionId(), store.MaxFieldBytes),
				Tool:     store.Fit(r.GetTool(), store.MaxFieldBytes),
				Decision: enumWord(r.GetDecision().String(), "DECISION_"),
				Source:   enumWord(r.GetSource().String(), "DECISION_SOURCE_"),
				Reason:   store.Fit(r.GetReason(), store.MaxReasonBytes),
				// Links an ASK that was queued to its approval.
				ApprovalID: store.Fit(r.GetApprovalId(), store.MaxIDBytes),
				Data:       data,
			})
		}
		n, err := st.AppendRecords(ctx, out)
		if errors.Is(err, store.ErrInvalid) {
			return n, fmt.Errorf("%w: %w", server.ErrInvalidRecords, err)
		}
		return n, err
	}
}

// enumWord is an enum value's name as the store keeps it: "allow",
// "classifier".
func enumWord(name, prefix string) string {
	return strings.ToLower(strings.TrimPrefix(name, prefix))
}
