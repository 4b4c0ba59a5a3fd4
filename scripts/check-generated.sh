#!/usr/bin/env bash
# Regenerates the contracts into a scratch directory and fails on any difference from what is
# committed in libs/contracts/src/gen (generated code is never edited by hand).
set -euo pipefail
cd "$(dirname "$0")/.."
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
npx --no-install buf generate -o "$scratch"
if ! diff -r "$scratch/libs/contracts/src/gen" libs/contracts/src/gen; then
  echo "libs/contracts/src/gen is out of date: run 'npm run generate' and commit the result." >&2
  exit 1
fi
echo "generated code matches proto/"
