package server

import (
	"fmt"
	"path/filepath"
	"strings"
	"unicode/utf8"

	"google.golang.org/protobuf/proto"

	"github.com/toolgate/toolgate/engine"
	pb "github.com/toolgate/toolgate/gen/toolgate/v1"
)

// maxIDBytes caps names and ids that end up in logs.
const maxIDBytes = 256

// Caps on what a request names beyond its tool input: every directory is
// resolved and every rule compiled per check, and all of them may reach the
// classifier's prompt. PATH_MAX bounds a path anyway.
const (
	maxPathBytes    = 4096
	maxDirectories  = 64
	maxRequestRules = 256
)

// quoteCut is the start of a client's string, for an error that quotes it:
// an answer that echoes kilobytes of what the client sent costs the server
// that much again for every answer a client leaves unread.
func quoteCut(s string) string {
	const n = 128
	if len(s) <= n {
		return s
	}
	return strings.ToValidUTF8(s[:n], "") + "..."
}

// validationError is a request the server refuses before the engine sees it.
type validationError struct{ msg string }

func (e *validationError) Error() string { return e.msg }

func invalid(format string, args ...any) error {
	return &validationError{msg: fmt.Sprintf(format, args...)}
}

// toEngine validates a CheckRequest and maps it to the engine's request.
func (s *Service) toEngine(req *pb.CheckRequest) (*engine.Request, error) {
	if req.GetTool().GetName() == "" {
		return nil, invalid("tool.name is required")
	}
	if len(req.GetTool().GetName()) > maxIDBytes {
		return nil, invalid("tool.name is over %d bytes", maxIDBytes)
	}
	if len(req.GetRequestId()) > maxIDBytes || len(req.GetSessionId()) > maxIDBytes || len(req.GetPolicy()) > maxIDBytes {
		return nil, invalid("request_id, session_id and policy are limited to %d bytes", maxIDBytes)
	}
	if n := structSize(req.GetTool().GetInput()); n > s.cfg.MaxToolInputBytes {
		return nil, invalid("tool.input is %d bytes, over the limit of %d", n, s.cfg.MaxToolInputBytes)
	}
	if wd := req.GetWorkingDirectory(); len(wd) > maxPathBytes {
		return nil, invalid("working_directory is %d bytes, over the limit of %d", len(wd), maxPathBytes)
	} else if wd != "" && !filepath.IsAbs(wd) {
		return nil, invalid("working_directory %q is not an absolute path", quoteCut(wd))
	}
	if n := len(req.GetAdditionalDirectories()); n > maxDirectories {
		return nil, invalid("additional_directories has %d entries, over the limit of %d", n, maxDirectories)
	}
	for i, d := range req.GetAdditionalDirectories() {
		switch {
		case len(d) > maxPathBytes:
			return nil, invalid("additional_directories[%d] is %d bytes, over the limit of %d", i, len(d), maxPathBytes)
		case !filepath.IsAbs(d):
			return nil, invalid("additional_directories[%d] %q is not an absolute path", i, quoteCut(d))
		}
	}
	if r := req.GetRules(); len(r.GetAllow())+len(r.GetAsk())+len(r.GetDeny()) > maxRequestRules {
		return nil, invalid("rules has %d entries, over the limit of %d", len(r.GetAllow())+len(r.GetAsk())+len(r.GetDeny()), maxRequestRules)
	}
	for _, list := range [][]string{req.GetRules().GetAllow(), req.GetRules().GetAsk(), req.GetRules().GetDeny()} {
		for _, rule := range list {
			if len(rule) > maxPathBytes {
				return nil, invalid("a rule is %d bytes, over the limit of %d", len(rule), maxPathBytes)
			}
		}
	}
	if n := len(req.GetTranscript()); n > s.cfg.MaxTranscriptEntries {
		return nil, invalid("transcript has %d entries, over the limit of %d", n, s.cfg.MaxTranscriptEntries)
	}
	if _, err := s.checkEntries("transcript", req.GetTranscript()); err != nil {
		return nil, err
	}
	mode, ok := modeFromProto[req.GetMode()]
	if !ok {
		return nil, invalid("mode %d is not a known permission mode", int32(req.GetMode()))
	}
	out := &engine.Request{
		RequestID:             req.GetRequestId(),
		SessionID:             req.GetSessionId(),
		Tool:                  toolToEngine(req.GetTool()),
		WorkingDirectory:      req.GetWorkingDirectory(),
		AdditionalDirectories: req.GetAdditionalDirectories(),
		Mode:                  mode,
		Policy:                req.GetPolicy(),
		Unattended:            req.GetUnattended(),
		Rules: engine.RuleSet{
			Allow: req.GetRules().GetAllow(),
			Ask:   req.GetRules().GetAsk(),
			Deny:  req.GetRules().GetDeny(),
		},
	}
	if len(req.GetTranscript()) > 0 {
		out.Transcript = make([]engine.TranscriptEntry, len(req.GetTranscript()))
		for i, e := range req.GetTranscript() {
			out.Transcript[i] = transcriptToEngine(e)
		}
	}
	return out, nil
}

