#!/usr/bin/env bash
# Makes sure Debian's chromium is installed for the Studio's browser tests
# (apps/studio/test/*.int.spec.ts drive /usr/bin/chromium through playwright-core; a browser is
# never downloaded). Idempotent; fails loudly — never skips — when it cannot be installed.
set -euo pipefail

log() { printf '[ensure-chromium] %s\n' "$*" >&2; }
fail() { log "ERROR: $*"; exit 1; }

CHROMIUM=/usr/bin/chromium
if [ ! -x "$CHROMIUM" ]; then
  command -v apt-get >/dev/null 2>&1 || fail "chromium is missing and apt-get is unavailable; install Debian's chromium package yourself"
  [ "$(id -u)" = 0 ] || fail "chromium is missing; run 'sudo apt-get install -y chromium' or re-run as root"
  log "installing chromium with apt-get"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq >/dev/null || fail "apt-get update failed"
  apt-get install -y -qq --no-install-recommends chromium fonts-noto-cjk >/dev/null 2>&1 ||
    fail "apt-get install chromium fonts-noto-cjk failed"
fi
"$CHROMIUM" --version >/dev/null 2>&1 || fail "$CHROMIUM does not run"
log "$("$CHROMIUM" --version 2>/dev/null)"
