// Package claudecode is an end-to-end test of toolgate in front of the real
// Claude Code CLI (npm @anthropic-ai/claude-code, pinned to 2.1.332), run
// offline: the CLI talks to a scripted fake of the Anthropic Messages API on
// loopback, which answers turn by turn with one tool call each, and Claude
// Code's PreToolUse hook runs "toolgate hook claude-code" against a real
// "toolgate serve" with the embedded default policy and no classifier.
//
// The test checks, for every scripted call, what happened on disk and what
// tool_result the model got back: a destructive rm outside the project, a
// Write outside it and curl piped to sh are refused and leave no trace;
// reads and writes inside the project run; a background Bash runs and its
// output file can be read (Claude Code 2.1.330 and 2.1.332 have no BashOutput or
// TaskOutput tool: a call of either is refused by the CLI before any hook);
// ExitPlanMode and AskUserQuestion, which the CLI offers only to an SDK
// host that answers prompts (stream-json with --permission-prompt-tool
// stdio), get no allow from toolgate and still reach the user. Under that
// host in default mode, a read outside the project and the read roots,
// which toolgate asks about, becomes Claude Code's approval prompt, put
// to the host with toolgate's reason as its decision_reason. The same
// table is run with a hook that allows everything, where the unsafe calls
// do run: that proves the checks can fail. It is run a third time with
// Claude Code's HTTP hook posting to toolgate's hook listener (through a
// recording pass-through), no process per call, with the same outcomes;
// and an HTTP hook whose listener cannot be reached blocks the call with
// onFailure block, and lets it run without. In -p mode a call toolgate
// asks about is left unrun, as nobody can answer; marked unattended
// (--unattended, or TOOLGATE_UNATTENDED=1 in the CLI's environment) the
// hook denies it instead, with a reason the model reads saying nobody
// could answer.
//
// It is skipped unless TOOLGATE_AGENTS_DIR is set, as make e2e-agents does:
//
//	TOOLGATE_AGENTS_DIR=$PWD/bin/agents go test -count=1 -v ./e2e/agents/claudecode/
//
// The CLI is taken from $TOOLGATE_AGENTS_DIR/claude-code (an npm prefix),
// and npm-installed there at the pinned version when missing. TOOLGATE_BIN
// names a built toolgate (absolute, or relative to this directory); without
// it the test builds ./cmd/toolgate. The whole test runs in about ten
// seconds and is bounded by a deadline well under three minutes. With
// TOOLGATE_RECORD=1 the hook inputs the CLI sent are written, temporary
// paths and ids normalised, to testdata/recorded/<case>.json; without it
// they are compared with those files.
package claudecode
