#!/usr/bin/env bash
# Installs what the client examples need: Debian's gRPC and protobuf
# packages for Python (only those missing; apt-get needs root, so sudo is
# used when we are not root) and the Node example's locked npm packages.
set -euo pipefail

clients="$(cd "$(dirname "$0")" && pwd)"

# protoc and grpc_python_plugin generate the Python stubs; libprotobuf-dev
# ships google/protobuf/struct.proto, which the proto imports.
packages=(python3-grpcio python3-protobuf protobuf-compiler protobuf-compiler-grpc libprotobuf-dev)

missing=()
for p in "${packages[@]}"; do
	if [[ "$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null)" != "install ok installed" ]]; then
		missing+=("$p")
	fi
done
if ((${#missing[@]} > 0)); then
	sudo=()
	if ((EUID != 0)); then
		if ! command -v sudo >/dev/null; then
			echo "clients-deps: need root or sudo to install: ${missing[*]}" >&2
			exit 1
		fi
		sudo=(sudo)
	fi
	echo "clients-deps: installing ${missing[*]}"
	"${sudo[@]}" apt-get update -qq
	"${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

if ! command -v npm >/dev/null; then
	echo "clients-deps: the Node example needs Node.js 20 or later with npm" >&2
	exit 1
fi
# --ignore-scripts: none of the locked packages needs an install script to
# work, and none gets to run one.
(cd "$clients/node" && npm ci --ignore-scripts --no-audit --no-fund)
