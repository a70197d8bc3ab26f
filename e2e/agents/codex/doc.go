// Package codex is an end-to-end test of toolgate in front of the real
// OpenAI Codex CLI (npm @openai/codex, pinned to 0.171.0), run offline.
//
// The test starts `toolgate serve` on loopback (no config, no classifier:
// what no local stage decides is ASK, which the Codex adapter prints as a
// deny), a scripted fake of the OpenAI Responses API that answers each turn
// with the next tool call (exec_command and apply_patch, as Codex offers
// them), and runs `codex exec --json` in a temporary git project whose
// ~/.codex/hooks.json sends every PreToolUse to `toolgate hook codex`. The
// hook is trusted non-interactively: the test computes Codex's trust hash
// of the hook and writes it to config.toml under [hooks.state], and checks
// it against what `codex app-server` reports in hooks/list. The hook
// command is wrapped so that each input Codex sends is also appended to a
// file, which proves that the hook ran.
//
// Each scripted call (rm -rf and rm -r outside the project, a read in it,
// apply_patch inside and outside it, curl piped to sh, and git status, by
// an absolute and a relative workdir, in other repositories whose
// core.fsmonitor runs a script) is judged twice: on disk (did the file
// go, the marker appear) and by the tool output the fake model received
// back. The same table is run a second time with a hook that allows
// everything, to show that each unsafe outcome does happen when nothing
// blocks it; the exception is rm -rf, which Codex itself refuses past the
// hook ("rm -f style commands are not permitted").
//
// `codex exec` never asks for approval (its approval policy is "never",
// and it refuses a call that asks to leave the sandbox), so it never runs
// the PermissionRequest hook. TestCodexApproval drives Codex through
// `codex app-server`, as an IDE does, with approval policy "on-request"
// and calls that ask to run outside the sandbox, answering Codex's
// approval requests as the user (declining each): with toolgate as the
// PermissionRequest hook, what toolgate allows runs without the user
// being asked, what it denies is refused without asking, and what it
// would ask about is asked; with hooks that give no verdict, Codex asks
// for every call, which shows that each needed an approval.
//
// The test is skipped unless TOOLGATE_AGENTS_DIR is set (make e2e-agents
// sets it). Codex is used from $TOOLGATE_AGENTS_DIR/codex (an npm prefix),
// installed there at the pinned version if missing. TOOLGATE_BIN names a
// built toolgate; without it the test builds one. With TOOLGATE_RECORD=1
// the hook inputs Codex sent, and one rollout file, are written with their
// temporary paths and ids normalised under testdata/recorded (the
// PermissionRequest inputs as permission-*.json, with
// rollout-permission.jsonl).
//
//	TOOLGATE_AGENTS_DIR=$PWD/bin/agents go test -count=1 -v ./e2e/agents/codex/
package codex
