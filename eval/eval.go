// Package eval measures the engine on a labeled corpus of tool calls: which
// harmful calls it would allow (false allows, which must be zero) and how
// many harmless ones it resolves locally, without the classifier; or, with
// an engine that has one, the whole pipeline: what the model blocks and
// allows, at what latency and cost (pipeline.go).
package eval

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"strings"

	"github.com/toolgate/toolgate/engine"
	"github.com/toolgate/toolgate/engine/rules"

	"github.com/toolgate/toolgate/internal/jsonkeys"
)

// Expectations a case can carry.
const (
	ExpectAllow    = "allow"     // must be allowed
	ExpectNotAllow = "not_allow" // must not be allowed (deny or ask)
	ExpectDeny     = "deny"      // must be denied
	ExpectAsk      = "ask"       // must be asked
	// For calls the classifier decides: the user's rules say it should
	// not run unattended (deny or ask both meet it).
	ExpectBlock = "block"
	ExpectAny   = "any" // unlabeled: decided and counted, never judged
)

var expectations = []string{ExpectAllow, ExpectNotAllow, ExpectDeny, ExpectAsk, ExpectBlock, ExpectAny}

// Case is one labeled tool call.
type Case struct {
	ID                    string         `json:"id"`
	Tool                  string         `json:"tool"`
	Input                 map[string]any `json:"input"`
	Cwd                   string         `json:"cwd"`
	AdditionalDirectories []string       `json:"additional_directories,omitempty"`
	Mode                  string         `json:"mode,omitempty"`
	Policy                string         `json:"policy,omitempty"`
	// Rules are the request's own rules, added to the policy's: a case
	// about what a user's rule may allow brings the rule.
	Rules  *CaseRules `json:"rules,omitempty"`
	Expect string     `json:"expect"`
	// Local marks an allow that must come from a local stage.
	Local bool `json:"local,omitempty"`
	// Category is, for a case of the classifier's corpus, the category of
	// the default policy that decides it (a deny category for a block, an
	// allow category for an allow): eval reports its confusion by it.
	Category string `json:"category,omitempty"`
	Note     string `json:"note,omitempty"`
	// Transcript is what was said before the call, oldest first: the same
	// command can be right when the user asked for it and wrong when not.
	Transcript []Turn `json:"transcript,omitempty"`
	// Fixture names a script in the corpus's fixtures/ directory that
	// builds the project on disk (see fixture.go).
	Fixture string `json:"fixture,omitempty"`
	// Where is the file and line the case came from.
	Where string `json:"-"`
	// fixtureScript is the fixture's script, found when the case is read.
	fixtureScript string
}

// CaseRules are a case's own permission rules, in the rule syntax.
type CaseRules struct {
	Allow []string `json:"allow,omitempty"`
	Ask   []string `json:"ask,omitempty"`
	Deny  []string `json:"deny,omitempty"`
}

var modes = map[string]engine.Mode{
	"": engine.ModeAuto, "auto": engine.ModeAuto, "default": engine.ModeDefault,
	"accept_edits": engine.ModeAcceptEdits, "plan": engine.ModePlan, "bypass": engine.ModeBypass,
}

// Load reads JSON-lines corpus files. Every problem names the file and line.
func Load(paths ...string) ([]Case, error) {
	var cases []Case
	ids := map[string]string{}
	for _, p := range paths {
		f, err := os.Open(p)
		if err != nil {
			return nil, err
		}
		cs, err := read(p, f, ids)
		f.Close()
		if err != nil {
			return nil, err
		}
		cases = append(cases, cs...)
	}
	return cases, nil
}

func read(name string, r io.Reader, ids map[string]string) ([]Case, error) {
	var cases []Case
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), 4<<20)
	n := 0
	for sc.Scan() {
		n++
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "//") {
			continue
		}
		where := fmt.Sprintf("%s:%d", name, n)
		// A label given twice, or in two cases, must not decide quietly.
		if err := jsonkeys.Unique([]byte(line)); err != nil {
			return nil, fmt.Errorf("%s: %w", where, err)
		}
		var c Case
		dec := json.NewDecoder(strings.NewReader(line))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&c); err != nil {
			return nil, fmt.Errorf("%s: %w", where, err)
		}
		if _, err := dec.Token(); err != io.EOF {
			return nil, fmt.Errorf("%s: data after the case's JSON object", where)
		}
		c.Where = where
		switch {
		case c.ID == "":
			return nil, fmt.Errorf("%s: id is required", where)
		case ids[c.ID] != "":
			return nil, fmt.Errorf("%s: id %q already used at %s", where, c.ID, ids[c.ID])
		case c.Tool == "":
			return nil, fmt.Errorf("%s: tool is required", where)
		case !slices.Contains(expectations, c.Expect):
			return nil, fmt.Errorf("%s: expect must be allow, not_allow, deny, ask, block or any, got %q", where, c.Expect)
		case c.Local && c.Expect != ExpectAllow:
			return nil, fmt.Errorf("%s: local is only for allow cases", where)
		}
		if _, ok := modes[c.Mode]; !ok {
			return nil, fmt.Errorf("%s: unknown mode %q", where, c.Mode)
		}
		if c.Rules != nil {
			if _, _, err := rules.Compile(c.Rules.Deny, c.Rules.Ask, c.Rules.Allow); err != nil {
				return nil, fmt.Errorf("%s: rules.%w", where, err)
			}
		}
		for i, t := range c.Transcript {
			if _, ok := roles[t.Role]; !ok || t.Text == "" {
				return nil, fmt.Errorf("%s: transcript[%d]: want a role of user or assistant and a text", where, i)
			}
		}
		if c.Fixture != "" {
			script, err := fixtureScript(name, c.Fixture)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", where, err)
			}
			c.fixtureScript = script
		}
		ids[c.ID] = where
		cases = append(cases, c)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s:%d: %w (a case is one line of at most 4 MiB)", name, n+1, err)
	}
	return cases, nil
}

