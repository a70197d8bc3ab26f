package engine

import (
	"context"
	"fmt"
	"strings"

	"github.com/toolgate/toolgate/engine/rules"
)

// Trace is why a call was decided as it was: every stage in order with
// its verdict, the facts the stages decided from, and the rules that
// matched or nearly matched. Explain fills one; Check never does (a check
// without a trace pays one nil check per stage for the hook).
type Trace struct {
	// Stages are all the stages of the table, in order: the one that
	// decided, those before it (passed, with why) and those after it
	// (not reached).
	Stages []StageTrace `json:"stages"`
	// Facts are what the engine found about the call; nil when the local
	// part did not finish (then Unfinished says why).
	Facts *TraceFacts `json:"facts,omitempty"`
	// Rules are the rules that match the call and the near misses (see
	// rules.Explanation).
	Rules *rules.Explanation `json:"-"`
	// Unfinished says why the local part did not finish (the file
	// system's deadline, busy workers): no stage ran.
	Unfinished string `json:"unfinished,omitempty"`
}

// Stage verdicts.
const (
	StageDecided    = "decided"
	StagePassed     = "passed"
	StageNotReached = "not reached"
)

// StageTrace is one stage's verdict.
type StageTrace struct {
	// Name is the stage's name in the table of stages.
	Name string `json:"name"`
	// Verdict is decided, passed or not reached.
	Verdict string `json:"verdict"`
	// Decision is the stage's decision when it decided.
	Decision string `json:"decision,omitempty"`
	// Why is the decision's reason, or why the stage passed.
	Why string `json:"why,omitempty"`
}

// TraceFacts are the facts of a call, as the stages saw them.
type TraceFacts struct {
	Tool             string `json:"tool"`
	Kind             string `json:"kind"`
	WorkingDirectory string `json:"working_directory"`
	Mode             string `json:"mode"`
	Policy           string `json:"policy"`
	// Paths are the call's target paths as rules see them: absolute,
	// cleaned, links not resolved.
	Paths []string `json:"paths,omitempty"`
	URL   string   `json:"url,omitempty"`
	// Edits are an edit's targets, resolved the kernel's way, and why
	// they are not plainly inside the project ("" when they are).
	Edits *TraceWrites `json:"edits,omitempty"`
	// Shell is what the shell analysis found.
	Shell *TraceShell `json:"shell,omitempty"`
	// Reads says whether the call's reads are proven safe, and why not.
	Reads *TraceReads `json:"reads,omitempty"`
	// Writes are the files a shell command writes, resolved.
	Writes *TraceWrites `json:"writes,omitempty"`
	// Guarded says why the call would change one of toolgate's own files;
	// Wipe why it deletes a root, home or top-level directory. Both are
	// denied in every mode.
	Guarded string `json:"guarded,omitempty"`
	Wipe    string `json:"wipe,omitempty"`
	// FilesUnseen says why nothing was proven from the disk: the caller's
	// files are not the ones this engine sees.
	FilesUnseen string `json:"files_unseen,omitempty"`
	// Notes are what the classifier is told about why no local stage
	// allowed the call.
	Notes []string `json:"notes,omitempty"`
}

// TraceWrites are the files a call writes.
type TraceWrites struct {
	Targets []string `json:"targets,omitempty"`
	Note    string   `json:"note,omitempty"`
}

// TraceShell is the shell analysis of a command.
type TraceShell struct {
	Commands []string `json:"commands"`
	ReadOnly bool     `json:"read_only"`
	// WhyNot says why the command is not read-only.
	WhyNot     string   `json:"why_not,omitempty"`
	ParseError string   `json:"parse_error,omitempty"`
	Reads      []string `json:"reads,omitempty"`
	Writes     []string `json:"writes,omitempty"`
	RunsIn     string   `json:"runs_in,omitempty"`
}

// TraceReads says whether a call's reads are proven.
type TraceReads struct {
	// Checked is false when the engine did not judge them (a shell
	// command that is not read-only: its places are judged only for an
	// allow rule that matches it).
	Checked bool   `json:"checked"`
	Proven  bool   `json:"proven"`
	Why     string `json:"why,omitempty"`
}

// Explain decides req exactly as Check does, and says why: every stage's
// verdict, the facts and the rules (see Trace). Its Result is Check's.
func (e *Engine) Explain(ctx context.Context, req *Request) (Result, *Trace, error) {
	tr := &Trace{}
	res, _, err := e.check(ctx, req, false, tr)
	if err != nil {
		return Result{}, nil, err
	}
	return res, tr, nil
}

// stage records one local stage's outcome; only a traced check calls it.
func (t *Trace) stage(k *check, s *stage, res Result, decided bool) {
	st := StageTrace{Name: s.name, Verdict: StagePassed}
	if decided {
		st.Verdict, st.Decision, st.Why = StageDecided, res.Decision.String(), res.Reason
	} else if why := passWhy[s.name]; why != nil {
		st.Why = why(k)
	}
	t.Stages = append(t.Stages, st)
}

// finish completes the stage list once the decision is known: the
// classifier's verdict when it decided, and the stages not reached.
func (t *Trace) finish(res Result, classified bool) {
	if classified {
		t.Stages = append(t.Stages, StageTrace{Name: stages[len(stages)-1].name, Verdict: StageDecided, Decision: res.Decision.String(), Why: res.Reason})
	}
	for _, s := range stages[len(t.Stages):] {
		t.Stages = append(t.Stages, StageTrace{Name: s.name, Verdict: StageNotReached})
	}
}

