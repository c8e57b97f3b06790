#!/usr/bin/env bash
# The `drain` scan's open-model latency at several rates on one fresh server (issue #41 item 9:
# where the tail starts), and where its listener's CPU went.
#
#   RATES="3400 5000 7000" bash loadtest/open-scan.sh
#
# One `xray serve` (demo ledger, one listener thread, pinned to core 0) and 32 scan keys;
# `examples/openload` (core 1) offers each rate in turn for DURATION_S seconds over 64
# connections and prints rate, served, p50/p99/p99.9 ms (from each request's scheduled
# instant), dropped and errors. Then the CPU ticks (user, kernel) of each server thread and the
# signature batches /metrics counted (batches, scans in them). Binaries: $XRAY_BIN_DIR (xray,
# examples/openload), else the release build in ${CARGO_TARGET_DIR:-/var/tmp/xray-target}
# (built first when missing). Bounded: RATES × DURATION_S seconds of load, one server.
set -euo pipefail
cd "$(dirname "$0")/.."
. loadtest/lib.sh
RATES=${RATES:-3400 5000 7000}; DURATION_S=${DURATION_S:-10}; CONNECTIONS=64; KEYS=32
BIN=${XRAY_BIN_DIR:-${CARGO_TARGET_DIR:-/var/tmp/xray-target}/release}
if [ ! -x "$BIN/xray" ] || [ ! -x "$BIN/examples/openload" ]; then
  . scripts/cargo-env.sh
  cargo build --release --bin xray --example openload >&2
fi
PORT=18720; ADMIN=18721
$SERVER_CPU "$BIN/xray" serve --listen 127.0.0.1:$PORT --admin-listen 127.0.0.1:$ADMIN --data-dir "$WORK/d" \
  --listener-threads 1 --compute-threads 1 --access-log false >"$WORK/out" 2>"$WORK/err" &
PID=$!; PIDS+=($PID)
wait_http http://127.0.0.1:$PORT/healthz
wait_admin "$WORK/d"
for _ in $(seq 1 $KEYS); do
  "$BIN/xray" keys create --data-dir "$WORK/d" --name load --scopes transaction:scan --rate-per-second 1000000 \
    --burst 1000000 --quota 1000000000 | sed -n 's/.*"key": *"\(svc_live_[^"]*\)".*/\1/p'
done >"$WORK/keys"
BODY=$(printf '{"transaction":"%s"}' "$("$BIN/xray" ledger demo-tx drain)")
URL=http://127.0.0.1:$PORT/v1/developer/intelligence/transaction
echo "rate/s served/s p50 p99 p99.9 (ms) dropped errors — $PINNED, $CONNECTIONS connections, ${DURATION_S}s each"
for rate in $RATES; do
  $LOAD_CPU "$BIN/examples/openload" --url "$URL" --bearers "$WORK/keys" --method POST \
    --header "Content-Type: application/json" --body "$BODY" --rate "$rate" --duration-s "$DURATION_S" \
    --connections $CONNECTIONS --backlog-max 100000 >"$WORK/open.json"
  python3 - "$WORK/open.json" "$rate" <<'PY'
import json, sys
m = json.load(open(sys.argv[1]))
print(sys.argv[2], round(m["served_per_s"]), m["p50_ms"], m["p99_ms"], m["p999_ms"], m["dropped"], m["errors"])
PY
done
echo "server threads' CPU ticks (user kernel), busiest first:"
for t in /proc/$PID/task/*; do echo "  $(cat "$t/comm") $(awk '{print $14, $15}' "$t/stat")"; done | sort -k2 -n -r | head -6
curl -s -H "Authorization: Bearer $(cat "$WORK/d/admin.token")" "http://127.0.0.1:$ADMIN/metrics" | grep '^xray_scan_signature'
