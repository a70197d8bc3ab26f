package upstream

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/toolgate/toolgate/classifier/policy"
	"github.com/toolgate/toolgate/engine"
	pb "github.com/toolgate/toolgate/gen/toolgate/v1"
	"github.com/toolgate/toolgate/internal/reasontext"
	"github.com/toolgate/toolgate/internal/sessionblocks"
)

// maxReasonChars caps a reason from the centre (its classifier's, or a
// failure's) shown to the agent, as the classifier caps its own.
const maxReasonChars = 300

// maxDetailChars caps each classifier detail the centre names (backend,
// model, stage), which reach the decision line and the response.
const maxDetailChars = 128

// The centre's caps on the notes of a forwarded call (server/upstream.go):
// notes past them are left out here rather than the call refused there.
const (
	maxNotes           = 64
	maxNoteBytes       = 4096
	maxNotesTotalBytes = 16 << 10
)

// SessionLimits bring a human in when a session keeps getting blocked:
// after Consecutive blocks in a row, or Total in all, its calls are asked
// about without asking the centre.
type SessionLimits = sessionblocks.Limits

// Classifier is a local server's classifier: it forwards each call to the
// centre's Classify, with a deadline, and fails closed with source
// upstream_unavailable when the centre cannot be asked. The per-session
// block counters are kept here, where the session is: the centre sees
// calls of many local servers and counts none of them.
type Classifier struct {
	client   pb.UpstreamServiceClient
	addr     string
	timeout  time.Duration
	sessions *sessionblocks.Sessions
	metrics  *Metrics // nil: none
}

var _ engine.Classifier = (*Classifier)(nil)

// NewClassifier forwards to the centre at the other end of conn (named
// addr in reasons), each call bounded by timeout.
func NewClassifier(conn grpc.ClientConnInterface, addr string, timeout time.Duration, limits SessionLimits, m *Metrics) (*Classifier, error) {
	sessions, err := sessionblocks.New(limits)
	if err != nil {
		return nil, err
	}
	return &Classifier{client: pb.NewUpstreamServiceClient(conn), addr: addr, timeout: timeout, sessions: sessions, metrics: m}, nil
}

// Classify asks the centre.
func (c *Classifier) Classify(ctx context.Context, in *engine.ClassifyInput) (engine.Verdict, error) {
	if in == nil || in.Request == nil {
		return engine.Verdict{}, c.failed(errors.New("no request to forward"))
	}
	sess := c.sessions.Get(in.Request.SessionID)
	if reason, over := sess.Over(); over {
		return engine.Verdict{Decision: engine.Ask, Reason: reason}, nil
	}
	check, err := checkToProto(in.Request)
	if err != nil {
		return engine.Verdict{}, c.failed(err)
	}
	req := &pb.ClassifyRequest{Check: check, ToolKind: string(in.Kind), Notes: fitNotes(in.Notes), Policy: in.Policy, PolicyVersion: in.PolicyVersion}
	cctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	start := time.Now()
	resp, err := c.client.Classify(cctx, req)
	elapsed := time.Since(start)
	if err != nil {
		if ctx.Err() != nil {
			c.metrics.observe(resultCanceled, elapsed)
			return engine.Verdict{}, ctx.Err()
		}
		c.metrics.observe(resultError, elapsed)
		st, _ := status.FromError(err)
		return engine.Verdict{}, c.failed(fmt.Errorf("%s: %s", st.Code(), st.Message()))
	}
	details := detailsOf(resp.GetClassifier())
	// The centre's text reaches the agent and the logs: made safe and
	// capped here as this server's own classifier's would be.
	reason := reasontext.Sanitize(resp.GetReason(), maxReasonChars)
	decision, ok := decisionFromProto[resp.GetDecision()]
	switch src := resp.GetSource(); {
	case !ok:
		c.metrics.observe(resultBadAnswer, elapsed)
		return engine.Verdict{}, c.failed(errors.New("the upstream answered with no decision"))
	case (src == pb.DecisionSource_DECISION_SOURCE_CLASSIFIER || src == pb.DecisionSource_DECISION_SOURCE_CACHE) &&
		decision == engine.Allow && resp.GetClassifier().GetCategoryKind() != "" && resp.GetClassifier().GetCategoryKind() != string(policy.Allow):
		// What this server's own classifier refuses from a model: an
		// allow in a category that is not an allow one. (A centre older
		// than categories names none, and its allows stand.)
		c.metrics.observe(resultBadAnswer, elapsed)
		return engine.Verdict{}, c.failed(fmt.Errorf("the upstream allowed in a category of kind %q, which is not an allow category", cut(resp.GetClassifier().GetCategoryKind())))
	case src == pb.DecisionSource_DECISION_SOURCE_CLASSIFIER || src == pb.DecisionSource_DECISION_SOURCE_CACHE:
		c.metrics.observe(resultOK, elapsed)
		sess.Record(decision == engine.Deny)
		cached := src == pb.DecisionSource_DECISION_SOURCE_CACHE
		if details != nil {
			details.Cached = cached
		}
		return engine.Verdict{Decision: decision, Reason: reason, Cached: cached, Details: details}, nil
	case src == pb.DecisionSource_DECISION_SOURCE_NO_CLASSIFIER:
		c.metrics.observe(resultOK, elapsed)
		return engine.Verdict{Decision: engine.Ask, Source: engine.SourceNoClassifier, Reason: "the upstream toolgate has no classifier: " + reason}, nil
	case src == pb.DecisionSource_DECISION_SOURCE_CLASSIFIER_UNAVAILABLE:
		// The centre's classifier failed: this server's on_unavailable
		// answers, with the centre's reason.
		c.metrics.observe(resultOK, elapsed)
		return engine.Verdict{}, &engine.ClassifierError{Err: errors.New(reason), Reason: "at the upstream toolgate: " + reason, Details: details}
	default:
		c.metrics.observe(resultBadAnswer, elapsed)
		return engine.Verdict{}, c.failed(fmt.Errorf("the upstream answered with source %s, which is not a classification", src))
	}
}

