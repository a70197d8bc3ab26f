// Package geminicli is the end-to-end test of toolgate in front of the real
// Gemini CLI (npm @google/gemini-cli, pinned to 0.61.0), run offline.
//
// The test starts `toolgate serve` on loopback (no config, no classifier)
// and runs the CLI headless (-p, --approval-mode yolo, --output-format
// json) against a scripted fake of the Gemini API on 127.0.0.1, with
// `toolgate hook gemini-cli` as its BeforeTool hook. The fake answers turn
// by turn with one functionCall each: destructive shell outside the
// project, a download-and-run pipe, writes inside and outside the project,
// reads, searches, Gemini CLI's own tools and a tool of a local stdio MCP
// server. For every call it asserts what the hook decided, what happened on
// disk and what function response the model got back. The same table of
// calls is then run behind a hook that allows everything, where the unsafe
// outcomes must happen: proof that the first run can fail.
//
// Every hook call is recorded (input, output, exit code) by the test binary
// itself acting as a wrapper around the hook command. With
// TOOLGATE_RECORD=1 the hook inputs of the toolgate run are written,
// normalised ($CWD, $HOME, $OUTSIDE, $TMP, $SESSION_ID, $TIMESTAMP), to
// testdata/recorded/<case>.json.
//
// It runs under make e2e-agents, which installs the CLIs:
//
//	TOOLGATE_AGENTS_DIR=bin/agents go test -count=1 -v ./e2e/agents/geminicli/
//
// TOOLGATE_AGENTS_DIR holds gemini-cli/node_modules (the pinned version is
// installed there when missing); TOOLGATE_BIN names a toolgate binary
// (built from ./cmd/toolgate when unset). Without TOOLGATE_AGENTS_DIR the
// test is skipped. It needs node, git, curl and sh, and touches nothing but
// loopback and its temporary directories.
package geminicli
