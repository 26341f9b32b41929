#!/usr/bin/env bash
# The whole test suite, from a fresh clone: dependencies, NATS, type check, lint, every test.
# Tests run through one Jest process over every project (never from Nx's cache: the
# integration and end-to-end tests talk to a real NATS server, TOOLCHAIN pitfall 12).
set -euo pipefail
cd "$(dirname "$0")/.."
export NX_NO_CLOUD=true NX_DAEMON=false

bash scripts/ensure-deps.sh
bash scripts/ensure-nats.sh

# The console's browser test drives Debian's chromium (never a downloaded browser).
if [ ! -x /usr/bin/chromium ] && [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
  echo "[test] installing chromium for the console's browser test" >&2
  { apt-get install -y -qq chromium || { apt-get update -qq && apt-get install -y -qq chromium; }; } >/dev/null 2>&1 \
    || echo "[test] chromium could not be installed: the console browser test will be skipped" >&2
fi

# The observability test lints each /metrics exposition with Debian's promtool (from prometheus).
if ! command -v promtool >/dev/null && [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
  echo "[test] installing prometheus (promtool) for the metrics lint" >&2
  { apt-get install -y -qq prometheus || { apt-get update -qq && apt-get install -y -qq prometheus; }; } >/dev/null 2>&1 \
    || echo "[test] promtool could not be installed: the promtool checks will be skipped" >&2
fi

echo "[test] type check" >&2
npx tsc -p tsconfig.check.json

echo "[test] format (prettier --check)" >&2
npm run -s format:check

echo "[test] lint (module boundaries, purity rules)" >&2
npx nx run-many -t lint --skip-nx-cache --outputStyle=static

# The tests that run services as processes start them from their bundles, as `npm run up` does.
echo "[test] build the services" >&2
npx nx run-many -t build --projects=intake,resolver,sweeper,escalation,council,audit --outputStyle=static >/dev/null

echo "[test] jest: unit, contract, integration and end-to-end" >&2
mkdir -p .data
rm -f .data/jest-results.json .data/jest-faults.json
set +e
npx jest --ci --forceExit --maxWorkers=2 --testPathIgnorePatterns='/faults-' --json --outputFile=.data/jest-results.json "$@"
status=$?
# The fault scenarios (kill -9, SIGTERM, replicas: services as processes under load) in their
# short version, alone, so no other test competes with a restarting service for the two cores.
if [ $# -eq 0 ]; then
  echo "[test] jest: fault scenarios (short version)" >&2
  rm -rf .data/faults
  npx jest --ci --forceExit --maxWorkers=1 test/e2e/faults- --json --outputFile=.data/jest-faults.json
  faults=$?
  [ $status -eq 0 ] && status=$faults
fi
set -e
node scripts/print-summary.cjs .data/jest-results.json .data/jest-faults.json || true
exit $status