// checkEntries refuses transcript entries over the size limit, and
// returns the size of each; field names the list in the error.
func (s *Service) checkEntries(field string, entries []*pb.TranscriptEntry) ([]int, error) {
	sizes := make([]int, len(entries))
	for i, e := range entries {
		n := len(e.GetText()) + proto.Size(e.GetToolCall())
		if n > s.cfg.MaxTranscriptEntryBytes {
			return nil, invalid("%s[%d] is %d bytes, over the limit of %d per entry", field, i, n, s.cfg.MaxTranscriptEntryBytes)
		}
		sizes[i] = n
	}
	return sizes, nil
}

func toolToEngine(t *pb.ToolCall) engine.ToolCall {
	tc := engine.ToolCall{Name: t.GetName()}
	if in := t.GetInput(); in != nil {
		tc.Input = in.AsMap()
	} else {
		tc.Input = map[string]any{}
	}
	return tc
}

func transcriptToEngine(e *pb.TranscriptEntry) engine.TranscriptEntry {
	out := engine.TranscriptEntry{Role: roleFromProto(e.GetRole()), Text: e.GetText()}
	if e.GetToolCall() != nil {
		tc := toolToEngine(e.GetToolCall())
		out.ToolCall = &tc
	}
	return out
}

func roleFromProto(r pb.Role) engine.Role {
	switch r {
	case pb.Role_ROLE_USER:
		return engine.RoleUser
	case pb.Role_ROLE_ASSISTANT:
		return engine.RoleAssistant
	case pb.Role_ROLE_TOOL_RESULT:
		return engine.RoleToolResult
	case pb.Role_ROLE_SYSTEM:
		return engine.RoleSystem
	}
	return engine.RoleUnspecified
}

var modeFromProto = map[pb.PermissionMode]engine.Mode{
	pb.PermissionMode_PERMISSION_MODE_UNSPECIFIED:  engine.ModeAuto,
	pb.PermissionMode_PERMISSION_MODE_AUTO:         engine.ModeAuto,
	pb.PermissionMode_PERMISSION_MODE_DEFAULT:      engine.ModeDefault,
	pb.PermissionMode_PERMISSION_MODE_ACCEPT_EDITS: engine.ModeAcceptEdits,
	pb.PermissionMode_PERMISSION_MODE_PLAN:         engine.ModePlan,
	pb.PermissionMode_PERMISSION_MODE_BYPASS:       engine.ModeBypass,
}

var decisionToProto = map[engine.Decision]pb.Decision{
	engine.Allow: pb.Decision_DECISION_ALLOW,
	engine.Deny:  pb.Decision_DECISION_DENY,
	engine.Ask:   pb.Decision_DECISION_ASK,
}

