package rules

import (
	"slices"
	"testing"
)

func TestMCPRules(t *testing.T) {
	tests := []struct {
		rule, tool string
		want       bool
	}{
		{"mcp__github", "mcp__github__create_issue", true},
		{"mcp__github", "mcp__github__list_prs", true},
		{"mcp__github", "mcp__github", true},
		{"mcp__github", "mcp__githubx__create_issue", false},
		{"mcp__github", "mcp__git__create_issue", false},
		{"mcp__github", "mcp__github__", false},
		{"mcp__github", "github__create_issue", false},
		{"mcp__github__*", "mcp__github__create_issue", true},
		{"mcp__github__*", "mcp__githubx__create_issue", false},
		{"mcp__github__create_issue", "mcp__github__create_issue", true},
		{"mcp__github__create_issue", "mcp__github__create_issue_comment", false},
		{"mcp__github__create_issue", "mcp__github__create", false},
		{"mcp__github__create_issue", "mcp__gitlab__create_issue", false},
		{"mcp__my-srv__*", "mcp__my-srv__a", true},
		{"Grep", "Grep", true},
		{"Grep", "grep", false},
		{"Grep", "mcp__x__Grep", false},
	}
	for _, tt := range tests {
		t.Run(tt.rule+" "+tt.tool, func(t *testing.T) {
			c := Call{Tool: tt.tool, Kind: "unknown"}
			allow, deny := verdicts(t, tt.rule, c, testEnv)
			if allow != tt.want || deny != tt.want {
				t.Errorf("%s on %s: allow %v deny %v; want %v", tt.rule, tt.tool, allow, deny, tt.want)
			}
		})
	}
}

func TestToolCoverage(t *testing.T) {
	kinds := []string{"shell", "read", "search", "edit", "write", "notebook_edit", "patch", "web_fetch", "web_search", "metadata", "unknown"}
	tests := []struct {
		rule   string
		covers []string // kinds covered when the agent's tool name differs
	}{
		{"Bash", []string{"shell"}},
		{"Read", []string{"read", "search"}},
		{"Edit", []string{"edit", "write", "notebook_edit", "patch"}},
		{"Write", []string{"write"}},
		{"NotebookEdit", []string{"notebook_edit"}},
		{"WebFetch", []string{"web_fetch"}},
		{"WebSearch", []string{"web_search"}},
		{"Grep", nil},
		{"mcp__x", nil},
	}
	for _, tt := range tests {
		for _, k := range kinds {
			c := Call{Tool: "some_agent_tool", Kind: k}
			allow, deny := verdicts(t, tt.rule, c, testEnv)
			want := slices.Contains(tt.covers, k)
			if allow != want || deny != want {
				t.Errorf("%s on kind %s: allow %v deny %v; want %v", tt.rule, k, allow, deny, want)
			}
		}
		// The exact tool name is covered when the call has no kind those
		// names cover; otherwise the kind decides.
		if allow, deny := verdicts(t, tt.rule, Call{Tool: tt.rule, Kind: "unknown"}, testEnv); !allow || !deny {
			t.Errorf("%s on its own name: allow %v deny %v", tt.rule, allow, deny)
		}
	}
}

func TestKindDecidesForKindNames(t *testing.T) {
	odd := Call{Tool: "Read", Kind: "shell", Commands: []Command{{Text: "rm -rf /"}}, Paths: []string{"/x"}}
	for _, rule := range []string{"Read", "Read(*)", "Read(//**)"} {
		if allow, deny := verdicts(t, rule, odd, testEnv); allow || deny {
			t.Errorf("%s on a shell call named Read: allow %v deny %v; want neither", rule, allow, deny)
		}
	}
	if allow, deny := verdicts(t, "Bash(rm:*)", odd, testEnv); allow != true || deny != true {
		t.Errorf("Bash(rm:*) on a shell call named Read: allow %v deny %v; want both", allow, deny)
	}
	// A literal name always covers its own tool.
	if allow, deny := verdicts(t, "Glob", Call{Tool: "Glob", Kind: "search"}, testEnv); !allow || !deny {
		t.Errorf("Glob on Glob: allow %v deny %v; want both", allow, deny)
	}
}

func TestPathRulesOnKinds(t *testing.T) {
	const p = "/home/dev/proj/src/a.go"
	tests := []struct {
		rule, kind  string
		allow, deny bool
	}{
		{"Read(./src/**)", "read", true, true},
		{"Read(./src/**)", "search", true, true},
		{"Read(./src/**)", "edit", false, false},
		{"Edit(./src/**)", "edit", true, true},
		{"Edit(./src/**)", "write", true, true},
		{"Edit(./src/**)", "notebook_edit", true, true},
		{"Edit(./src/**)", "patch", true, true},
		{"Edit(./src/**)", "read", false, false},
		{"Write(./src/**)", "write", true, true},
		{"Write(./src/**)", "edit", false, false},
		{"NotebookEdit(./src/**)", "notebook_edit", true, true},
		{"NotebookEdit(./src/**)", "write", false, false},
		// A literal tool name reads the specifier the way the kind needs.
		{"Glob(./src/**)", "search", true, true},
		{"Glob(./lib/**)", "search", false, false},
	}
	for _, tt := range tests {
		tool := "t"
		if tt.rule[0] == 'G' {
			tool = "Glob"
		}
		allow, deny := verdicts(t, tt.rule, Call{Tool: tool, Kind: tt.kind, Paths: []string{p}}, testEnv)
		if allow != tt.allow || deny != tt.deny {
			t.Errorf("%s on kind %s: allow %v deny %v; want allow %v deny %v", tt.rule, tt.kind, allow, deny, tt.allow, tt.deny)
		}
	}
}

