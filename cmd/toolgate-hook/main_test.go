package main

import (
	"bytes"
	"strings"
	"testing"
)

func TestVersion(t *testing.T) {
	var out, errOut bytes.Buffer
	code := run([]string{"--version"}, strings.NewReader(""), &out, &errOut)
	// Exit 2, nothing on stdout: an agent whose hook is set up as
	// `toolgate-hook --version` by mistake blocks the call.
	if code != 2 || out.Len() != 0 || !strings.HasPrefix(errOut.String(), "toolgate-hook ") || !strings.Contains(errOut.String(), "\nrevision: ") {
		t.Errorf("--version: exit %d, stdout %q, stderr %q", code, out.String(), errOut.String())
	}
	// Anything else is a hook run, which fails closed without an agent.
	out.Reset()
	if code := run([]string{"--version", "x"}, strings.NewReader(""), &out, &errOut); code != 2 {
		t.Errorf("--version x: exit %d, want 2", code)
	}
}
