#!/usr/bin/env bash
# Makes sure the Python SDK (clients/python, engram-client) can be built offline and tested:
# Debian's protoc and gRPC Python plugin (protobuf-compiler, protobuf-compiler-grpc, with the
# well-known .proto files from libprotobuf-dev) to generate its code; for /usr/bin/python3 the
# runtime (python3-grpcio, python3-protobuf), the wheel build (python3-setuptools, python3-pip,
# python3-wheel), virtual environments (python3-venv) and pytest (python3-pytest). Used by
# services/all-in-one/test/python-client.int.spec.ts. /usr/bin/python3 on purpose: the python3
# first on PATH may be another interpreter (pyenv) without these modules. python3-grpc-tools is
# not used: its bundled protoc (3.5) rejects the contracts' proto3 `optional` fields. Debian has
# no googleapis-common-protos package, so the wheel ships google.api and google.rpc itself.
# apt-get waits up to 10 minutes for the dpkg lock (another installer may be running).
# Idempotent; fails loudly — never skips — when the packages cannot be installed.
set -euo pipefail
cd "$(dirname "$0")/.."

log() { printf '[ensure-python] %s\n' "$*" >&2; }
fail() { log "ERROR: $*"; exit 1; }

PYTHON=/usr/bin/python3
PACKAGES=(python3-grpcio python3-protobuf protobuf-compiler protobuf-compiler-grpc libprotobuf-dev
  python3-pytest python3-venv python3-setuptools python3-pip python3-wheel)
ready() {
  [ -x "$PYTHON" ] && "$PYTHON" -c 'import grpc, google.protobuf, pytest, venv, ensurepip, setuptools, pip, wheel' >/dev/null 2>&1 &&
    [ -x /usr/bin/protoc ] && [ -x /usr/bin/grpc_python_plugin ] &&
    [ -f /usr/include/google/protobuf/timestamp.proto ]
}

if ! ready; then
  command -v apt-get >/dev/null 2>&1 || fail "the Python gRPC toolchain is missing and apt-get is unavailable; install ${PACKAGES[*]} (Debian/Ubuntu names) yourself"
  [ "$(id -u)" = 0 ] || fail "the Python gRPC toolchain is missing; run 'sudo apt-get install -y ${PACKAGES[*]}' or re-run as root"
  log "installing ${PACKAGES[*]} with apt-get"
  export DEBIAN_FRONTEND=noninteractive
  apt-get -o DPkg::Lock::Timeout=600 update -qq >/dev/null || fail "apt-get update failed"
  apt-get -o DPkg::Lock::Timeout=600 install -y -qq --no-install-recommends "${PACKAGES[@]}" >/dev/null 2>&1 ||
    fail "apt-get install ${PACKAGES[*]} failed (run it by hand to see why)"
  ready || fail "installed ${PACKAGES[*]}, but $PYTHON still cannot import grpc, google.protobuf, pytest, venv, ensurepip, setuptools, pip or wheel, or protoc, grpc_python_plugin or the well-known .proto files are missing"
fi

log "$("$PYTHON" -c 'import sys, grpc, google.protobuf; import pytest; print(f"python {sys.version.split()[0]}, grpcio {grpc.__version__}, protobuf {google.protobuf.__version__}, pytest {pytest.__version__}")'), $(/usr/bin/protoc --version) ready"