var sourceToProto = map[engine.Source]pb.DecisionSource{
	engine.SourceSafeTool:              pb.DecisionSource_DECISION_SOURCE_SAFE_TOOL,
	engine.SourceAcceptEdits:           pb.DecisionSource_DECISION_SOURCE_ACCEPT_EDITS,
	engine.SourceRule:                  pb.DecisionSource_DECISION_SOURCE_RULE,
	engine.SourceCommandAnalysis:       pb.DecisionSource_DECISION_SOURCE_COMMAND_ANALYSIS,
	engine.SourceMode:                  pb.DecisionSource_DECISION_SOURCE_MODE,
	engine.SourceClassifier:            pb.DecisionSource_DECISION_SOURCE_CLASSIFIER,
	engine.SourceCache:                 pb.DecisionSource_DECISION_SOURCE_CACHE,
	engine.SourceClassifierUnavailable: pb.DecisionSource_DECISION_SOURCE_CLASSIFIER_UNAVAILABLE,
	engine.SourceNoClassifier:          pb.DecisionSource_DECISION_SOURCE_NO_CLASSIFIER,
	engine.SourceFileSystem:            pb.DecisionSource_DECISION_SOURCE_FILE_SYSTEM,
	engine.SourceUpstreamUnavailable:   pb.DecisionSource_DECISION_SOURCE_UPSTREAM_UNAVAILABLE,
	engine.SourceApproval:              pb.DecisionSource_DECISION_SOURCE_APPROVAL,
	engine.SourceApprovalTimeout:       pb.DecisionSource_DECISION_SOURCE_APPROVAL_TIMEOUT,
	engine.SourceApprovalUnavailable:   pb.DecisionSource_DECISION_SOURCE_APPROVAL_UNAVAILABLE,
}

// classifierToProto maps what a side-query did; nil when none ran.
func classifierToProto(c *engine.ClassifierDetails) *pb.ClassifierInfo {
	if c == nil {
		return nil
	}
	return &pb.ClassifierInfo{
		Backend: validUTF8(c.Backend), Model: validUTF8(c.Model), Stage: validUTF8(c.Stage), LatencyMicros: c.LatencyMicro,
		InputTokens: c.InputTokens, OutputTokens: c.OutputTokens, Cached: c.Cached,
		Category: validUTF8(c.Category), CategoryKind: validUTF8(c.CategoryKind), CachedInputTokens: c.CachedInputTokens,
	}
}

// toProto maps a decision back. An engine result without a decision would
// be a bug; it is refused rather than sent as UNSPECIFIED.
func toProto(requestID, decisionID string, r engine.Result, latencyMicros int64) (*pb.CheckResponse, error) {
	d, ok := decisionToProto[r.Decision]
	if !ok {
		return nil, fmt.Errorf("engine returned no decision")
	}
	return &pb.CheckResponse{
		Approval:      approvalToProto(r.Approval),
		Classifier:    classifierToProto(r.Classifier),
		RequestId:     requestID,
		Decision:      d,
		Reason:        validUTF8(r.Reason),
		Source:        sourceToProto[r.Source],
		MatchedRule:   validUTF8(r.MatchedRule),
		DecisionId:    decisionID,
		ToolKind:      validUTF8(string(r.Kind)),
		Policy:        validUTF8(r.Policy),
		LatencyMicros: latencyMicros,
	}, nil
}

// approvalToProto maps an approval's details; nil for none.
func approvalToProto(a *engine.ApprovalInfo) *pb.ApprovalInfo {
	if a == nil {
		return nil
	}
	out := &pb.ApprovalInfo{Id: validUTF8(a.ID), Approver: validUTF8(a.By), How: validUTF8(a.How), Rule: validUTF8(a.Rule)}
	if !a.At.IsZero() {
		out.AnsweredUnixMicros = a.At.UnixMicro()
	}
	return out
}

// validUTF8 makes s sendable: protobuf refuses to encode a string that is
// not UTF-8, and a reason can quote what the client did not send (a
// symlink's target read from disk, say), so a decided check would
// otherwise reach its client as an Internal error.
func validUTF8(s string) string {
	if utf8.ValidString(s) {
		return s
	}
	return strings.ToValidUTF8(s, "\uFFFD")
}
