package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/toolgate/toolgate/app"
	"github.com/toolgate/toolgate/engine"
	"github.com/toolgate/toolgate/internal/jsonkeys"
)

var engineModes = map[string]engine.Mode{
	"auto": engine.ModeAuto, "default": engine.ModeDefault, "accept_edits": engine.ModeAcceptEdits,
	"plan": engine.ModePlan, "bypass": engine.ModeBypass,
}

// explainCmd decides one tool call in this process, with the engine a
// server would build from the config file, and prints why: every stage's
// verdict, the facts, the rules that matched and nearly matched. It needs
// no server and calls no classifier. Exit codes are check's.
func explainCmd(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newCommand("explain", "toolgate explain --tool NAME [--input JSON] [--cwd DIR] [--mode MODE] [--unattended] [--config FILE] [--policy NAME] [--json]",
		"Decides one tool call in this process, as a server built from the config\nfile would (no server, no classifier), and says why: every stage in order\nwith its verdict, the facts found, the rules that matched and those that\nnearly matched with why they did not. Exits 0 allow, 1 deny, 2 ask, 3 error.")
	tool := fs.String("tool", "", "tool name, e.g. Bash, Edit, read_file (required)")
	cl := addCallFlags(fs.FlagSet, "extra allow rule, as a request brings (repeatable)", "policy name (default: the default policy)")
	input, cwd, mode, policy := &cl.input, &cl.cwd, &cl.mode, &cl.policy
	cfgPath := fs.String("config", "", "config file with the policies (default: the embedded default)")
	home := fs.String("home", "", `the agents' home directory, for "~" in rules (default: this user's, as serve)`)
	asJSON := fs.Bool("json", false, "print the explanation as JSON")
	if code, done := fs.parse(args, stdout, stderr, exitError); done {
		return code
	}
	fail := func(format string, a ...any) int {
		fmt.Fprintf(stderr, "toolgate explain: "+format+"\n", a...)
		return exitError
	}
	if fs.NArg() > 0 {
		return fail("unexpected arguments %q", fs.Args())
	}
	if *tool == "" {
		return fail("--tool is required")
	}
	unattended, err := cl.unattended()
	if err != nil {
		return fail("%v", err)
	}
	m, ok := engineModes[*mode]
	if !ok {
		return fail("--mode %q: want auto, default, accept_edits, plan or bypass", *mode)
	}
	in, err := decodeInput(*input)
	if err != nil {
		return fail("--input: %v", err)
	}
	wd := *cwd
	if wd == "" {
		if wd, err = os.Getwd(); err != nil {
			return fail("current directory: %v", err)
		}
	}
	if wd, err = filepath.Abs(wd); err != nil {
		return fail("--cwd: %v", err)
	}
	h := *home
	if h == "" {
		h, _ = os.UserHomeDir()
	}
	cfg, err := app.LoadConfig(*cfgPath)
	if err != nil {
		return fail("%v", err)
	}
	eng, _, err := cfg.NewEngine(h, nil)
	if err != nil {
		return fail("%v", err)
	}
	req := &engine.Request{
		Tool: engine.ToolCall{Name: *tool, Input: in}, WorkingDirectory: wd, AdditionalDirectories: cl.addDirs,
		Mode: m, Policy: *policy, Rules: engine.RuleSet{Allow: cl.allow, Ask: cl.ask, Deny: cl.deny}, Unattended: unattended,
	}
	res, tr, err := eng.Explain(ctx, req)
	if err != nil {
		return fail("%v", err)
	}
	ex := newExplanation(res, tr, cfg)
	if err := ex.write(stdout, *asJSON); err != nil {
		return fail("%v", err)
	}
	return exitFor(res.Decision)
}

// decodeInput decodes a tool input as the engine takes it: a JSON object
// whose numbers are float64. A key given twice is refused: which one an
// agent would use is unclear.
func decodeInput(s string) (map[string]any, error) {
	if err := jsonkeys.Unique([]byte(s)); err != nil {
		return nil, err
	}
	var in map[string]any
	dec := json.NewDecoder(strings.NewReader(s))
	if err := dec.Decode(&in); err != nil {
		return nil, fmt.Errorf("not a JSON object: %v", err)
	}
	if dec.More() {
		return nil, fmt.Errorf("data after the JSON object")
	}
	if in == nil {
		return nil, fmt.Errorf("not a JSON object")
	}
	return in, nil
}