func TestZeroSubjects(t *testing.T) {
	tests := []struct {
		rule        string
		call        Call
		allow, deny bool
	}{
		{"Read", Call{Tool: "Grep", Kind: "search"}, true, true},
		{"Read(*)", Call{Tool: "Grep", Kind: "search"}, true, true},
		{"Read(./**)", Call{Tool: "Grep", Kind: "search"}, false, false},
		{"Grep", Call{Tool: "Grep", Kind: "search"}, true, true},
		{"WebFetch(domain:x.com)", Call{Tool: "WebFetch", Kind: "web_fetch"}, false, false},
		// A literal tool with a specifier the call offers nothing for:
		// deny and ask match, to be safe; allow cannot vouch.
		{"Task(Explore)", Call{Tool: "Task", Kind: "metadata"}, false, true},
		{"Task(Explore)", Call{Tool: "Task2", Kind: "metadata"}, false, false},
	}
	for _, tt := range tests {
		allow, deny := verdicts(t, tt.rule, tt.call, testEnv)
		if allow != tt.allow || deny != tt.deny {
			t.Errorf("%s on %+v: allow %v deny %v; want allow %v deny %v", tt.rule, tt.call, allow, deny, tt.allow, tt.deny)
		}
	}
}

func TestShellReadsAndWrites(t *testing.T) {
	c := shellCall("cat ~/.ssh/id_rsa")
	c.ShellReads = []string{"/home/dev/.ssh/id_rsa"}
	w := shellCall("echo x > ~/.bashrc")
	w.ShellWrites = []string{"/home/dev/.bashrc"}
	tests := []struct {
		rule        string
		call        Call
		allow, deny bool
	}{
		{"Read(~/.ssh/**)", c, false, true}, // allow rules never look at shell reads
		{"Read(./**)", c, false, false},
		{"Read", c, false, true},
		{"Edit(~/.ssh/**)", c, false, false}, // a read is not a write
		{"Edit(~/.bashrc)", w, false, true},
		{"Write(~/.bashrc)", w, false, true},
		{"NotebookEdit(~/.bashrc)", w, false, true},
		{"Edit", w, false, true},
		{"Read(~/.bashrc)", w, false, false}, // a write is not a read
		{"Read", shellCall("ls"), false, false},
	}
	for _, tt := range tests {
		allow, deny := verdicts(t, tt.rule, tt.call, testEnv)
		if allow != tt.allow || deny != tt.deny {
			t.Errorf("%s on %q: allow %v deny %v; want allow %v deny %v", tt.rule, tt.call.Raw, allow, deny, tt.allow, tt.deny)
		}
	}
}

func TestMergeNeverRemoves(t *testing.T) {
	policy := mustCompile(t, []string{"Bash(rm:*)"}, []string{"Bash(git push:*)"}, []string{"Bash(npm test)", "Bash(python:*)"})
	req := mustCompile(t, []string{"Read(~/.ssh/**)"}, nil, []string{"Bash(rm:*)", "Bash(git push:*)"})
	m := policy.Merge(req)

	if len(m.deny) != 2 || len(m.ask) != 1 || len(m.allow) != 4 {
		t.Fatalf("merged lists %d/%d/%d; want 2/1/4", len(m.deny), len(m.ask), len(m.allow))
	}
	if len(policy.deny) != 1 || len(policy.allow) != 2 || len(req.deny) != 1 || len(req.allow) != 2 {
		t.Fatal("Merge modified its inputs")
	}
	// The policy's deny and ask still win over the request's allows.
	if !m.Deny(shellCall("rm -rf x"), testEnv).OK {
		t.Error("policy deny lost")
	}
	if !m.Ask(shellCall("git push"), testEnv).OK {
		t.Error("policy ask lost")
	}
	if !m.Deny(readCall("/home/dev/.ssh/id_rsa"), testEnv).OK {
		t.Error("request deny lost")
	}
	if !m.Allow(shellCall("npm test"), testEnv, false).OK {
		t.Error("policy allow lost")
	}
	if got := len(m.Warnings()); got != len(policy.Warnings())+len(req.Warnings()) || got == 0 {
		t.Errorf("merged warnings %d; want %d+%d", got, len(policy.Warnings()), len(req.Warnings()))
	}
	// Appending to a merged set's lists must not reach its inputs.
	m2 := m.Merge(mustCompile(t, []string{"Bash"}, nil, nil))
	if len(m.deny) != 2 || len(m2.deny) != 3 {
		t.Fatal("a second Merge changed the first")
	}
	var nilSet *Set
	if n := nilSet.Merge(policy); len(n.deny) != 1 || len(n.allow) != 2 {
		t.Error("nil.Merge(policy) lost rules")
	}
	if n := policy.Merge(nil); len(n.deny) != 1 || len(n.allow) != 2 || len(n.Warnings()) != len(policy.Warnings()) {
		t.Error("policy.Merge(nil) lost rules")
	}
}
