#!/usr/bin/env bash
# Generates, checks, tests and builds the Go client offline with Debian's Go toolchain, in a
# module-less GOPATH (no module proxy, no network):
#
#   bash clients/go/build.sh OUT_DIR     # then OUT_DIR/bin/engram-go-example
#
# OUT_DIR/src holds the generated code (clients/go/generate.sh) and copies of clients/go/engram
# and clients/go/example at their import paths (engram.local/go/...); the other sources (grpc-go
# 1.33, google.golang.org/protobuf 1.28, genproto, golang/protobuf 1.5) come from Debian's
# /usr/share/gocode. `bash scripts/ensure-go.sh` installs the packages. Steps: gofmt (fails on an
# unformatted file), go vet, go test of the engram package (the retry rule against an in-process
# gRPC server), go build of the example.
set -euo pipefail

fail() { printf '[build-go] ERROR: %s\n' "$*" >&2; exit 1; }
log() { printf '[build-go] %s\n' "$*" >&2; }

[ $# -eq 1 ] || fail "usage: bash clients/go/build.sh OUT_DIR"
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$1"
out=$(cd "$1" && pwd)
GO=${GO:-/usr/bin/go}
[ -x "$GO" ] || fail "$GO not found; run 'bash scripts/ensure-go.sh'"
[ -d /usr/share/gocode/src/google.golang.org/grpc ] || fail "Debian's Go gRPC sources are missing; run 'bash scripts/ensure-go.sh'"

bash "$here/generate.sh" "$out"
pkg="$out/src/engram.local/go"
rm -rf "$pkg/engram" "$pkg/example"
cp -R "$here/engram" "$here/example" "$pkg/"

# Offline and reproducible: no modules, no proxy, no checksum database, no user go.env.
export GO111MODULE=off GOPATH="$out:/usr/share/gocode" GOPROXY=off GOSUMDB=off GOFLAGS= GOENV=off \
  GOCACHE="$out/cache" CGO_ENABLED=0

unformatted=$(gofmt -l "$here/engram" "$here/example")
[ -z "$unformatted" ] || fail "not gofmt-formatted (run gofmt -w): $unformatted"
"$GO" vet engram.local/go/engram engram.local/go/example
"$GO" test -count=1 engram.local/go/engram
"$GO" build -o "$out/bin/engram-go-example" engram.local/go/example
log "built $out/bin/engram-go-example with $("$GO" version)"
