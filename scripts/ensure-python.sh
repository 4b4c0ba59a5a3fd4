#!/usr/bin/env bash
# Makes sure the Python client of the polyglot test (services/all-in-one/test/python-client.int.spec.ts)
# can be generated and run: Debian's protoc and gRPC Python plugin (protobuf-compiler,
# protobuf-compiler-grpc, with the well-known .proto files from libprotobuf-dev) and, for
# /usr/bin/python3, the grpc and google.protobuf modules (python3-grpcio, python3-protobuf).
# /usr/bin/python3 on purpose: the python3 first on PATH may be another interpreter (pyenv)
# without these modules. python3-grpc-tools is not used: its bundled protoc (3.5) rejects the
# contracts' proto3 `optional` fields. Idempotent; fails loudly — never skips — when the
# packages cannot be installed.
set -euo pipefail
cd "$(dirname "$0")/.."

log() { printf '[ensure-python] %s\n' "$*" >&2; }
fail() { log "ERROR: $*"; exit 1; }

PYTHON=/usr/bin/python3
PACKAGES=(python3-grpcio python3-protobuf protobuf-compiler protobuf-compiler-grpc libprotobuf-dev)
ready() {
  [ -x "$PYTHON" ] && "$PYTHON" -c 'import grpc, google.protobuf' >/dev/null 2>&1 &&
    [ -x /usr/bin/protoc ] && [ -x /usr/bin/grpc_python_plugin ] &&
    [ -f /usr/include/google/protobuf/timestamp.proto ]
}

if ! ready; then
  command -v apt-get >/dev/null 2>&1 || fail "the Python gRPC toolchain is missing and apt-get is unavailable; install ${PACKAGES[*]} (Debian/Ubuntu names) yourself"
  [ "$(id -u)" = 0 ] || fail "the Python gRPC toolchain is missing; run 'sudo apt-get install -y ${PACKAGES[*]}' or re-run as root"
  log "installing ${PACKAGES[*]} with apt-get"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq >/dev/null || fail "apt-get update failed"
  apt-get install -y -qq --no-install-recommends "${PACKAGES[@]}" >/dev/null 2>&1 ||
    fail "apt-get install ${PACKAGES[*]} failed (run it by hand to see why)"
  ready || fail "installed ${PACKAGES[*]}, but $PYTHON still cannot import grpc and google.protobuf, or protoc, grpc_python_plugin or the well-known .proto files are missing"
fi

log "$("$PYTHON" -c 'import sys, grpc, google.protobuf; print(f"python {sys.version.split()[0]}, grpcio {grpc.__version__}, protobuf {google.protobuf.__version__}")'), $(/usr/bin/protoc --version) ready"
