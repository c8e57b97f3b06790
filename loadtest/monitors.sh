#!/usr/bin/env bash
# Monitors (watched wallets): what they cost in JSON-RPC calls and how many wallets one node
# checks. Three sections, each against a fresh `xray serve --ledger rpc:` whose node is a local
# `xray ledger serve --latency-ms LATENCY_MS` (50 ms added to every answer), all on loopback:
#
#  1. QUIET — QUIET_WALLETS (100) wallets that never move (the demo archetypes with a history,
#     timeline_quiet, then never-funded on-curve addresses) in one account, checked every
#     QUIET_INTERVAL_S (5 s) for QUIET_MEASURE_S (60 s) once their baselines ended: JSON-RPC
#     calls per check by method (xray_ledger_calls_total / xray_monitor_checks_total{quiet}
#     deltas), and per wallet per hour at a 60 s interval = calls per check × 60.
#  2. ACTIVE — timeline_delegate and timeline_dust in one monitor, checked every
#     ACTIVE_INTERVAL_S (5 s) against `--ledger demo+script=<toml>` giving each of them
#     ACTIVE_EVENTS (12) events ACTIVE_EVERY_S apart: calls per active check (its
#     getSignaturesForAddress + the re-analysis it admits), the window's quiet checks taken off
#     at section 1's cost; per hour for a wallet active at every 60 s check = that × 60.
#  3. CAPACITY — CAP_ACCOUNTS (10) accounts × CAP_MONITORS (10) monitors × CAP_WALLETS (100)
#     never-funded wallets, up to CAP_WATCHES_MAX (10,000, the default bound) watched; after
#     their baselines (one analysis each), `--monitor-interval-s CAP_INTERVAL_S` (1 s: far more
#     checks due than a node can make, so the scheduler runs flat out) and, for each value of
#     CAP_IN_FLIGHT ("32 64"; 32 is the default), the server restarted on the same data
#     directory with that `--monitor-checks-in-flight-max`, CAP_WARMUP_S (5 s) of warm-up and
#     CAP_MEASURE_S (60 s) measured: checks/s, xray_monitor_lag_seconds (sampled each second),
#     mean getSignaturesForAddress time, the CPU of the server, of its xray-monitors thread and
#     of the ledger server (/proc utime+stime), and wallets per node at 60 s = checks/s × 60,
#     next to two models: in-flight / latency, and in-flight / (refill step × the steps a check
#     holds its slot: a finished check wakes the scheduler, which refills at most every 10 ms). Last, the
#     default interval at the full bound: CAP_VALIDATE_INTERVAL_S (60; 0 skips it), default in
#     flight, CAP_VALIDATE_WARMUP_S (45 s: the restart's first round, every watch due at once,
#     is over) and CAP_VALIDATE_MEASURE_S (60 s, a whole cycle): does the node keep up, with what
#     lag and CPU.
#
#   bash loadtest/monitors.sh                        # ~8 min
#   SMOKE=1 bash loadtest/monitors.sh                # ~1 min, small sizes and windows
#   XRAY_BIN=/path/to/xray SECTIONS="quiet active" bash loadtest/monitors.sh
#
# Environment: XRAY_BIN [${CARGO_TARGET_DIR:-/var/tmp/xray-target}/release/xray: nothing is
# built], SECTIONS ["quiet active capacity"], PORT_BASE [18700: ledger, API, admin, webhook
# receiver on +0..+3], LATENCY_MS [50], the sizes above, BASELINE_TIMEOUT_S [300],
# CAP_COMPUTE_THREADS [8] and CAP_JOBS_IN_FLIGHT [64]: --compute-threads and
# --jobs-in-flight-per-thread of the server that makes the capacity baselines (only: the
# windows run the defaults; with 2 compute threads, 4 JSON-RPC requests in flight each, 10,000
# baselines take ~5 min against a 50 ms node), KEEP_WORK=1
# keeps the scratch directory (logs, results.json). Everything listens on 127.0.0.1 and is
# stopped on exit; every wait is bounded. The numbers are deltas of the server's /metrics
# (admin listener, bearer <data-dir>/admin.token) and /proc: nothing in the report is typed in.
# Needs python3 (loadtest/monitors.py: stdlib only) and curl.
set -euo pipefail
cd "$(dirname "$0")/.."
HERE=loadtest
XRAY_BIN=${XRAY_BIN:-${CARGO_TARGET_DIR:-/var/tmp/xray-target}/release/xray}
SMOKE=${SMOKE:-0}
small() { if [ "$SMOKE" = 1 ]; then echo "$2"; else echo "$1"; fi; }
SECTIONS=${SECTIONS:-quiet active capacity}
PORT_BASE=${PORT_BASE:-18700}
LATENCY_MS=${LATENCY_MS:-50}
QUIET_WALLETS=${QUIET_WALLETS:-$(small 100 10)}
QUIET_INTERVAL_S=${QUIET_INTERVAL_S:-$(small 5 2)}
QUIET_MEASURE_S=${QUIET_MEASURE_S:-$(small 60 4)}
ACTIVE_INTERVAL_S=${ACTIVE_INTERVAL_S:-$(small 5 2)}
ACTIVE_EVERY_S=${ACTIVE_EVERY_S:-$ACTIVE_INTERVAL_S}
ACTIVE_EVENTS=${ACTIVE_EVENTS:-$(small 12 3)}
ACTIVE_LEAD_S=${ACTIVE_LEAD_S:-$(small 12 8)}
CAP_ACCOUNTS=${CAP_ACCOUNTS:-$(small 10 2)}
CAP_MONITORS=${CAP_MONITORS:-$(small 10 2)}
CAP_WALLETS=${CAP_WALLETS:-100}
CAP_WATCHES_MAX=${CAP_WATCHES_MAX:-10000}
CAP_INTERVAL_S=${CAP_INTERVAL_S:-1}
CAP_IN_FLIGHT=${CAP_IN_FLIGHT:-$(small "32 64" 32)}
CAP_WARMUP_S=${CAP_WARMUP_S:-$(small 5 2)}
CAP_MEASURE_S=${CAP_MEASURE_S:-$(small 60 4)}
CAP_JOBS_IN_FLIGHT=${CAP_JOBS_IN_FLIGHT:-64}
CAP_COMPUTE_THREADS=${CAP_COMPUTE_THREADS:-8}
CAP_VALIDATE_INTERVAL_S=${CAP_VALIDATE_INTERVAL_S:-$(small 60 0)}
CAP_VALIDATE_WARMUP_S=${CAP_VALIDATE_WARMUP_S:-45}
CAP_VALIDATE_MEASURE_S=${CAP_VALIDATE_MEASURE_S:-60}
BASELINE_TIMEOUT_S=${BASELINE_TIMEOUT_S:-$(small 300 60)}
TICK_MS=10         # MONITOR_REFILL_MS (src/config/mod.rs), for the report's models only
RPC_CONCURRENCY=4  # RPC_CONCURRENCY_MAX (src/config/mod.rs): a job source's requests in flight, likewise