// last records the unattended step, which follows the stages of an
// unattended check only.
func (t *Trace) last(req *Request, step StageTrace) {
	if req.Unattended {
		t.Stages = append(t.Stages, step)
	}
}

// facts records the check's facts and rules; only a traced check calls it.
func (t *Trace) facts(k *check) {
	c := k.c
	f := &TraceFacts{Tool: c.name, Kind: string(c.kind), WorkingDirectory: c.cwd, Mode: k.req.Mode.String(), Policy: k.p.name,
		Paths: c.rc.Paths, URL: c.rc.URL, Guarded: c.guarded, Wipe: c.wipe, FilesUnseen: c.unseen(), Notes: k.notes()}
	if c.edits.any {
		f.Edits = &TraceWrites{Targets: c.edits.resolved, Note: c.edits.note()}
	}
	if c.writes.any {
		f.Writes = &TraceWrites{Targets: c.writes.resolved, Note: c.writes.note()}
	}
	if c.kind == KindShell {
		sh := &TraceShell{Reads: c.rc.ShellReads, Writes: c.rc.ShellWrites, RunsIn: c.shellDir}
		for _, cmd := range c.rc.Commands {
			sh.Commands = append(sh.Commands, strings.TrimSpace(strings.Join(cmd.Env, " ")+" "+cmd.Text))
		}
		if a := c.shell; a != nil {
			sh.ReadOnly, sh.WhyNot = a.ReadOnly, a.Reason
			if a.ParseErr != nil {
				sh.ParseError = a.ParseErr.Error()
			}
		} else {
			sh.WhyNot = c.unproven
		}
		f.Shell = sh
	}
	switch {
	case c.kind == KindShell && c.shell != nil && !c.shell.ReadOnly && c.unproven == "":
		f.Reads = &TraceReads{Why: "not judged: only a read-only command's reads are judged before the stages (the allow rules' stage judges those of a command a rule matches)"}
	case c.kind == KindShell || c.kind == KindRead || c.kind == KindSearch:
		f.Reads = &TraceReads{Checked: true, Proven: c.unproven == "", Why: c.unproven}
	}
	t.Facts = f
	x := k.set.Explain(c.rc, k.env, k.autoRules())
	t.Rules = &x
}

// autoRules reports whether allow rules are matched as in auto mode
// (those that hand out code execution skipped).
func (k *check) autoRules() bool {
	return k.req.Mode == ModeAuto || k.req.Mode == ModeUnspecified
}

// passWhy says, by stage name, why a stage passed a call. It reads the
// same facts the stage did; it is called only for a traced check.
var passWhy = map[string]func(k *check) string{
	"deny rules": func(k *check) string {
		return "no deny rule matches; the call changes none of toolgate's own files and deletes no root, home or top-level directory"
	},
	"plan mode": func(k *check) string {
		if k.req.Mode != ModePlan {
			return fmt.Sprintf("the mode is %s, not plan", k.req.Mode)
		}
		return "the call is read-only, which plan mode lets through"
	},
	"ask rules": func(*check) string { return "no ask rule matches" },
	"bypass mode": func(k *check) string {
		return fmt.Sprintf("the mode is %s, not bypass", k.req.Mode)
	},
	"safe tools": func(k *check) string {
		c := k.c
		if !c.kind.IsSafe() && !k.p.safe[c.name] {
			return fmt.Sprintf("%s is not a read-only tool (its kind is %s) nor in the policy's safe_tools", c.name, c.kind)
		}
		return fmt.Sprintf("%s is a read-only tool, but its reads are not proven: %s", c.name, c.unproven)
	},
	"accept-edits": func(k *check) string {
		c := k.c
		switch {
		case !c.kind.IsEdit():
			return fmt.Sprintf("%s is not an edit tool", c.name)
		case c.edits.note() != "":
			return "the edit is not plainly inside the project: " + c.edits.note()
		case !k.modeAcceptsEdits():
			return fmt.Sprintf("%s mode does not accept edits", k.req.Mode)
		}
		return "accept-edits is off in this policy"
	},
	"shell analysis": func(k *check) string {
		c := k.c
		switch {
		case c.kind != KindShell:
			return fmt.Sprintf("%s is not a shell tool", c.name)
		case c.shell == nil:
			return c.unproven
		case !c.shell.ReadOnly:
			return "the command is not known to be read-only: " + c.shell.Reason
		}
		return "the command is read-only, but " + c.unproven
	},
	"allow rules": func(k *check) string {
		c := k.c
		switch {
		case c.edits.guarded():
			return "allow rules do not decide edits of protected or unclear paths: " + c.edits.note()
		case c.writes.note() != "":
			return "allow rules do not decide commands that write protected files or outside the project: " + c.writes.note()
		case k.vetoed != "":
			return k.vetoed
		}
		x := k.set.Explain(c.rc, k.env, k.autoRules())
		switch {
		case x.Unallowable != "":
			return "no allow rule allows it: " + x.Unallowable
		case len(x.Uncovered) > 0:
			return "no allow rule vouches for " + quoteList(x.Uncovered) + " (an allow rule, or several, must vouch for every command, path or URL of the call)"
		}
		return "no allow rule matches"
	},
	"default and accept-edits modes": func(k *check) string {
		return fmt.Sprintf("the mode is %s: what no earlier stage decided goes to the classifier", k.req.Mode)
	},
}

func quoteList(ss []string) string {
	q := make([]string, len(ss))
	for i, s := range ss {
		q[i] = fmt.Sprintf("%q", truncate(s, 200))
	}
	return strings.Join(q, ", ")
}
