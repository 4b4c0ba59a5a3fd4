#!/usr/bin/env bash
# Generates the Go gRPC client code of Engram from proto/ into a GOPATH tree under OUT_DIR (never
# committed):
#
#   bash clients/go/generate.sh OUT_DIR     # OUT_DIR/src/engram.local/go/gen/engram/<service>/v1
#
# Uses Debian's protoc (protobuf-compiler 3.21), protoc-gen-go (APIv2, 1.28) and protoc-gen-go-grpc
# (grpc-go 1.33); `bash scripts/ensure-go.sh` installs them. Only proto/engram/** is generated: the
# engram protos carry no go_package, so each file is mapped here to
# engram.local/go/gen/engram/<service>/v1 (package <service>v1). The google/api and google/rpc types
# they import come from Debian's genproto (golang-google-genproto-dev), the well-known types from
# google.golang.org/protobuf; grpc/health and grpc/reflection ship with grpc-go.
set -euo pipefail

fail() { printf '[generate-go] ERROR: %s\n' "$*" >&2; exit 1; }

[ $# -eq 1 ] || fail "usage: bash clients/go/generate.sh OUT_DIR"
out=$1
root=$(cd "$(dirname "$0")/../.." && pwd)
PROTOC=${PROTOC:-/usr/bin/protoc}
WKT_INCLUDE=${PROTOC_WKT_INCLUDE:-/usr/include}
GEN_PREFIX=engram.local/go/gen

for tool in "$PROTOC" /usr/bin/protoc-gen-go /usr/bin/protoc-gen-go-grpc; do
  [ -x "$tool" ] || fail "$tool not found; run 'bash scripts/ensure-go.sh'"
done
[ -f "$WKT_INCLUDE/google/protobuf/timestamp.proto" ] ||
  fail "$WKT_INCLUDE/google/protobuf/*.proto not found; run 'bash scripts/ensure-go.sh' (installs libprotobuf-dev)"

mapfile -t files < <(cd "$root/proto" && find engram -name '*.proto' | LC_ALL=C sort)
[ "${#files[@]}" -gt 0 ] || fail "no .proto files under $root/proto/engram"

# M options: engram/ingestion/v1/session.proto -> engram.local/go/gen/engram/ingestion/v1;ingestionv1
mappings=()
for file in "${files[@]}"; do
  dir=$(dirname "$file")
  service=$(basename "$(dirname "$dir")")
  version=$(basename "$dir")
  mappings+=("M$file=$GEN_PREFIX/$dir;$service$version")
done
go_opt=$(IFS=,; echo "${mappings[*]}")

mkdir -p "$out/src"
"$PROTOC" -I "$root/proto" -I "$WKT_INCLUDE" \
  --plugin=protoc-gen-go=/usr/bin/protoc-gen-go --plugin=protoc-gen-go-grpc=/usr/bin/protoc-gen-go-grpc \
  --go_out="$out/src" --go_opt="$go_opt" \
  --go-grpc_out="$out/src" --go-grpc_opt="$go_opt" \
  "${files[@]}"
printf '[generate-go] generated %d protos into %s/src/%s\n' "${#files[@]}" "$out" "$GEN_PREFIX" >&2
