package main

import (
	"context"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"
	"unicode"
	"unicode/utf8"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	pb "github.com/toolgate/toolgate/gen/toolgate/v1"
)

// Exit codes of toolgate approvals.
const (
	approvalsOK      = 0
	approvalsRefused = 1 // unknown id, settled already, not an approver
	approvalsUsage   = 2 // bad flags or arguments, or a request the server calls invalid
	approvalsFailed  = 3 // the server could not be reached, or failed
)

const approvalsSynopsis = `toolgate approvals list [--limit N] [--json] [flags]
       toolgate approvals show ID [--json] [flags]
       toolgate approvals allow ID [--as-rule [--rule-ttl 8h]] [--json] [flags]
       toolgate approvals deny ID [--json] [flags]
       toolgate approvals rules [--json] [flags]
       toolgate approvals delete-rule ID [flags]`

const approvalsAbout = `Answers the questions of unattended agents that a central toolgate queues,
through its ApprovalService. It connects as toolgate check does (--addr, TLS),
with --token-file naming a file that holds a token of role approver: the
token's name is recorded with every answer.
Exits 0 done, 1 refused (unknown id, settled already, not an approver),
2 usage or an invalid request, 3 the server could not be reached or failed.`

// approvalsSub is one approvals subcommand: its flags, and what it does
// with a connected client.
type approvalsSub struct {
	cmd     *command
	client  *clientFlags
	timeout *time.Duration
	json    *bool
	needID  bool
	// check, when set, says what is wrong with the flags ("" for nothing).
	check func() string
	run   func(ctx context.Context, c pb.ApprovalServiceClient, id string, out io.Writer) error
}

func newApprovalsSub(name, usage, about string, withJSON bool) *approvalsSub {
	c := newCommand("approvals "+name, usage, about)
	s := &approvalsSub{cmd: c, client: addClientFlags(c.FlagSet), json: new(bool)}
	s.timeout = c.Duration("timeout", 10*time.Second, "deadline for the call")
	if withJSON {
		c.BoolVar(s.json, "json", false, "print the server's answer as JSON (protojson), for scripts")
	}
	return s
}

