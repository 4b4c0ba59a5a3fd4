#!/usr/bin/env bash
# Generates the Python gRPC code of Engram from proto/ into OUT_DIR (never committed): messages
# (`_pb2.py`), their type stubs (`_pb2.pyi`) and the service stubs (`_pb2_grpc.py`).
#
#   bash clients/python/generate.sh OUT_DIR
#
# clients/python/build.sh runs it to put the code into the engram-client wheel. Uses Debian's
# protoc (protobuf-compiler, 3.21) and gRPC Python plugin (protobuf-compiler-grpc);
# `bash scripts/ensure-python.sh` installs them. Not `python3 -m grpc_tools.protoc`: Debian's
# python3-grpc-tools bundles protoc 3.5, which rejects the `optional` fields of the contracts.
# Generates engram/** and the vendored google/api and google/rpc protos (google.rpc.Status and
# ErrorInfo decode error details); the well-known google/protobuf types come from the protobuf
# runtime. grpc/health and grpc/reflection are left out: a generated top-level `grpc` package
# would shadow the grpcio runtime.
set -euo pipefail

fail() { printf '[generate-python] ERROR: %s\n' "$*" >&2; exit 1; }

[ $# -eq 1 ] || fail "usage: bash clients/python/generate.sh OUT_DIR"
out=$1
root=$(cd "$(dirname "$0")/../.." && pwd)
PROTOC=${PROTOC:-/usr/bin/protoc}
PLUGIN=${GRPC_PYTHON_PLUGIN:-/usr/bin/grpc_python_plugin}
WKT_INCLUDE=${PROTOC_WKT_INCLUDE:-/usr/include}

[ -x "$PROTOC" ] || fail "$PROTOC not found; run 'bash scripts/ensure-python.sh' (installs protobuf-compiler)"
[ -x "$PLUGIN" ] || fail "$PLUGIN not found; run 'bash scripts/ensure-python.sh' (installs protobuf-compiler-grpc)"
[ -f "$WKT_INCLUDE/google/protobuf/timestamp.proto" ] ||
  fail "$WKT_INCLUDE/google/protobuf/*.proto not found; run 'bash scripts/ensure-python.sh' (installs libprotobuf-dev)"

mkdir -p "$out"
mapfile -t files < <(cd "$root/proto" && find engram google/api google/rpc -name '*.proto' | LC_ALL=C sort)
"$PROTOC" -I "$root/proto" -I "$WKT_INCLUDE" \
  --python_out="$out" --pyi_out="$out" --grpc_out="$out" --plugin=protoc-gen-grpc="$PLUGIN" \
  "${files[@]}"
printf '[generate-python] generated %d protos into %s\n' "${#files[@]}" "$out" >&2
