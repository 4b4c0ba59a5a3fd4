#!/usr/bin/env bash
# buf breaking (FILE rules) against a git ref: BUF_BREAKING_AGAINST if set (e.g. a release tag),
# otherwise the previous commit, so that every commit is checked as it lands. A breaking change
# that is intended needs a decision record in docs/decisions/ and BUF_BREAKING_AGAINST pointing
# past it.
set -euo pipefail
cd "$(dirname "$0")/.."
against=${BUF_BREAKING_AGAINST:-HEAD~1}
if ! git rev-parse --verify --quiet "$against^{commit}" >/dev/null; then
  echo "buf breaking: no commit '$against' to compare with (first commit or shallow clone): nothing to compare" >&2
  exit 0
fi
if ! git cat-file -e "$against:buf.yaml" 2>/dev/null; then
  echo "buf breaking: '$against' has no contracts yet: nothing to compare" >&2
  exit 0
fi
npx --no-install buf breaking --against ".git#ref=$(git rev-parse "$against")"
echo "no breaking contract changes against $against"