func exitFor(d engine.Decision) int {
	switch d {
	case engine.Allow:
		return exitAllow
	case engine.Deny:
		return exitDeny
	case engine.Ask:
		return exitAsk
	}
	return exitError
}

// explanation is what explain prints; its JSON keys are stable.
type explanation struct {
	// Case is the corpus case explained (eval --explain).
	Case          *explainedCase      `json:"case,omitempty"`
	Decision      string              `json:"decision"`
	Source        string              `json:"source"`
	Reason        string              `json:"reason"`
	MatchedRule   string              `json:"matched_rule,omitempty"`
	Policy        string              `json:"policy"`
	PolicyVersion string              `json:"policy_version,omitempty"`
	Stages        []engine.StageTrace `json:"stages"`
	Facts         *engine.TraceFacts  `json:"facts,omitempty"`
	Rules         explainedRules      `json:"rules"`
	// Unfinished says why the local stages did not run.
	Unfinished string `json:"unfinished,omitempty"`
	// ClassifierNotCalled says that the config has a classifier (or an
	// upstream) that a server would ask where this says no classifier.
	ClassifierNotCalled string `json:"classifier_not_called,omitempty"`
}

type explainedCase struct {
	ID     string `json:"id"`
	Where  string `json:"where"`
	Expect string `json:"expect"`
	Note   string `json:"note,omitempty"`
	// Meets says whether the decision meets the case's label.
	Meets bool `json:"meets"`
}

type explainedRules struct {
	Matched    []explainedRule `json:"matched"`
	NearMisses []explainedRule `json:"near_misses"`
	// AllowUncovered are the parts of the call no allow rule vouches for;
	// AllowImpossible says why no allow rule can allow it.
	AllowUncovered  []string `json:"allow_uncovered,omitempty"`
	AllowImpossible string   `json:"allow_impossible,omitempty"`
}

type explainedRule struct {
	List    string `json:"list"`
	Index   int    `json:"index"`
	Rule    string `json:"rule"`
	Subject string `json:"subject,omitempty"`
	Why     string `json:"why,omitempty"`
}

func newExplanation(res engine.Result, tr *engine.Trace, cfg *app.Config) *explanation {
	ex := &explanation{
		Decision: res.Decision.String(), Source: res.Source.String(), Reason: res.Reason, MatchedRule: res.MatchedRule,
		Policy: res.Policy, PolicyVersion: res.PolicyVersion, Stages: tr.Stages, Facts: tr.Facts, Unfinished: tr.Unfinished,
		Rules: explainedRules{Matched: []explainedRule{}, NearMisses: []explainedRule{}},
	}
	if x := tr.Rules; x != nil {
		for _, r := range x.Rules {
			e := explainedRule{List: r.List, Index: r.Index, Rule: r.Rule, Subject: r.Subject, Why: r.Why}
			if r.Matched {
				ex.Rules.Matched = append(ex.Rules.Matched, e)
			} else {
				ex.Rules.NearMisses = append(ex.Rules.NearMisses, e)
			}
		}
		ex.Rules.AllowUncovered, ex.Rules.AllowImpossible = x.Uncovered, x.Unallowable
	}
	if res.Source == engine.SourceNoClassifier && cfg != nil {
		switch {
		case cfg.Upstream.Enabled():
			ex.ClassifierNotCalled = "this config has an upstream toolgate, which a server would ask here; explain asks no one"
		case cfg.Classifier.Enabled():
			ex.ClassifierNotCalled = "this config has classifier backends, which a server would ask here; explain calls no model"
		}
	}
	return ex
}