// approvalsSubs builds every subcommand, in the order help lists them.
func approvalsSubs() []*approvalsSub {
	list := newApprovalsSub("list", "toolgate approvals list [--limit N] [--json] [flags]",
		"Lists the approvals still pending, oldest first: id, age, time left, tool, host,\nproject, and the start of the input and of the reason it was asked.", true)
	limit := list.cmd.Int("limit", 0, "at most this many (0 means the server's 100; at most 1000)")
	list.check = func() string {
		if *limit < 0 || *limit > 1000 {
			return fmt.Sprintf("--limit %d: want 0 to 1000", *limit)
		}
		return ""
	}
	list.run = func(ctx context.Context, cl pb.ApprovalServiceClient, _ string, out io.Writer) error {
		resp, err := cl.ListApprovals(ctx, &pb.ListApprovalsRequest{Limit: int32(*limit)})
		if err != nil || *list.json {
			return printJSON(out, resp, err)
		}
		printApprovals(out, resp.GetApprovals(), time.Now())
		return nil
	}

	show := newApprovalsSub("show", "toolgate approvals show ID [--json] [flags]",
		"Prints one approval, pending or settled, in full: the call's input, why it was\nasked, the user's last words, the rule allow --as-rule would teach, and the answer.", true)
	show.needID = true
	show.run = func(ctx context.Context, cl pb.ApprovalServiceClient, id string, out io.Writer) error {
		resp, err := cl.GetApproval(ctx, &pb.GetApprovalRequest{Id: id})
		if err != nil || *show.json {
			return printJSON(out, resp, err)
		}
		printApproval(out, resp.GetApproval(), time.Now())
		return nil
	}

	allow := newApprovalsSub("allow", "toolgate approvals allow ID [--as-rule [--rule-ttl 8h]] [--json] [flags]",
		"Allows a pending call, once; with --as-rule also teaches a rule that allows the\nsame call (the same tool and input, in the same project and policy) until it expires.", true)
	allow.needID = true
	asRule := allow.cmd.Bool("as-rule", false, "also allow the same call until the rule expires")
	ruleTTL := allow.cmd.Duration("rule-ttl", 0, "the learned rule's life, with --as-rule (0 means the server's default, 1h; at most 168h)")
	allow.check = func() string {
		switch {
		case *ruleTTL != 0 && !*asRule:
			return "--rule-ttl goes with --as-rule"
		case *ruleTTL < 0 || *ruleTTL%time.Second != 0:
			return fmt.Sprintf("--rule-ttl %s: want a positive whole number of seconds", *ruleTTL)
		}
		return ""
	}
	allow.run = func(ctx context.Context, cl pb.ApprovalServiceClient, id string, out io.Writer) error {
		req := &pb.AnswerApprovalRequest{Id: id, Answer: pb.ApprovalAnswer_APPROVAL_ANSWER_ALLOW_ONCE}
		if *asRule {
			req.Answer, req.RuleTtlSeconds = pb.ApprovalAnswer_APPROVAL_ANSWER_ALLOW_AS_RULE, int64(*ruleTTL/time.Second)
		}
		return answer(ctx, cl, req, *allow.json, out)
	}

	deny := newApprovalsSub("deny", "toolgate approvals deny ID [--json] [flags]", "Denies a pending call.", true)
	deny.needID = true
	deny.run = func(ctx context.Context, cl pb.ApprovalServiceClient, id string, out io.Writer) error {
		return answer(ctx, cl, &pb.AnswerApprovalRequest{Id: id, Answer: pb.ApprovalAnswer_APPROVAL_ANSWER_DENY}, *deny.json, out)
	}

	rules := newApprovalsSub("rules", "toolgate approvals rules [--json] [flags]",
		"Lists the rules learned from answers that are in force: id, time left, who taught\nit, project, policy and the call it allows.", true)
	rules.run = func(ctx context.Context, cl pb.ApprovalServiceClient, _ string, out io.Writer) error {
		resp, err := cl.ListLearnedRules(ctx, &pb.ListLearnedRulesRequest{})
		if err != nil || *rules.json {
			return printJSON(out, resp, err)
		}
		printRules(out, resp.GetRules(), time.Now())
		return nil
	}

	del := newApprovalsSub("delete-rule", "toolgate approvals delete-rule ID [flags]", "Withdraws a learned rule before it expires.", false)
	del.needID = true
	del.run = func(ctx context.Context, cl pb.ApprovalServiceClient, id string, out io.Writer) error {
		if _, err := cl.DeleteLearnedRule(ctx, &pb.DeleteLearnedRuleRequest{Id: id}); err != nil {
			return err
		}
		fmt.Fprintf(out, "deleted %s\n", safeText(id, false))
		return nil
	}
	return []*approvalsSub{list, show, allow, deny, rules, del}
}

