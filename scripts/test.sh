#!/usr/bin/env bash
# The whole test suite, exactly as CI runs it (after `npm ci`). Starts what the tests need.
set -euo pipefail
cd "$(dirname "$0")/.."
export NX_DAEMON=false NX_NO_CLOUD=true NX_TUI=false
step() { printf '\n==> %s\n' "$*"; }

step "test dependencies: MariaDB"
bash scripts/ensure-mariadb.sh
step "test dependencies: Python gRPC toolchain (polyglot client test)"
bash scripts/ensure-python.sh
step "test dependencies: Go gRPC toolchain (Go client test)"
bash scripts/ensure-go.sh
step "test dependencies: chromium (Studio browser tests)"
bash scripts/ensure-chromium.sh

step "contracts: buf lint"
npx --no-install buf lint
step "contracts: buf breaking"
bash scripts/check-breaking.sh
step "contracts: generated code is up to date"
bash scripts/check-generated.sh

step "typecheck (tsc --noEmit)"
npx --no-install tsc -p tsconfig.json
npx --no-install tsc -p bench/tsconfig.json
npx --no-install tsc -p apps/studio/tsconfig.json
npx --no-install tsc -p apps/studio/test/tsconfig.json
step "build Engram Studio (served at /studio by the all-in-one)"
node scripts/build-studio.mjs --force
step "lint (eslint, module boundaries) and format (prettier)"
npx --no-install eslint --max-warnings=0 .
npx --no-install depcruise --config .dependency-cruiser.cjs libs services apps bench
npx --no-install prettier --check --log-level warn .

step "unit tests"
node --experimental-vm-modules node_modules/jest/bin/jest.js --selectProjects unit --ci
step "integration tests"
node --experimental-vm-modules node_modules/jest/bin/jest.js --selectProjects integration --ci --runInBand