func (ex *explanation) write(w io.Writer, asJSON bool) error {
	if asJSON {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(ex)
	}
	p := func(format string, a ...any) { fmt.Fprintf(w, format, a...) }
	if c := ex.Case; c != nil {
		meets := "meets"
		if !c.Meets {
			meets = "does NOT meet"
		}
		p("case %s (%s): expect %s; the decision %s it\n", c.ID, c.Where, c.Expect, meets)
		if c.Note != "" {
			p("note: %s\n", c.Note)
		}
		p("\n")
	}
	p("decision: %s (%s)\n", strings.ToUpper(ex.Decision), ex.Source)
	p("reason:   %s\n", ex.Reason)
	if ex.MatchedRule != "" {
		p("rule:     %s\n", ex.MatchedRule)
	}
	p("policy:   %s\n", ex.Policy)
	if ex.ClassifierNotCalled != "" {
		p("note:     %s\n", ex.ClassifierNotCalled)
	}
	if ex.Unfinished != "" {
		p("note:     the local stages did not run: %s\n", ex.Unfinished)
	}
	p("\nstages:\n")
	for i, s := range ex.Stages {
		verdict := s.Verdict
		if s.Verdict == engine.StageDecided {
			verdict = strings.ToUpper(s.Decision)
		}
		fmt.Fprintln(w, strings.TrimRight(fmt.Sprintf("  %2d %-31s %-11s %s", i+1, s.Name, verdict, s.Why), " "))
	}
	if f := ex.Facts; f != nil {
		p("\nfacts:\n")
		p("  tool:      %s (%s), mode %s, policy %s\n", f.Tool, f.Kind, f.Mode, f.Policy)
		p("  cwd:       %s\n", orNone(f.WorkingDirectory))
		for _, x := range f.Paths {
			p("  path:      %s\n", x)
		}
		if f.URL != "" {
			p("  url:       %s\n", f.URL)
		}
		if e := f.Edits; e != nil {
			p("  edits:     %s\n", orNone(strings.Join(e.Targets, ", ")))
			if e.Note != "" {
				p("             %s\n", e.Note)
			}
		}
		if s := f.Shell; s != nil {
			ro := "read-only"
			if !s.ReadOnly {
				ro = "not read-only: " + orNone(s.WhyNot)
			}
			p("  shell:     %s\n", ro)
			for _, c := range s.Commands {
				p("    command: %s\n", c)
			}
			if s.ParseError != "" {
				p("    parse:   %s\n", s.ParseError)
			}
			if s.RunsIn != "" {
				p("    runs in: %s\n", s.RunsIn)
			}
			for _, x := range s.Reads {
				p("    reads:   %s\n", x)
			}
			for _, x := range s.Writes {
				p("    writes:  %s\n", x)
			}
		}
		if r := f.Reads; r != nil {
			switch {
			case !r.Checked:
				p("  reads:     %s\n", r.Why)
			case r.Proven:
				p("  reads:     proven (every target lies in the project or the read roots, resolved, and is not secret-shaped)\n")
			default:
				p("  reads:     not proven: %s\n", r.Why)
			}
		}
		if wr := f.Writes; wr != nil {
			p("  writes:    %s\n", orNone(strings.Join(wr.Targets, ", ")))
			if wr.Note != "" {
				p("             %s\n", wr.Note)
			}
		}
		if f.Guarded != "" {
			p("  guarded:   %s\n", f.Guarded)
		}
		if f.Wipe != "" {
			p("  wipe:      %s\n", f.Wipe)
		}
		if f.FilesUnseen != "" {
			p("  files:     not visible to this engine: %s\n", f.FilesUnseen)
		} else {
			p("  files:     this process's own (an in-process check)\n")
		}
		for _, n := range f.Notes {
			p("  note:      %s\n", n)
		}
	}
	p("\nrules that match:\n")
	if len(ex.Rules.Matched) == 0 {
		p("  none\n")
	}
	for _, r := range ex.Rules.Matched {
		p("  %-5s %s  (on %q)\n", r.List, r.Rule, r.Subject)
	}
	p("rules that nearly match:\n")
	if len(ex.Rules.NearMisses) == 0 {
		p("  none\n")
	}
	for _, r := range ex.Rules.NearMisses {
		p("  %-5s %s  (on %q)\n        %s\n", r.List, r.Rule, r.Subject, r.Why)
	}
	return nil
}

func orNone(s string) string {
	if s == "" {
		return "(none)"
	}
	return s
}