// approvalsCmd runs toolgate approvals SUBCOMMAND.
func approvalsCmd(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	subs := approvalsSubs()
	if len(args) == 0 {
		fmt.Fprintf(stderr, "Usage: %s\nRun \"toolgate approvals -h\" for the flags.\n", approvalsSynopsis)
		return approvalsUsage
	}
	switch args[0] {
	case "-h", "-help", "--help", "help":
		fmt.Fprintf(stdout, "Usage: %s\n\n%s\n", approvalsSynopsis, approvalsAbout)
		for _, s := range subs {
			fmt.Fprintln(stdout)
			s.cmd.help(stdout)
		}
		return approvalsOK
	}
	var sub *approvalsSub
	for _, s := range subs {
		if s.cmd.Name() == "approvals "+args[0] {
			sub = s
		}
	}
	if sub == nil {
		fmt.Fprintf(stderr, "toolgate approvals: unknown subcommand %q\nUsage: %s\n", args[0], approvalsSynopsis)
		return approvalsUsage
	}
	c := sub.cmd
	usageErr := func(format string, a ...any) int {
		fmt.Fprintf(stderr, "toolgate %s: %s\nUsage: %s\n", c.Name(), fmt.Sprintf(format, a...), c.usage)
		return approvalsUsage
	}
	if code, done := c.parse(args[1:], stdout, stderr, approvalsUsage); done {
		return code
	}
	var id string
	if sub.needID {
		if c.NArg() == 0 {
			return usageErr("an ID is required")
		}
		// Flags may follow the id too (allow ID --as-rule).
		id = c.Arg(0)
		if code, done := c.parse(c.Args()[1:], stdout, stderr, approvalsUsage); done {
			return code
		}
		// The server's bound, here so that a mistyped argument is a
		// usage error without a round trip.
		if id == "" || len(id) > 128 {
			return usageErr("ID must be 1 to 128 bytes")
		}
	}
	if c.NArg() > 0 {
		return usageErr("unexpected arguments %q", c.Args())
	}
	if sub.check != nil {
		if msg := sub.check(); msg != "" {
			return usageErr("%s", msg)
		}
	}
	conn, err := dial(sub.client)
	if err != nil {
		fmt.Fprintf(stderr, "toolgate %s: %v\n", c.Name(), err)
		return approvalsFailed
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(ctx, *sub.timeout)
	defer cancel()
	if err := sub.run(ctx, pb.NewApprovalServiceClient(conn), id, stdout); err != nil {
		st := status.Convert(err)
		// The server's message: it never quotes a token.
		fmt.Fprintf(stderr, "toolgate %s: %s\n", c.Name(), safeText(st.Message(), false))
		switch st.Code() {
		case codes.NotFound, codes.FailedPrecondition, codes.PermissionDenied, codes.Unauthenticated:
			return approvalsRefused
		case codes.InvalidArgument:
			return approvalsUsage
		}
		return approvalsFailed
	}
	return approvalsOK
}

// answer sends an answer and says what it did.
func answer(ctx context.Context, cl pb.ApprovalServiceClient, req *pb.AnswerApprovalRequest, asJSON bool, out io.Writer) error {
	resp, err := cl.AnswerApproval(ctx, req)
	if err != nil || asJSON {
		return printJSON(out, resp, err)
	}
	a := resp.GetApproval()
	fmt.Fprintf(out, "%s: %s by %s (%s)\n", safeText(a.GetId(), false), safeText(a.GetStatus(), false), safeText(a.GetAnsweredBy(), false), safeText(a.GetHow(), false))
	if a.GetHow() == "rule" {
		fmt.Fprintf(out, "learned rule: %s in %s (toolgate approvals rules lists it)\n", safeText(a.GetRule(), false), safeText(a.GetProject(), false))
	}
	return nil
}

func printJSON(out io.Writer, m proto.Message, err error) error {
	if err != nil {
		return err
	}
	b, err := stableJSON(m, true)
	if err != nil {
		return err
	}
	fmt.Fprintln(out, string(b))
	return nil
}

// Widths of the table's cut columns, in characters.
const (
	colHost    = 20
	colProject = 28
	colInput   = 40
	colReason  = 40
)

func printApprovals(out io.Writer, as []*pb.Approval, now time.Time) {
	if len(as) == 0 {
		fmt.Fprintln(out, "no approvals pending")
		return
	}
	w := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	fmt.Fprintln(w, "ID\tAGE\tEXPIRES\tTOOL\tHOST\tPROJECT\tINPUT\tREASON")
	for _, a := range as {
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", safeText(a.GetId(), false),
			ago(now, a.GetCreatedUnixMicros()), until(now, a.GetDeadlineUnixMicros()),
			cutEnd(safeText(a.GetTool(), false), colHost), cutEnd(safeText(a.GetHost(), false), colHost),
			cutStart(safeText(a.GetProject(), false), colProject),
			cutEnd(safeText(a.GetInput(), false), colInput), cutEnd(safeText(a.GetReason(), false), colReason))
	}
	w.Flush()
}

