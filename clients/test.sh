#!/usr/bin/env bash
# Runs the Python and Node client examples, as clients/README.md shows
# them, against a toolgate server with the embedded default policy;
# `make clients-test` calls it after building the binary and installing
# the clients' dependencies (clients/deps.sh).
#
#   clients/test.sh TOOLGATE_BINARY
#
# The server listens on a free loopback port (port 0; the bound address is
# read from its "serving" log line) and is always stopped on exit.
set -euo pipefail

toolgate="$(realpath "${1:?usage: clients/test.sh TOOLGATE_BINARY}")"
clients="$(cd "$(dirname "$0")" && pwd)"
root="$(dirname "$clients")"
startup_seconds=30

tmp="$(mktemp -d)"
server_pid=""
cleanup() {
	if [[ -n "$server_pid" ]]; then
		kill "$server_pid" 2>/dev/null || true
		wait "$server_pid" 2>/dev/null || true
	fi
	rm -rf "$tmp"
}
trap cleanup EXIT

# Metrics off: a listener on its fixed default port would clash with any
# other toolgate on this machine.
"$toolgate" serve --listen 127.0.0.1:0 --metrics-listen off >"$tmp/serve.log" 2>&1 &
server_pid=$!

addr=""
for ((i = 0; i < startup_seconds * 10; i++)); do
	addr="$(sed -n 's/.*"msg":"serving".*"addr":"\([^"]*\)".*/\1/p' "$tmp/serve.log" | head -n1)"
	[[ -n "$addr" ]] && break
	if ! kill -0 "$server_pid" 2>/dev/null; then
		break
	fi
	sleep 0.1
done
if [[ -z "$addr" ]]; then
	echo "clients-test: toolgate exited or did not log \"serving\" within ${startup_seconds}s; its log:" >&2
	cat "$tmp/serve.log" >&2
	exit 1
fi
echo "clients-test: toolgate serving on $addr"

# The examples run as clients/README.md shows them: each of its sh blocks,
# from the root of the clone, with this server's address in place of the
# documented one (so a README that drifts from what works fails here).
documented="127.0.0.1:50051"
blocks=()
block=""
in_block=0
while IFS= read -r line; do
	if ((in_block)); then
		if [[ "$line" == '```' ]]; then
			blocks+=("$block")
			in_block=0
		else
			block+="${line//$documented/$addr}"$'\n'
		fi
	elif [[ "$line" == '```sh' ]]; then
		block=""
		in_block=1
	fi
done <"$clients/README.md"
if ((${#blocks[@]} != 2)); then
	echo "clients-test: want the Python and the Node example's sh blocks in clients/README.md, found ${#blocks[@]}" >&2
	exit 1
fi

passed=0
failed=0
for b in "${blocks[@]}"; do
	echo "--- $b"
	if (cd "$root" && env -u TOOLGATE_ADDR bash -euo pipefail -c "$b"); then
		passed=$((passed + 1))
	else
		echo "--- FAILED" >&2
		failed=$((failed + 1))
	fi
done

if ((failed > 0)); then
	echo "clients-test: server log:" >&2
	cat "$tmp/serve.log" >&2
fi
echo "clients: $passed passed, $failed failed"
((failed == 0))
