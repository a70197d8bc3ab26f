package engine

import (
	"testing"

	"github.com/toolgate/toolgate/engine/shell"
)

func TestWipe(t *testing.T) {
	for _, tc := range []struct {
		cmd  string
		want bool
	}{
		{"rm -rf /", true},
		{"rm -rf /*", true},
		{"rm -rf //", true},
		{"rm -rf /etc", true},
		{"rm -rf /etc/", true},
		{"rm -rf /usr/*", true},
		{"rm -fr /lib64", true},
		{"rm -r -f /var", true},
		{"rm --recursive --force /opt", true},
		{"rm -rf ~", true},
		{"rm -rf ~/", true},
		{"rm -rf ~/*", true},
		{"rm -rf $HOME/", true},
		{`rm -rf "$HOME"`, true},
		{"rm -rf ${HOME}/.*", true},
		{"rm -rf /home/u", true},
		{"rm -rf /Users/u/", true},
		{"rm -rf /home/*", true},
		{"make clean && rm -rf /srv", true},
		{"rm -rf -- /etc", true},
		{"rm -rf /home/dev/project/build", false},
		{"rm -rf /tmp/cache", false},
		{"rm -rf build", false},
		{"rm -rf ~/.cache/go-build", false},
		{"rm /etc", false}, // not recursive: fails on a directory
		{"rm -f /etc/motd.bak", false},
		{"echo rm -rf /", false},
	} {
		a := shell.Analyze(tc.cmd)
		if got := wipe(a.Commands, "/home/dev") != ""; got != tc.want {
			t.Errorf("%q: wipe %v, want %v", tc.cmd, got, tc.want)
		}
	}
}

// TestWipeDeniedInBypass: such a command is denied by the deny stage in
// every mode, bypass included, whatever the policy's own rules.
func TestWipeDeniedInBypass(t *testing.T) {
	e, err := New(Config{Policies: map[string]PolicySpec{DefaultPolicy: {}}, Home: "/home/dev"})
	if err != nil {
		t.Fatal(err)
	}
	for _, mode := range []Mode{ModeBypass, ModeAuto, ModeAcceptEdits} {
		res := mustCheck(t, e, &Request{Tool: tool("Bash", map[string]any{"command": "rm -rf /*"}), WorkingDirectory: t.TempDir(), Mode: mode})
		if res.Decision != Deny || res.Source != SourceRule {
			t.Errorf("%s: %s by %s (%s), want a deny", mode, res.Decision, res.Source, res.Reason)
		}
	}
	res := mustCheck(t, e, &Request{Tool: tool("Bash", map[string]any{"command": "rm -rf /tmp/x"}), WorkingDirectory: t.TempDir(), Mode: ModeBypass})
	if res.Decision != Allow {
		t.Errorf("rm -rf /tmp/x in bypass: %s (%s)", res.Decision, res.Reason)
	}
}
