package rules

import (
	"strings"
	"testing"
)

var testEnv = Env{Cwd: "/home/dev/proj", Root: "/etc/toolgate", Home: "/home/dev"}

// mustCompile compiles the lists or fails the test.
func mustCompile(t testing.TB, deny, ask, allow []string) *Set {
	t.Helper()
	s, _, err := Compile(deny, ask, allow)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// cmd parses "A=1 B=2 npm test" into a Command with Env ["A=1", "B=2"].
func cmd(s string) Command {
	var c Command
	words := strings.Fields(s)
	for len(words) > 1 && isAssignment(words[0]) {
		c.Env, words = append(c.Env, words[0]), words[1:]
	}
	c.Text = strings.Join(words, " ")
	return c
}

// shellCall is a parsed shell call of the given simple commands.
func shellCall(cmds ...string) Call {
	c := Call{Tool: "Bash", Kind: "shell", Raw: strings.Join(cmds, " && ")}
	for _, s := range cmds {
		c.Commands = append(c.Commands, cmd(s))
	}
	return c
}

// verdicts matches the call against the rule alone as a deny, an ask and an
// allow rule (auto off), and checks deny and ask agree.
func verdicts(t *testing.T, rule string, c Call, e Env) (allow, deny bool) {
	t.Helper()
	d := mustCompile(t, []string{rule}, nil, nil).Deny(c, e)
	a := mustCompile(t, nil, []string{rule}, nil).Ask(c, e)
	if d.OK != a.OK {
		t.Fatalf("%s: Deny %v but Ask %v", rule, d.OK, a.OK)
	}
	if d.OK && d.Rule.Text != rule {
		t.Fatalf("Deny matched rule %q, want %q", d.Rule.Text, rule)
	}
	// A memoized call is matched as the call: the subjects the deny list
	// built serve the ask list.
	mc := c
	mc.Memoize()
	md := mustCompile(t, []string{rule}, nil, nil).Deny(mc, e)
	ma := mustCompile(t, nil, []string{rule}, nil).Ask(mc, e)
	if md.OK != d.OK || ma.OK != a.OK {
		t.Fatalf("%s: memoized Deny %v, Ask %v; the call itself %v, %v", rule, md.OK, ma.OK, d.OK, a.OK)
	}
	al := mustCompile(t, nil, nil, []string{rule}).Allow(c, e, false)
	if al.OK && al.Rule.Text != rule {
		t.Fatalf("Allow matched rule %q, want %q", al.Rule.Text, rule)
	}
	return al.OK, d.OK
}
