#!/usr/bin/env bash
# Runs the Python and Node client examples against a toolgate server with
# the embedded default policy; `make clients-test` calls it after building
# the binary and installing the clients' dependencies (clients/deps.sh).
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

# Python stubs are generated on every run, by Debian's protoc and
# grpc_python_plugin, so they always match both the proto and the installed
# python3-protobuf runtime (gen/ is git-ignored).
rm -rf "$clients/python/gen"
mkdir -p "$clients/python/gen"
protoc -I "$root/proto" -I /usr/include \
	--python_out="$clients/python/gen" \
	--grpc_python_out="$clients/python/gen" \
	--plugin=protoc-gen-grpc_python="$(command -v grpc_python_plugin)" \
	toolgate/v1/permission.proto

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

# Each example checks a file of the directory it runs in.
passed=0
failed=0
run() {
	local name="$1" dir="$2"
	shift 2
	echo "--- $name"
	if (cd "$dir" && TOOLGATE_ADDR="$addr" "$@"); then
		passed=$((passed + 1))
	else
		echo "--- $name FAILED" >&2
		failed=$((failed + 1))
	fi
}
# /usr/bin/python3: Debian's grpcio and protobuf are installed for it only.
run python "$clients/python" /usr/bin/python3 check_tool.py
run node "$clients/node" node check_tool.js

if ((failed > 0)); then
	echo "clients-test: server log:" >&2
	cat "$tmp/serve.log" >&2
fi
echo "clients: $passed passed, $failed failed"
((failed == 0))
