#!/usr/bin/env bash
# Two builds of `xray serve` alternated at saturation on the hot rows, in one run: how much a
# build setting costs (e.g. `overflow-checks`), as the ratio of build B to build A per row —
# the medians of ROUNDS alternations of DURATION each, closed loop (wrk), server pinned to
# core 0 and wrk to core 1 as in max.sh. Both servers run the same flags on the demo ledger;
# only the one being measured is loaded.
#
#   bash loadtest/ab.sh A_XRAY_BINARY B_XRAY_BINARY
#
# Environment: ROUNDS [5], DURATION [4s], CONNECTIONS [64], PORT_BASE [18600].
# Bounded: every wrk run is DURATION long; both servers are stopped on exit.
set -euo pipefail
cd "$(dirname "$0")/.."
[ $# -eq 2 ] || { echo "usage: $0 A_XRAY_BINARY B_XRAY_BINARY" >&2; exit 2; }
A_BIN=$1; B_BIN=$2
export XRAY_LOG=${XRAY_LOG:-warn}
ROUNDS=${ROUNDS:-5}
DURATION=${DURATION:-4s}
CONNECTIONS=${CONNECTIONS:-64}
PORT_BASE=${PORT_BASE:-18600}
command -v wrk >/dev/null || { echo "wrk not found (Debian package wrk; loadtest/max.sh installs it)" >&2; exit 1; }
. loadtest/lib.sh   # WORK, PIDS (stopped on exit), pinning and the wrk helpers

WALLET=958wcmLFyUbXiuZF6LjCYXExopYrw1g5SfbySVup8hHQ
WBODY="{\"wallet\":\"$WALLET\"}"
ALL=wallet:analyze,wallet:compare,analysis:read,usage:read
declare -A PID KEY SLOWKEY AN API

# serve NAME BINARY PORT: one server with its keys and a READY analysis to poll.
serve() {
  local name=$1 bin=$2 port=$3
  $SERVER_CPU "$bin" serve --listen "127.0.0.1:$port" --admin-listen "127.0.0.1:$((port + 1))" \
    --data-dir "$WORK/$name" --listener-threads 1 --compute-threads 1 --access-log false --ledger demo \
    --queue-capacity 1048576 --live-jobs-per-account-max 2097152 >"$WORK/$name.out" 2>"$WORK/$name.err" &
  PIDS+=($!); PID[$name]=$!
  wait_http "http://127.0.0.1:$port/healthz"
  wait_admin "$WORK/$name"
  local make=("$bin" keys create --data-dir "$WORK/$name" --name load --scopes "$ALL" --quota 1000000000)
  KEY[$name]=$("${make[@]}" --rate-per-second 1000000 --burst 1000000 | sed -n 's/.*"key": *"\(svc_live_[^"]*\)".*/\1/p')
  SLOWKEY[$name]=$("${make[@]}" --rate-per-second 1 --burst 1 | sed -n 's/.*"key": *"\(svc_live_[^"]*\)".*/\1/p')
  API[$name]="http://127.0.0.1:$port/v1/developer"
  AN[$name]=$(curl -s -X POST "${API[$name]}/intelligence/wallet" -H "Authorization: Bearer ${KEY[$name]}" \
    -H 'Content-Type: application/json' -d "$WBODY" | sed -n 's/.*"analysisId":"\([^"]*\)".*/\1/p')
  curl -s -o /dev/null "${API[$name]}/intelligence/analysis/${AN[$name]}?wait=10" -H "Authorization: Bearer ${KEY[$name]}"
  curl -s -o /dev/null "${API[$name]}/status" -H "Authorization: Bearer ${SLOWKEY[$name]}" # spends its one token
}
serve a "$A_BIN" "$PORT_BASE"
serve b "$B_BIN" $((PORT_BASE + 2))

ROWS=()
# row NAME METHOD PATH KEY_KIND [BODY]: A and B alternated ROUNDS times.
row() {
  local name=$1 method=$2 path=$3 kind=$4 body=${5:-}
  local a=() b=()
  for side in a b; do
    local key; if [ "$kind" = slow ]; then key=${SLOWKEY[$side]}; else key=${KEY[$side]}; fi
    lua "$WORK/$side.lua" "$method" "$key" "$body"
  done
  for _ in $(seq 1 "$ROUNDS"); do
    a+=("$(wrk_run "$WORK/a.lua" "${API[a]}${path//@AN@/${AN[a]}}" "${PID[a]}")")
    b+=("$(wrk_run "$WORK/b.lua" "${API[b]}${path//@AN@/${AN[b]}}" "${PID[b]}")")
  done
  local ma mb
  ma=$(printf '%s\n' "${a[@]}" | awk '{ print $1 }' | median)
  mb=$(printf '%s\n' "${b[@]}" | awk '{ print $1 }' | median)
  ROWS+=("$(printf '| %-32s | %9s | %9s | %5s | %9s | %9s |' "$name" "$ma" "$mb" \
    "$(awk -v a="$ma" -v b="$mb" 'BEGIN { printf "%.3f", b / a }')" \
    "$(printf '%s\n' "${a[@]}" | cpu_per_request)" "$(printf '%s\n' "${b[@]}" | cpu_per_request)")")
  echo "${ROWS[-1]}" >&2
}

echo "A: $A_BIN; B: $B_BIN; alternated $ROUNDS times, $DURATION each, wrk -t1 -c$CONNECTIONS; $PINNED" >&2
row "GET status" GET /status key
row "GET analysis (READY)" GET "/intelligence/analysis/@AN@" key
row "POST wallet, fresh READY reused" POST /intelligence/wallet key "$WBODY"
row "429 RATE_LIMITED" GET /status slow
# Last: each admitted job is real work for the compute thread on core 0.
row "POST wallet, new durable job" POST /intelligence/wallet key "{\"wallet\":\"$WALLET\",\"refresh\":true}"

echo
echo "A/B at saturation, $(date -u +%Y-%m-%dT%H:%MZ), $(nproc) cores ($(sed -n 's/^model name\s*: //p' /proc/cpuinfo | head -1)),"
echo "one listener thread, $PINNED; medians of $ROUNDS alternations of $DURATION; B/A = B's req/s over A's:"
echo
echo "| endpoint                         | A req/s   | B req/s   | B/A   | A CPU µs  | B CPU µs  |"
echo "|---|---|---|---|---|---|"
printf '%s\n' "${ROWS[@]}"
