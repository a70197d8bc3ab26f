#!/usr/bin/env bash
# Generates the Python stubs of toolgate's API into clients/python/gen/
# (git-ignored), from anywhere: Debian's protoc and grpc_python_plugin, so
# that they match both the proto and the installed python3-protobuf
# runtime. protoc writes only into a directory that exists, so gen/ is
# made first; stubs of an older proto are removed.
set -euo pipefail

python="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$python/../.." && pwd)"

rm -rf "$python/gen"
mkdir -p "$python/gen"
protoc -I "$root/proto" -I /usr/include \
	--python_out="$python/gen" \
	--grpc_python_out="$python/gen" \
	--plugin=protoc-gen-grpc_python="$(command -v grpc_python_plugin)" \
	toolgate/v1/permission.proto