// Outcome is one case's result.
type Outcome struct {
	Case     Case          `json:"case"`
	Result   engine.Result `json:"-"`
	Decision string        `json:"decision"`
	Source   string        `json:"source"`
	Reason   string        `json:"reason"`
	// Local is true when a local stage decided (not the classifier, and
	// not "no classifier").
	Local bool `json:"local"`
	// Stage is where the decision came from: local, classifier, cache,
	// unavailable (the classifier failed; the call failed closed), none
	// (no classifier configured) or skipped (the classifier was needed
	// but the request budget was spent: not decided, not counted).
	Stage string `json:"stage"`
	// FalseAllow: allowed although the label forbids it.
	FalseAllow bool `json:"false_allow"`
	// FalseBlock: labeled allow, and not allowed.
	FalseBlock bool `json:"false_block"`
	// Wrong: the decision does not meet the label (false allows included).
	Wrong bool `json:"wrong"`
	// NotLocal: a harmless case the label wants decided locally was not.
	NotLocal bool `json:"not_local"`
	// Classifier is the side-query's account, when one was made.
	Classifier *engine.ClassifierDetails `json:"classifier,omitempty"`
}

// Report sums up a run.
type Report struct {
	Outcomes []Outcome `json:"outcomes"`
	// Confusion counts decisions by expectation: Confusion["not_allow"]["allow"]
	// are false allows.
	Confusion map[string]map[string]int `json:"confusion"`
	// BySource counts decisions by the stage that made them.
	BySource    map[string]int `json:"by_source"`
	FalseAllows int            `json:"false_allows"`
	FalseBlocks int            `json:"false_blocks"`
	Wrong       int            `json:"wrong"`
	// LocalRate is the share of allow-labeled cases resolved by a local
	// stage; LocalTarget counts the allow cases marked local.
	LocalResolved int     `json:"local_resolved"`
	LocalTarget   int     `json:"local_target"`
	LocalRate     float64 `json:"local_rate"`
	// Stages splits the judged outcomes by Outcome.Stage; Classifier sums
	// up the side-queries (nil when no case reached a classifier).
	Stages     map[string]*StageStats `json:"stages"`
	Classifier *ClassifierStats       `json:"classifier,omitempty"`
	// ByCategory splits the classifier's decisions by the cases' category
	// labels (nil when no case reached a classifier).
	ByCategory map[string]*CategoryStats `json:"by_category,omitempty"`
	Skipped    int                       `json:"skipped"`
}

func isLocal(s engine.Source) bool {
	switch s {
	case engine.SourceClassifier, engine.SourceCache, engine.SourceClassifierUnavailable, engine.SourceNoClassifier,
		engine.SourceUpstreamUnavailable, // a local server's classifier is its upstream
		engine.SourceFileSystem,          // asked because the local stages did not finish
		// an approver's answer, or its absence, on an unattended check
		engine.SourceApproval, engine.SourceApprovalTimeout, engine.SourceApprovalUnavailable:
		return false
	}
	return true
}

// Run decides every case with eng, one at a time, without a budget.
func Run(ctx context.Context, eng *engine.Engine, cases []Case) (*Report, error) {
	return RunWith(ctx, eng, cases, Options{})
}

// WriteText prints the confusion table, the per-stage counts, the local
// resolution rate and every false allow, then every other miss.
func (r *Report) WriteText(w io.Writer) {
	decisions := []string{"allow", "deny", "ask"}
	fmt.Fprintf(w, "%d cases\n\n%-10s", len(r.Outcomes), "expected")
	for _, d := range decisions {
		fmt.Fprintf(w, " %7s", d)
	}
	fmt.Fprintln(w)
	for _, e := range expectations {
		row := r.Confusion[e]
		if row == nil {
			continue
		}
		fmt.Fprintf(w, "%-10s", e)
		for _, d := range decisions {
			fmt.Fprintf(w, " %7d", row[d])
		}
		fmt.Fprintln(w)
	}
	fmt.Fprintln(w, "\nby stage:")
	for _, s := range slices.Sorted(maps.Keys(r.BySource)) {
		fmt.Fprintf(w, "  %-24s %d\n", s, r.BySource[s])
	}
	fmt.Fprintf(w, "\nresolved locally: %d of %d harmless cases marked local (%.1f%%)\n", r.LocalResolved, r.LocalTarget, 100*r.LocalRate)
	fmt.Fprintf(w, "false allows: %d\n", r.FalseAllows)
	for _, o := range r.Outcomes {
		if o.FalseAllow {
			fmt.Fprintf(w, "  FALSE ALLOW %s %s %s: %s/%s %q (%s)\n", o.Case.ID, o.Case.Where, o.Case.Tool, o.Decision, o.Source, o.Reason, o.Case.Note)
		}
	}
	misses := 0
	for _, o := range r.Outcomes {
		// False blocks of the classifier are listed with its section.
		if (o.Wrong || o.NotLocal) && !o.FalseAllow && !(o.FalseBlock && byClassifier(o)) && o.Stage != "skipped" {
			if misses == 0 {
				fmt.Fprintln(w, "other misses:")
			}
			misses++
			fmt.Fprintf(w, "  %s %s %s: want %s (local %v), got %s/%s (%s)\n", o.Case.ID, o.Case.Where, o.Case.Tool, o.Case.Expect, o.Case.Local, o.Decision, o.Source, o.Case.Note)
		}
	}
	r.writePipeline(w)
}
