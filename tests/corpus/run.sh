#!/usr/bin/env bash
# The labelled verdict corpus (docs/verdicts.md): every case scanned on the LiteSVM-backed rpc
# source and on the demo source; prints the figures and fails on a case worse than baseline.json.
#   tests/corpus/run.sh
#   UPDATE_BASELINE=1 tests/corpus/run.sh   accept the verdicts of this run as the baseline
#   TARGETS=1 tests/corpus/run.sh           also fail when issue #41's targets are not met
# XRAY_BIN: the xray binary (default ${CARGO_TARGET_DIR:-/var/tmp/xray-target}/release/xray).
# The packages are the LiteSVM harness's (tests/litesvm/package.json): node_modules is linked here.
set -euo pipefail
cd "$(dirname "$0")"

export XRAY_BIN="${XRAY_BIN:-${CARGO_TARGET_DIR:-/var/tmp/xray-target}/release/xray}"
start=$(date +%s%N)

if [ ! -d ../litesvm/node_modules ] || [ ../litesvm/package-lock.json -nt ../litesvm/node_modules ]; then
  (cd ../litesvm && npm ci --no-audit --no-fund && touch node_modules)
fi
[ -L node_modules ] || ln -s ../litesvm/node_modules node_modules

report=$(mktemp -t xray-corpus-report.XXXXXX)
log=$(mktemp -t xray-corpus-log.XXXXXX)
trap 'rm -f "$report" "$log"' EXIT
export CORPUS_REPORT="$report"

echo "verdict corpus: XRAY_BIN=$XRAY_BIN"
status=0
# timeout(1) bounds the whole run (it signals the process group: the test and the xray processes).
timeout --kill-after=10 300 node --test --test-concurrency=1 --test-reporter=spec corpus.test.mjs >"$log" 2>&1 || status=$?
if [ "$status" -eq 0 ]; then
  cat "$report"
else
  cat "$log"   # the reporter's account of what failed (the figures are in it when they were made)
fi

end=$(date +%s%N)
awk -v ns="$((end - start))" -v st="$status" 'BEGIN { printf "verdict corpus: %.1f s, exit %d\n", ns / 1e9, st }'
exit "$status"