// failed is the error of a call the centre did not answer.
func (c *Classifier) failed(err error) error {
	return &engine.ClassifierError{Err: fmt.Errorf("upstream %s: %w", c.addr, err), Reason: cut(fmt.Sprintf("upstream %s: %v", c.addr, err)), Source: engine.SourceUpstreamUnavailable}
}

// cut makes s safe for a reason, and caps it.
func cut(s string) string { return reasontext.Sanitize(s, maxReasonChars) }

// fitNotes is notes within the centre's caps: each cut, and those past
// the count or the total left out.
func fitNotes(notes []string) []string {
	var out []string
	total := 0
	for _, n := range notes {
		if len(out) == maxNotes {
			break
		}
		if len(n) > maxNoteBytes {
			n = strings.ToValidUTF8(n[:maxNoteBytes-3], "") + "..."
		}
		if total+len(n) > maxNotesTotalBytes {
			break
		}
		total += len(n)
		out = append(out, n)
	}
	return out
}

func detailsOf(ci *pb.ClassifierInfo) *engine.ClassifierDetails {
	if ci == nil {
		return nil
	}
	d := func(s string) string { return reasontext.Sanitize(s, maxDetailChars) }
	out := &engine.ClassifierDetails{Backend: d(ci.GetBackend()), Model: d(ci.GetModel()), Stage: d(ci.GetStage()),
		LatencyMicro: ci.GetLatencyMicros(), InputTokens: ci.GetInputTokens(), OutputTokens: ci.GetOutputTokens(), Cached: ci.GetCached(),
		CachedInputTokens: min(max(ci.GetCachedInputTokens(), 0), max(ci.GetInputTokens(), 0))}
	// A category is a name of the centre's policy, and a kind one of
	// three: anything else is recorded as unknown, never kept as text.
	if cat := ci.GetCategory(); cat != "" {
		out.Category = policy.Unknown
		if k, ok := policy.ParseKind(ci.GetCategoryKind()); ok && policy.ValidName(cat) {
			out.Category, out.CategoryKind = cat, string(k)
		}
	}
	return out
}

var decisionFromProto = map[pb.Decision]engine.Decision{
	pb.Decision_DECISION_ALLOW: engine.Allow,
	pb.Decision_DECISION_DENY:  engine.Deny,
	pb.Decision_DECISION_ASK:   engine.Ask,
}

var modeToProto = map[engine.Mode]pb.PermissionMode{
	engine.ModeUnspecified: pb.PermissionMode_PERMISSION_MODE_UNSPECIFIED,
	engine.ModeAuto:        pb.PermissionMode_PERMISSION_MODE_AUTO,
	engine.ModeDefault:     pb.PermissionMode_PERMISSION_MODE_DEFAULT,
	engine.ModeAcceptEdits: pb.PermissionMode_PERMISSION_MODE_ACCEPT_EDITS,
	engine.ModePlan:        pb.PermissionMode_PERMISSION_MODE_PLAN,
	engine.ModeBypass:      pb.PermissionMode_PERMISSION_MODE_BYPASS,
}

var roleToProto = map[engine.Role]pb.Role{
	engine.RoleUser:       pb.Role_ROLE_USER,
	engine.RoleAssistant:  pb.Role_ROLE_ASSISTANT,
	engine.RoleToolResult: pb.Role_ROLE_TOOL_RESULT,
	engine.RoleSystem:     pb.Role_ROLE_SYSTEM,
}

// checkToProto is the check as the local server received it, its
// session's defaults filled in.
func checkToProto(r *engine.Request) (*pb.CheckRequest, error) {
	tool, err := toolToProto(r.Tool)
	if err != nil {
		return nil, fmt.Errorf("tool.input: %w", err)
	}
	out := &pb.CheckRequest{
		RequestId:             r.RequestID,
		SessionId:             r.SessionID,
		Tool:                  tool,
		WorkingDirectory:      r.WorkingDirectory,
		AdditionalDirectories: r.AdditionalDirectories,
		Mode:                  modeToProto[r.Mode],
		Policy:                r.Policy,
		// The centre is where an unattended question can be taken to
		// someone: it must know nobody is at the terminal.
		Unattended: r.Unattended,
	}
	if len(r.Rules.Allow)+len(r.Rules.Ask)+len(r.Rules.Deny) > 0 {
		out.Rules = &pb.Rules{Allow: r.Rules.Allow, Ask: r.Rules.Ask, Deny: r.Rules.Deny}
	}
	for _, e := range r.Transcript {
		pe := &pb.TranscriptEntry{Role: roleToProto[e.Role], Text: e.Text}
		if e.ToolCall != nil {
			if pe.ToolCall, err = toolToProto(*e.ToolCall); err != nil {
				return nil, fmt.Errorf("transcript: %w", err)
			}
		}
		out.Transcript = append(out.Transcript, pe)
	}
	return out, nil
}

func toolToProto(t engine.ToolCall) (*pb.ToolCall, error) {
	in, err := structpb.NewStruct(t.Input)
	if err != nil {
		return nil, err
	}
	return &pb.ToolCall{Name: t.Name, Input: in}, nil
}
