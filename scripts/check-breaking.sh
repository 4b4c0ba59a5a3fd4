#!/usr/bin/env bash
# buf breaking (FILE rules) against the last landed contracts: the commit recorded in
# proto/BREAKING_BASELINE (or BUF_BREAKING_AGAINST=<ref> to compare with anything else).
# Before changing a .proto, a session records the main commit it started from in that file, so
# that the whole change, not only its last commit, is compared with what clients already have.
# An intended break needs a decision record and a new major version package instead.
set -euo pipefail
cd "$(dirname "$0")/.."
against=${BUF_BREAKING_AGAINST:-}
if [ -z "$against" ] && [ -s proto/BREAKING_BASELINE ]; then
  against=$(tr -d '[:space:]' < proto/BREAKING_BASELINE)
fi
if [ -z "$against" ]; then
  echo "buf breaking: no baseline recorded in proto/BREAKING_BASELINE (the contracts have not landed before this change): nothing to compare"
  exit 0
fi
if ! git rev-parse --verify --quiet "$against^{commit}" >/dev/null \
  && [ "$(git rev-parse --is-shallow-repository)" = true ]; then
  git fetch --quiet --unshallow || true
fi
if ! git rev-parse --verify --quiet "$against^{commit}" >/dev/null; then
  echo "buf breaking: baseline '$against' is not in this clone (shallow clone?); fetch full history" >&2
  exit 1
fi
npx --no-install buf breaking --against ".git#ref=$(git rev-parse "$against")"
echo "no breaking contract changes against $against"
