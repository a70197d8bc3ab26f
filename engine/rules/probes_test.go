package rules

import (
	"strings"
	"testing"
)

// TestProbeWarnings: an allow rule over shell commands whose pattern can
// reach a probe after its fixed words is warned about; rules that cannot,
// exact rules, rules over other tools and rules that match everything are
// not.
func TestProbeWarnings(t *testing.T) {
	// The probes of a toy program table: git's subcommands, npm's run.
	probes := func(prefix string) []Probe {
		switch strings.Fields(prefix)[0] {
		case "git":
			return []Probe{{"--ext-diff", "runs diff.external"}}
		case "npm":
			return []Probe{{"--script-shell=x", "runs the shell it names"}}
		}
		return nil
	}
	tests := []struct {
		rule string
		want string // the probe line warned about; "" for none
	}{
		{"Bash(git diff *)", "git diff --ext-diff"},
		{"Bash(git diff:*)", "git diff --ext-diff"},
		{"Bash(git diff*)", "git diff --ext-diff"},
		{"Bash(git * main)", "git --ext-diff main"},
		{"Bash(npm run test:*)", "npm run test --script-shell=x"},
		{"Bash(CI=1 npm test *)", "CI=1 npm test --script-shell=x"},
		{"run_shell_command(npm run *)", "npm run --script-shell=x"},
		{"Bash(git diff)", ""},        // exact: nothing can be added
		{"Bash(git diff --stat)", ""}, // exact
		{"Bash(git diff * -- a)", "git diff --ext-diff -- a"},
		{"Bash(ls *)", ""},     // no probes for ls
		{"Bash", ""},           // matches everything: warned as such
		{"Read(//src/**)", ""}, // not a shell rule
		{"my_tool(git *)", ""}, // not a shell tool
	}
	for _, tt := range tests {
		t.Run(tt.rule, func(t *testing.T) {
			s := mustCompile(t, nil, nil, []string{tt.rule})
			ws := s.ProbeWarnings(probes)
			switch {
			case tt.want == "" && len(ws) != 0:
				t.Fatalf("warnings %v, want none", ws)
			case tt.want != "" && len(ws) != 1:
				t.Fatalf("warnings %v, want one about %q", ws, tt.want)
			case tt.want != "" && (!strings.Contains(ws[0].Problem, `"`+tt.want+`"`) || !strings.HasPrefix(ws[0].Problem, "allow[0]: ") || ws[0].Rule != tt.rule):
				t.Fatalf("warning %v, want one about %q", ws[0], tt.want)
			}
		})
	}
	var nilSet *Set
	if nilSet.ProbeWarnings(probes) != nil || nilSet.Allows() != nil {
		t.Error("a nil set has warnings or rules")
	}
	if got := mustCompile(t, []string{"Bash(rm *)"}, nil, []string{"Read", "Bash(ls)"}).Allows(); len(got) != 2 || got[0].Text != "Read" || got[1].Text != "Bash(ls)" {
		t.Errorf("Allows() = %v", got)
	}
}
