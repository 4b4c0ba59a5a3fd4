#!/usr/bin/env bash
# Builds the engram-client wheel into OUT_DIR, offline: copies the SDK source into a build tree
# (OUT_DIR/build), generates the gRPC code from proto/ next to it (generate.sh) and runs
# `pip wheel` without network, build isolation or dependencies, with Debian's setuptools.
#
#   bash clients/python/build.sh OUT_DIR     # prints the wheel's path on stdout
#
# Needs `bash scripts/ensure-python.sh` (protoc, the gRPC plugin, setuptools, pip for
# /usr/bin/python3). Nothing is written inside the repository.
set -euo pipefail

fail() { printf '[build-python] ERROR: %s\n' "$*" >&2; exit 1; }

[ $# -eq 1 ] || fail "usage: bash clients/python/build.sh OUT_DIR"
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$1"
out=$(cd "$1" && pwd)
PYTHON=${PYTHON:-/usr/bin/python3}
"$PYTHON" -c 'import setuptools, pip' 2>/dev/null ||
  fail "$PYTHON lacks setuptools or pip; run 'bash scripts/ensure-python.sh' (installs python3-setuptools, python3-pip)"

tree="$out/build"
rm -rf "$tree"
mkdir -p "$tree/src"
cp "$here/pyproject.toml" "$here/README.md" "$tree/"
cp -R "$here/src/engram_client" "$tree/src/"
find "$tree/src" -name '__pycache__' -prune -exec rm -rf {} +
bash "$here/generate.sh" "$tree/src"
touch "$tree/src/engram/py.typed" # PEP 561: type checkers read the generated .pyi stubs

rm -f "$out"/engram_client-*.whl
PIP_NO_INDEX=1 PIP_DISABLE_PIP_VERSION_CHECK=1 "$PYTHON" -m pip wheel --quiet --no-deps \
  --no-build-isolation --no-index --wheel-dir "$out" "$tree" >&2 ||
  fail "pip wheel failed (see above)"
wheel=$(ls "$out"/engram_client-0.1.0-*.whl 2>/dev/null | head -n 1)
[ -n "$wheel" ] || fail "pip wheel produced no engram_client wheel in $out"
printf '[build-python] built %s\n' "$wheel" >&2
printf '%s\n' "$wheel"
