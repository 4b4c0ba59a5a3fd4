#!/usr/bin/env bash
# Makes sure the Go client of the polyglot test (services/all-in-one/test/go-client.int.spec.ts)
# can be generated and built offline with Debian's packages: the Go 1.19 toolchain (golang-go),
# protoc with the well-known .proto files (protobuf-compiler, libprotobuf-dev), the APIv2 Go
# plugin (protoc-gen-go 1.28) and grpc-go's plugin (protoc-gen-go-grpc 1.33), and the Go sources
# the generated code and clients/go/engram import, under /usr/share/gocode: grpc-go 1.33
# (golang-google-grpc-dev), google.golang.org/protobuf 1.28 (golang-google-protobuf-dev),
# github.com/golang/protobuf 1.5 (golang-github-golang-protobuf-1-5-dev: the APIv1 shim over
# APIv2 that grpc 1.33 and genproto use; it conflicts with, and so replaces, the APIv1-only
# golang-github-golang-protobuf-1-3-dev) and genproto's errdetails/status/annotations
# (golang-google-genproto-dev). golang-goprotobuf-dev is not used: it is the APIv1 protoc-gen-go
# 1.3 and pulls in the 1-3 flavour. Idempotent; fails loudly — never skips — when the packages
# cannot be installed.
set -euo pipefail
cd "$(dirname "$0")/.."

log() { printf '[ensure-go] %s\n' "$*" >&2; }
fail() { log "ERROR: $*"; exit 1; }

PACKAGES=(golang-go protobuf-compiler libprotobuf-dev protoc-gen-go protoc-gen-go-grpc golang-google-grpc-dev
  golang-google-protobuf-dev golang-github-golang-protobuf-1-5-dev golang-google-genproto-dev)
GOCODE=/usr/share/gocode/src
ready() {
  [ -x /usr/bin/go ] && [ -x /usr/bin/protoc ] && [ -x /usr/bin/protoc-gen-go ] && [ -x /usr/bin/protoc-gen-go-grpc ] &&
    [ -f /usr/include/google/protobuf/timestamp.proto ] &&
    [ -f "$GOCODE/google.golang.org/grpc/server.go" ] &&
    [ -f "$GOCODE/google.golang.org/protobuf/proto/proto.go" ] &&
    [ -f "$GOCODE/github.com/golang/protobuf/proto/registry.go" ] &&
    [ -f "$GOCODE/google.golang.org/genproto/googleapis/rpc/errdetails/error_details.pb.go" ]
}

if ! ready; then
  command -v apt-get >/dev/null 2>&1 || fail "the Go gRPC toolchain is missing and apt-get is unavailable; install ${PACKAGES[*]} (Debian/Ubuntu names) yourself"
  [ "$(id -u)" = 0 ] || fail "the Go gRPC toolchain is missing; run 'sudo apt-get install -y ${PACKAGES[*]}' or re-run as root"
  log "installing ${PACKAGES[*]} with apt-get"
  export DEBIAN_FRONTEND=noninteractive
  apt-get -o DPkg::Lock::Timeout=600 update -qq >/dev/null || fail "apt-get update failed"
  apt-get -o DPkg::Lock::Timeout=600 install -y -qq --no-install-recommends "${PACKAGES[@]}" >/dev/null 2>&1 ||
    fail "apt-get install ${PACKAGES[*]} failed (run it by hand to see why)"
  ready || fail "installed ${PACKAGES[*]}, but go, protoc, protoc-gen-go, protoc-gen-go-grpc or the Go sources under $GOCODE are still missing"
fi

versions=$(dpkg-query -W -f='${Package} ${Version}, ' golang-go protoc-gen-go protoc-gen-go-grpc golang-google-grpc-dev \
  golang-google-protobuf-dev golang-github-golang-protobuf-1-5-dev golang-google-genproto-dev)
log "$(/usr/bin/go version | cut -d' ' -f3), $(/usr/bin/protoc --version), ${versions%, } ready"
