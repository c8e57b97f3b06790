#!/usr/bin/env bash
# The LiteSVM harness: Part A (fixes.test.mjs: the X-Ray's fix instructions executed by the real
# programs), Part B without the server (oracle.test.mjs) and with it (scan.test.mjs), and the
# scan's guards (guards.test.mjs), and sequence scans on the demo ledger and over JSON-RPC
# (sequence.test.mjs).
#   ./run.sh                      every test file
#   ./run.sh oracle.test.mjs …    only those
# XRAY_BIN: the xray binary (default ${CARGO_TARGET_DIR:-/var/tmp/xray-target}/release/xray).
set -euo pipefail
cd "$(dirname "$0")"

export XRAY_BIN="${XRAY_BIN:-${CARGO_TARGET_DIR:-/var/tmp/xray-target}/release/xray}"
start=$(date +%s%N)

if [ ! -d node_modules ] || [ package-lock.json -nt node_modules ]; then
  npm ci --no-audit --no-fund
  touch node_modules
fi

files=("$@")
[ ${#files[@]} -gt 0 ] || files=(fixes.test.mjs oracle.test.mjs scan.test.mjs guards.test.mjs sequence.test.mjs program.test.mjs)

echo "litesvm harness: XRAY_BIN=$XRAY_BIN; ${files[*]}"
status=0
# Every test carries its own timeout; --test-timeout bounds any that does not, and timeout(1)
# bounds the whole run (it signals the whole process group: test files and the xray processes
# they started).
timeout --kill-after=10 170 node --test --test-concurrency=1 --test-timeout=60000 "${files[@]}" || status=$?

end=$(date +%s%N)
awk -v ns="$((end - start))" -v st="$status" 'BEGIN { printf "litesvm harness: %.1f s, exit %d\n", ns / 1e9, st }'
exit "$status"
