# Sourced by the scripts that drive the real binary (tests/schemathesis/run.sh,
# loadtest/flows.sh): start `xray serve` on the demo ledger on loopback, make a key, stop it.
#
#   use_demo_workdir BIN WORK            fails unless BIN is an executable; on exit, stops the
#       server and removes WORK (an EXIT trap)
#   start_demo_server BIN DATA_DIR PORT ADMIN_PORT LOG [serve options…]
#       serves in the background (SERVER_PID), output to LOG; returns once /healthz answers
#       (at most 10 s, else the log is shown and it fails)
#   demo_key BIN DATA_DIR NAME SCOPES   prints a new key's secret, with a rate limit and quota
#       far above what a test sends (the tests drive the contract, not the 429 path)
#   stop_demo_server                     SIGTERM, then waits for the drain

SERVER_PID=""
DEMO_WORKDIR=""

use_demo_workdir() {
  [ -x "$1" ] || { echo "no xray binary at $1 (run: cargo build --release)" >&2; exit 1; }
  DEMO_WORKDIR=$2
  trap 'stop_demo_server; rm -rf "$DEMO_WORKDIR"' EXIT
}

start_demo_server() {
  local bin=$1 data=$2 port=$3 admin_port=$4 log=$5
  shift 5
  XRAY_LOG=warn "$bin" serve --ledger demo --data-dir "$data" --listen "127.0.0.1:$port" \
    --admin-listen "127.0.0.1:$admin_port" --access-log false "$@" >"$log" 2>&1 &
  SERVER_PID=$!
  for _ in $(seq 1 100); do
    # admin.addr too: the admin listener (which `xray keys` reaches) starts just after the API.
    curl -fsS -o /dev/null "http://127.0.0.1:$port/healthz" 2>/dev/null && [ -s "$data/admin.addr" ] && return 0
    sleep 0.1
  done
  echo "xray serve did not answer /healthz within 10 s:" >&2
  cat "$log" >&2
  return 1
}

demo_key() {
  "$1" keys create --data-dir "$2" --name "$3" --scopes "$4" \
    --rate-per-second 100000 --burst 100000 --quota 1000000 |
    python3 -c 'import json, sys; print(json.load(sys.stdin)["key"])'
}

stop_demo_server() {
  if [ -n "$SERVER_PID" ]; then
    kill -TERM "$SERVER_PID" 2>/dev/null || true
    wait "$SERVER_PID" 2>/dev/null || true
    SERVER_PID=""
  fi
}