func printApproval(out io.Writer, a *pb.Approval, now time.Time) {
	w := tabwriter.NewWriter(out, 0, 0, 1, ' ', 0)
	line := func(k, v string) {
		if v != "" {
			// A value's own lines stay under it, indented: never a
			// line of their own that could pass for a field.
			fmt.Fprintf(w, "%s:\t%s\n", k, strings.ReplaceAll(safeText(v, true), "\n", "\n\t  "))
		}
	}
	line("id", a.GetId())
	line("status", a.GetStatus())
	line("tool", a.GetTool())
	line("input", a.GetInput())
	line("host", a.GetHost())
	line("project", a.GetProject())
	line("session", a.GetSessionId())
	line("policy", a.GetPolicy())
	line("reason", a.GetReason())
	line("last words", a.GetLastWords())
	line("queued", stamp(a.GetCreatedUnixMicros())+" ("+ago(now, a.GetCreatedUnixMicros())+" ago)")
	if a.GetStatus() == "pending" {
		line("deadline", fmt.Sprintf("%s (in %s), then %s", stamp(a.GetDeadlineUnixMicros()), until(now, a.GetDeadlineUnixMicros()), a.GetOnTimeout()))
	}
	if a.GetRule() != "" {
		what := "allow --as-rule teaches"
		if a.GetHow() == "rule" {
			what = "taught"
		}
		line("rule", fmt.Sprintf("%s (%s)", a.GetRule(), what))
	}
	switch {
	case a.GetStatus() == "expired":
		line("settled", fmt.Sprintf("expired unanswered at %s", stamp(a.GetAnsweredUnixMicros())))
	case a.GetAnsweredBy() != "":
		line("settled", fmt.Sprintf("%s by %s (%s) at %s", a.GetStatus(), a.GetAnsweredBy(), a.GetHow(), stamp(a.GetAnsweredUnixMicros())))
	}
	w.Flush()
}

func printRules(out io.Writer, rs []*pb.LearnedRule, now time.Time) {
	if len(rs) == 0 {
		fmt.Fprintln(out, "no learned rules in force")
		return
	}
	w := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	fmt.Fprintln(w, "ID\tEXPIRES\tBY\tPROJECT\tPOLICY\tRULE")
	for _, r := range rs {
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%s\n", safeText(r.GetId(), false), until(now, r.GetExpiresUnixMicros()),
			cutEnd(safeText(r.GetCreatedBy(), false), colHost), cutStart(safeText(r.GetProject(), false), colProject),
			cutEnd(safeText(r.GetPolicy(), false), colHost), cutEnd(safeText(r.GetRule(), false), 2*colInput))
	}
	w.Flush()
}

func stamp(micros int64) string { return time.UnixMicro(micros).UTC().Format(time.RFC3339) }

func ago(now time.Time, micros int64) string { return span(now.Sub(time.UnixMicro(micros))) }

func until(now time.Time, micros int64) string {
	d := time.UnixMicro(micros).Sub(now)
	if d <= 0 {
		return "due"
	}
	return span(d)
}

// span is a duration as a person reads an age: 45s, 12m, 3h5m, 2d3h.
func span(d time.Duration) string {
	d = max(d, 0)
	switch {
	case d < time.Minute:
		return fmt.Sprintf("%ds", int(d/time.Second))
	case d < time.Hour:
		return fmt.Sprintf("%dm", int(d/time.Minute))
	case d < 24*time.Hour:
		return fmt.Sprintf("%dh%dm", int(d/time.Hour), int(d%time.Hour/time.Minute))
	}
	return fmt.Sprintf("%dd%dh", int(d/(24*time.Hour)), int(d%(24*time.Hour)/time.Hour))
}

// safeText is the agent's text made safe for the approver's terminal:
// control characters (escape sequences among them), format characters
// (bidirectional overrides, zero-width) and line separators are written
// as visible escapes, so what an approver reads is what the call holds;
// with multiline, newlines are kept. Tabs are always escaped: they would
// shift a table's columns.
func safeText(s string, multiline bool) string {
	var b strings.Builder
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && n == 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case r == '\n' && multiline:
			b.WriteByte('\n')
		case unicode.IsControl(r):
			fmt.Fprintf(&b, `\x%02x`, r)
		case unicode.Is(unicode.Cf, r), unicode.In(r, unicode.Zl, unicode.Zp):
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			b.WriteString(s[i : i+n])
		}
		i += n
	}
	return b.String()
}

// cutEnd keeps the first n characters of s, marking a cut with "…".
func cutEnd(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}

// cutStart keeps the last n characters of s (a path's end says most).
func cutStart(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return "…" + string(r[len(r)-n+1:])
}