[ -x "$XRAY_BIN" ] || { echo "no xray binary at $XRAY_BIN (set XRAY_BIN; this script builds nothing)" >&2; exit 1; }
[ "$ACTIVE_EVENTS" -ge 1 ] && [ "$ACTIVE_EVENTS" -le 16 ] || { echo "ACTIVE_EVENTS must be 1..16 (32 events a script)" >&2; exit 1; }
for tool in python3 curl; do command -v "$tool" >/dev/null || { echo "$tool not found" >&2; exit 1; }; done

# lib.sh: WORK (a scratch directory), PIDS (stopped on exit), wait_http.
source "$HERE/lib.sh"
if [ "${KEEP_WORK:-0}" = 1 ]; then
  trap 'for pid in "${PIDS[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done; wait 2>/dev/null || true; echo "kept $WORK" >&2' EXIT
fi
on_error() {
  echo "failed; the last lines of the logs:" >&2
  for f in "$WORK"/*.log; do [ -f "$f" ] && { echo "== $f" >&2; tail -n 15 "$f" >&2; }; done
}
trap on_error ERR

LEDGER_PORT=$PORT_BASE; API_PORT=$((PORT_BASE + 1)); ADMIN_PORT=$((PORT_BASE + 2)); HOOK_PORT=$((PORT_BASE + 3))
for port in $LEDGER_PORT $API_PORT $ADMIN_PORT $HOOK_PORT; do
  if ss -Htln "sport = :$port" 2>/dev/null | grep -q .; then echo "port $port is taken (set PORT_BASE)" >&2; exit 1; fi
done

export API="http://127.0.0.1:$API_PORT" ADMIN="http://127.0.0.1:$ADMIN_PORT"
export HOOK_URL="http://127.0.0.1:$HOOK_PORT/hook" HOOK_FILE="$WORK/hooks.txt" RESULTS="$WORK/results.json"
export DEMO_LIST="$WORK/demo.json" BASELINE_TIMEOUT_S LATENCY_MS TICK_MS RPC_CONCURRENCY
export QUIET_WALLETS QUIET_INTERVAL_S QUIET_MEASURE_S ACTIVE_INTERVAL_S ACTIVE_EVERY_S ACTIVE_EVENTS
export CAP_ACCOUNTS CAP_MONITORS CAP_WALLETS CAP_WATCHES_MAX CAP_INTERVAL_S CAP_WARMUP_S CAP_MEASURE_S CAP_JOBS_IN_FLIGHT CAP_COMPUTE_THREADS
export XRAY_BIN RUN_DATE="$(date -u +%Y-%m-%dT%H:%MZ)"
export XRAY_VERSION="$("$XRAY_BIN" --version), sha256 $(sha256sum "$XRAY_BIN" | cut -c1-12)…, modified $(date -u -r "$XRAY_BIN" +%Y-%m-%dT%H:%MZ)"
export MACHINE="$(nproc) cores ($(lscpu | sed -n 's/^Model name:[[:space:]]*//p' | head -1)), $(free -g | awk '/^Mem:/ { print $2 " GiB" }') RAM, $(uname -r)"
export XRAY_LOG=${XRAY_LOG:-warn}
"$XRAY_BIN" demo list >"$DEMO_LIST"

forget() { # pid: no longer one of PIDS
  local p kept=()
  for p in "${PIDS[@]}"; do [ "$p" = "$1" ] || kept+=("$p"); done
  PIDS=("${kept[@]}")
}

stop() { # pid: stop one process this script started, and forget it
  kill -TERM "$1" 2>/dev/null || true
  wait "$1" 2>/dev/null || true
  forget "$1"
}

py() { # monitors.py ARGS…, in the background so that a signal to this script stops it too
  local pid rc=0
  python3 "$HERE/monitors.py" "$@" &
  pid=$!; PIDS+=("$pid")
  wait "$pid" || rc=$?
  forget "$pid"
  return "$rc"
}

start_ledger() { # spec name
  "$XRAY_BIN" ledger serve --ledger "$1" --latency-ms "$LATENCY_MS" --listen "127.0.0.1:$LEDGER_PORT" \
    >"$WORK/$2-ledger.log" 2>&1 &
  LEDGER_PID=$!; PIDS+=("$LEDGER_PID"); export LEDGER_PID
  for _ in $(seq 1 100); do
    curl -s -o /dev/null -X POST -H 'Content-Type: application/json' \
      -d '{"jsonrpc":"2.0","id":1,"method":"getSlot"}' "http://127.0.0.1:$LEDGER_PORT" && return 0
    sleep 0.1
  done
  echo "the ledger server did not answer" >&2; return 1
}

start_server() { # data-dir name extra-args…
  local dir=$1 name=$2; shift 2
  "$XRAY_BIN" serve --listen "127.0.0.1:$API_PORT" --admin-listen "127.0.0.1:$ADMIN_PORT" --data-dir "$dir" \
    --ledger "rpc:http://127.0.0.1:$LEDGER_PORT" --webhook-allow-hosts 127.0.0.1 --access-log false "$@" \
    >>"$WORK/$name-server.log" 2>&1 &
  SERVER_PID=$!; PIDS+=("$SERVER_PID"); export SERVER_PID DATA_DIR=$dir
  wait_http "$API/healthz"
}

python3 "$HERE/monitors.py" hooks "$HOOK_PORT" "$HOOK_FILE" >"$WORK/hooks.log" 2>&1 &
PIDS+=($!)
wait_http "http://127.0.0.1:$HOOK_PORT/" || true # answers 501 to a GET: listening

T0=$(date +%s)
echo "monitors: $MACHINE; sections: $SECTIONS, SMOKE=$SMOKE; scratch $WORK" >&2

for section in $SECTIONS; do
  case $section in
    quiet)
      echo "1. quiet: $QUIET_WALLETS wallets every $QUIET_INTERVAL_S s, $QUIET_MEASURE_S s measured" >&2
      start_ledger demo+timeline quiet
      start_server "$WORK/quiet-data" quiet --monitor-interval-s "$QUIET_INTERVAL_S"
      py quiet
      stop "$SERVER_PID"; stop "$LEDGER_PID" ;;
    active)
      echo "2. active: $ACTIVE_EVENTS events each for 2 wallets, $ACTIVE_EVERY_S s apart, checks every $ACTIVE_INTERVAL_S s" >&2
      SCRIPT_START_MS=$(python3 "$HERE/monitors.py" script "$WORK/timeline.toml" "$ACTIVE_LEAD_S" "$ACTIVE_EVENTS" "$ACTIVE_EVERY_S")
      export SCRIPT_START_MS
      start_ledger "demo+script=$WORK/timeline.toml" active
      start_server "$WORK/active-data" active --monitor-interval-s "$ACTIVE_INTERVAL_S"
      py active
      stop "$SERVER_PID"; stop "$LEDGER_PID" ;;
    capacity)
      set -- $CAP_IN_FLIGHT
      echo "3. capacity: $CAP_ACCOUNTS × $CAP_MONITORS × $CAP_WALLETS wallets (bound $CAP_WATCHES_MAX), interval $CAP_INTERVAL_S s, in flight: $CAP_IN_FLIGHT" >&2
      start_ledger demo capacity
      CAP_ARGS=(--monitor-watches-per-node-max "$CAP_WATCHES_MAX" --queue-capacity 65536 --live-jobs-per-account-max 65536)
      start_server "$WORK/cap-data" capacity "${CAP_ARGS[@]}" --monitor-interval-s "$CAP_INTERVAL_S" \
        --monitor-checks-in-flight-max "$1" --jobs-in-flight-per-thread "$CAP_JOBS_IN_FLIGHT" \
        --compute-threads "$CAP_COMPUTE_THREADS"
      py cap-setup
      stop "$SERVER_PID"
      for in_flight in "$@"; do
        echo "   window: --monitor-interval-s $CAP_INTERVAL_S --monitor-checks-in-flight-max $in_flight" >&2
        start_server "$WORK/cap-data" capacity "${CAP_ARGS[@]}" --monitor-interval-s "$CAP_INTERVAL_S" \
          --monitor-checks-in-flight-max "$in_flight"
        py cap-window "$in_flight" "$CAP_INTERVAL_S" "$CAP_WARMUP_S" "$CAP_MEASURE_S"
        stop "$SERVER_PID"
      done
      if [ "$CAP_VALIDATE_INTERVAL_S" -gt 0 ]; then
        echo "   window: --monitor-interval-s $CAP_VALIDATE_INTERVAL_S (default in flight)" >&2
        start_server "$WORK/cap-data" capacity "${CAP_ARGS[@]}" --monitor-interval-s "$CAP_VALIDATE_INTERVAL_S"
        py cap-window 32 "$CAP_VALIDATE_INTERVAL_S" "$CAP_VALIDATE_WARMUP_S" "$CAP_VALIDATE_MEASURE_S"
        stop "$SERVER_PID"
      fi
      stop "$LEDGER_PID" ;;
    *) echo "unknown section $section (quiet, active, capacity)" >&2; exit 1 ;;
  esac
done

echo "done in $(( $(date +%s) - T0 )) s" >&2
echo
python3 "$HERE/monitors.py" report
