#!/usr/bin/env bash
# Saturation harness: every endpoint of `xray serve` driven to its maximum by a closed-loop
# generator (wrk), alternated with the bare reference (examples/bare.rs: hyper + monoio, no
# project code) answering a body of the same size, in one run. Prints, per endpoint, the
# medians of the alternations and their ratio.
#
#   bash loadtest/max.sh            # ROUNDS=3 alternations of DURATION=4s each
#   SMOKE=1 bash loadtest/max.sh    # one 1 s alternation per endpoint (CI: the harness runs)
#   XRAY_BIN_DIR=DIR bash loadtest/max.sh   # DIR/xray, DIR/examples/{bare,openload} as built
#                                           # (copied aside, say): no cargo build
#   ONLY=scan bash loadtest/max.sh  # only the rows whose name matches the regex ONLY
#
# Server and reference run one listener thread pinned to core 0, wrk one thread pinned to
# core 1 (where the machine has two cores; otherwise unpinned, and the figures say so).
# Environment: ROUNDS [3], DURATION [4s], CONNECTIONS [64], PORT_BASE [18400], XRAY_BIN_DIR,
# SCAN_ACCOUNTS [32], SCAN_LATENCY_MS [50], SCAN_RPC_CONNECTIONS [CONNECTIONS],
# SCAN_RPC_OPEN_DURATION_S [30; smoke: 1], ONLY.
# What is measured, on which server:
#   main   `xray serve`, demo ledger, 1 listener + 1 compute thread, queue 1 Mi: healthz,
#          status, usage, READY polls, POST answered by a fresh READY result, POST creating
#          durable work (refresh: true), 401, 403, 404, 429 RATE_LIMITED;
#   slow   `xray serve` over a local JSON-RPC server that answers after 60 s, queue 1 and one
#          job in flight, so jobs stay live (a fresh instance per row): poll of a live job, POST
#          deduplicated onto it, 503 SERVICE_BUSY;
#   scan   the pre-sign scan (POST …/intelligence/transaction; SCAN_ACCOUNTS [32] keys of scope
#          transaction:scan, each of its own account, taken in turn — over a node the lane holds 8 scans of
#          one account at most; rate limit 1 M/s, 1e9 quota units: nothing a run sends is
#          throttled, and the run fails if any scan is answered other than 200) on `main` — its
#          ledger reads on the listener thread, in process (the demo source is memory-resident) — of a malicious
#          (`xray ledger demo-tx drain`) and a benign (`sol-transfer`) transaction, the benign one
#          also asked with `guards: true`, and a sequence of three (`transactions`: sol-transfer,
#          token-transfer, split-drain-2, run in order on one state); and the drain
#          on `scanrpc`, an `xray serve` whose ledger is a local JSON-RPC server answering after
#          SCAN_LATENCY_MS [50] ms (the ceiling there is the lane's 64 upstream requests in
#          flight, two a scan: ~600 scans/s at 50 ms, not the listener).
# Then the open model: examples/openload.rs (constant arrival rate, latency from each request's
# scheduled instant, so no coordinated omission; k6 on one core tops out near 6-8k req/s here,
# far below half of what the server serves) offers 50 % of the measured maximum of status and
# of a READY poll for OPEN_DURATION_S [10; smoke: 1] seconds, to the endpoint and to the
# reference alike, and reports p50 / p99 / p99.9 and the requests it dropped (more than
# OPEN_BACKLOG_MAX [1024] already waiting for a connection); the same for the scan of the
# drain on the demo source, and (endpoint only) on the 50 ms JSON-RPC source at half its
# ceiling for SCAN_RPC_OPEN_DURATION_S, with how many of those scans' simulations the upstream
# answered in time (a read past 1.5 s is answered 200 `timed_out`: such a run fails).
# Bounded: every wrk and openload run is DURATION / OPEN_DURATION_S long; every server is
# stopped on exit.
set -euo pipefail
cd "$(dirname "$0")/.."
export XRAY_LOG=${XRAY_LOG:-warn}
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-/var/tmp/xray-target}
if [ -n "${SMOKE:-}" ]; then ROUNDS=1; DURATION=1s; OPEN_DURATION_S=1; SCAN_RPC_OPEN_DURATION_S=1; fi
SCAN_LATENCY_MS=${SCAN_LATENCY_MS:-50}
SCAN_RPC_OPEN_DURATION_S=${SCAN_RPC_OPEN_DURATION_S:-30}
SCAN_ACCOUNTS=${SCAN_ACCOUNTS:-32}
OPEN_DURATION_S=${OPEN_DURATION_S:-10}
OPEN_BACKLOG_MAX=${OPEN_BACKLOG_MAX:-1024}
ROUNDS=${ROUNDS:-3}
DURATION=${DURATION:-4s}
CONNECTIONS=${CONNECTIONS:-64}
SCAN_RPC_CONNECTIONS=${SCAN_RPC_CONNECTIONS:-$CONNECTIONS}
PORT_BASE=${PORT_BASE:-18400}
ONLY=${ONLY:-}
BIN=${XRAY_BIN_DIR:-$CARGO_TARGET_DIR/release}
. loadtest/lib.sh   # WORK, PIDS (stopped on exit), pinning and the wrk helpers

if ! command -v wrk >/dev/null; then
  echo "wrk not found: installing it (Debian package wrk)" >&2
  sudo=""; [ "$(id -u)" -eq 0 ] || sudo="sudo"
  $sudo apt-get update -qq && DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq wrk >&2
fi
if [ -z "${XRAY_BIN_DIR:-}" ]; then . scripts/cargo-env.sh; cargo build --release --bins --example bare --example openload >&2; fi


declare -A PORT_PID
# xray serve NAME PORT ADMIN_PORT [extra flags…]: starts it, leaves its data dir in $WORK/NAME.
# The access log is off: at saturation it is millions of lines, and the reference server logs
# nothing (it is on by default for operators).
start_xray() {
  local name=$1 port=$2 admin=$3; shift 3
  $SERVER_CPU "$BIN/xray" serve --listen "127.0.0.1:$port" --admin-listen "127.0.0.1:$admin" \
    --data-dir "$WORK/$name" --listener-threads 1 --compute-threads 1 --access-log false \
    "$@" >"$WORK/$name.out" 2>"$WORK/$name.err" &
  PIDS+=($!); PORT_PID[$port]=$!
  wait_http "http://127.0.0.1:$port/healthz"
  wait_admin "$WORK/$name"
}

# new_key DATA_DIR SCOPES RATE BURST: a key's secret (of a new account), made through the admin API.
new_key() {
  "$BIN/xray" keys create --data-dir "$1" --name "load" --scopes "$2" --rate-per-second "$3" --burst "$4" \
    --quota 1000000000 | sed -n 's/.*"key": *"\(svc_live_[^"]*\)".*/\1/p'
}
# new_keys DATA_DIR SCOPES N FILE: N such keys, each of its own account, one a line in FILE;
# prints `@FILE`, which measure and open_row take as "each request the next key in turn".
new_keys() {
  for _ in $(seq 1 "$3"); do new_key "$1" "$2" 1000000 1000000; done >"$4"
  echo "@$4"
}

BARE_PORT=$((PORT_BASE + 9))
REF_PID=""
# The reference answering BYTES, restarted only when the size changes.
reference() {
  if [ "${REF_BYTES:-}" = "$1" ]; then return; fi
  [ -n "$REF_PID" ] && { kill -TERM "$REF_PID" 2>/dev/null || true; wait "$REF_PID" 2>/dev/null || true; }
  $SERVER_CPU "$BIN/examples/bare" --listen "127.0.0.1:$BARE_PORT" --body-bytes "$1" 2>/dev/null &
  REF_PID=$!; PIDS+=("$REF_PID"); REF_BYTES=$1
  wait_http "http://127.0.0.1:$BARE_PORT/"
}

ROWS=()
declare -A MAX_RPS BODY_BYTES
WRONG=()
# measure NAME EXPECTED_STATUS METHOD URL KEY [BODY]: alternates reference and endpoint ROUNDS
# times. A row whose answer is not EXPECTED_STATUS is kept, marked, and fails the run.
measure() {
  local name=$1 expected=$2 method=$3 url=$4 key=$5 body=${6:-}
  [[ "$name" =~ $ONLY ]] || return 0
  local answer; answer=$(probe "$method" "$url" "$key" "$body")
  local status=${answer% *} bytes=${answer#* }
  [ "$status" = "$expected" ] || WRONG+=("$name: $status, expected $expected")
  reference "$(( bytes < 8 ? 8 : bytes ))"
  lua "$WORK/req.lua" "$method" "$key" "$body"
  lua "$WORK/ref.lua" GET ""
  local port=${url#http://127.0.0.1:}; port=${port%%/*}
  local refs=() ends=()
  for _ in $(seq 1 "$ROUNDS"); do
    refs+=("$(wrk_run "$WORK/ref.lua" "http://127.0.0.1:$BARE_PORT/" "$REF_PID")")
    ends+=("$(wrk_run "$WORK/req.lua" "$url" "${PORT_PID[$port]}")")
  done
  local ref end
  ref=$(printf '%s\n' "${refs[@]}" | awk '{ print $1 }' | median)
  end=$(printf '%s\n' "${ends[@]}" | awk '{ print $1 }' | median)
  local ratio; ratio=$(awk -v e="$end" -v r="$ref" 'BEGIN { if (r > 0) printf "%.2f", e / r; else print "n/a" }')
  local ref_cpu end_cpu
  ref_cpu=$(printf '%s\n' "${refs[@]}" | cpu_per_request); end_cpu=$(printf '%s\n' "${ends[@]}" | cpu_per_request)
  MAX_RPS[$name]=$end; BODY_BYTES[$name]=$bytes
  ROWS+=("$(printf '| %-38s | %3s | %7s | %9s | %9s | %5s | %9s | %9s |' "$name" "$status" "$bytes" "$ref" "$end" "$ratio" \
    "$ref_cpu" "$end_cpu")")
  echo "${ROWS[-1]}" >&2
}

MAIN=$PORT_BASE; SLOW=$((PORT_BASE + 2)); RPC=$((PORT_BASE + 4))
API="http://127.0.0.1:$MAIN/v1/developer"
# The per-address limit of failed authentications is lifted (its maximum), or the 401 row
# would block this client's address for the rows after it; one account may hold every job in
# the queue (the durable-POST row queues new jobs of one key).
start_xray main "$MAIN" $((MAIN + 1)) --ledger demo --queue-capacity 1048576 --live-jobs-per-account-max 2097152 --ip-failures-per-s 1000000
MAIN_PID=${PIDS[-1]}
rss_kb() { awk '/^VmRSS/ {print $2}' "/proc/$1/status"; }
# metric_sum NAME ADMIN_PORT PREFIX [MUST [MUST_NOT]]: the sum of the /metrics samples of server
# NAME (data dir $WORK/NAME) whose line starts with PREFIX, contains MUST and not MUST_NOT.
metric_sum() {
  curl -s "http://127.0.0.1:$2/metrics" -H "Authorization: Bearer $(cat "$WORK/$1/admin.token")" |
    awk -v p="$3" -v m="${4:-}" -v x="${5:-}" \
      'index($0, p) == 1 && index($0, m) && !(x != "" && index($0, x)) { n += $NF } END { printf "%d", n }'
}
# Requests the main server answered so far (its own counter, all routes and statuses).
served() { metric_sum main $((MAIN + 1)) xray_http_requests_total; }
RSS_IDLE_KB=$(rss_kb "$MAIN_PID")
ALL=wallet:analyze,wallet:compare,analysis:read,usage:read
KEY=$(new_key "$WORK/main" "$ALL" 1000000 1000000)
READER=$(new_key "$WORK/main" usage:read 1000000 1000000)
SLOWKEY=$(new_key "$WORK/main" "$ALL" 1 1)
WALLET=958wcmLFyUbXiuZF6LjCYXExopYrw1g5SfbySVup8hHQ
PAIR_B=8bPtYYeYuDqCYpk7BrTvoRNtUVAQJGxptTGRe6Y3xnm9
WBODY="{\"wallet\":\"$WALLET\"}"
CBODY="{\"walletA\":\"$WALLET\",\"walletB\":\"$PAIR_B\"}"
# One READY analysis and comparison to poll and to reuse.
AN=$(curl -s -X POST "$API/intelligence/wallet" -H "Authorization: Bearer $KEY" -H 'Content-Type: application/json' \
  -d "$WBODY" | sed -n 's/.*"analysisId":"\([^"]*\)".*/\1/p')
PAIR=$(curl -s -X POST "$API/intelligence/compare" -H "Authorization: Bearer $KEY" -H 'Content-Type: application/json' \
  -d "$CBODY" | sed -n 's/.*"pairId":"\([^"]*\)".*/\1/p')
curl -s -o /dev/null "$API/intelligence/analysis/$AN?wait=10" -H "Authorization: Bearer $KEY"
curl -s -o /dev/null "$API/intelligence/comparison/$PAIR?wait=10" -H "Authorization: Bearer $KEY"

# The slow server: its ledger answers after 60 s, past the RPC client's 15 s timeout, so a job
# stays live through its bounded retries (over a minute): one job in flight, one queued, the
# queue (of one) full. A fresh instance serves each of its rows, so its jobs are still live.
$SERVER_CPU "$BIN/xray" ledger serve --ledger demo --listen "127.0.0.1:$RPC" --latency-ms 60000 2>/dev/null &
PIDS+=($!)
SLOW_PID=""
SLOW_RUN=0
fresh_slow_server() {
  [ -n "$SLOW_PID" ] && { kill -KILL "$SLOW_PID" 2>/dev/null || true; wait "$SLOW_PID" 2>/dev/null || true; }
  SLOW_RUN=$((SLOW_RUN + 1))
  local port=$((SLOW + 10 * SLOW_RUN))
  start_xray "slow$SLOW_RUN" "$port" $((port + 1)) --ledger "rpc:http://127.0.0.1:$RPC" --queue-capacity 1 \
    --jobs-in-flight-per-thread 1
  SLOW_PID=${PIDS[-1]}
  SKEY=$(new_key "$WORK/slow$SLOW_RUN" "$ALL" 1000000 1000000)
  SAPI="http://127.0.0.1:$port/v1/developer"
  LIVE=$(curl -s -X POST "$SAPI/intelligence/wallet" -H "Authorization: Bearer $SKEY" \
    -H 'Content-Type: application/json' -d "$WBODY" | sed -n 's/.*"analysisId":"\([^"]*\)".*/\1/p')
  curl -s -o /dev/null -X POST "$SAPI/intelligence/compare" -H "Authorization: Bearer $SKEY" \
    -H 'Content-Type: application/json' -d "$CBODY"
}

[ -z "$ONLY" ] || echo "only the rows matching /$ONLY/" >&2
echo "reference and endpoint alternated $ROUNDS times, $DURATION each, wrk -t1 -c$CONNECTIONS; $PINNED" >&2
measure "GET /healthz" 200 GET "http://127.0.0.1:$MAIN/healthz" ""
measure "GET status" 200 GET "$API/status" "$KEY"
measure "GET usage" 200 GET "$API/usage" "$KEY"
measure "GET analysis (READY)" 200 GET "$API/intelligence/analysis/$AN" "$KEY"
measure "GET comparison (READY)" 200 GET "$API/intelligence/comparison/$PAIR" "$KEY"
fresh_slow_server
measure "GET analysis (live job)" 200 GET "$SAPI/intelligence/analysis/$LIVE" "$SKEY"
fresh_slow_server
measure "POST wallet, deduplicated onto live" 202 POST "$SAPI/intelligence/wallet" "$SKEY" "$WBODY"
measure "POST wallet, fresh READY reused" 200 POST "$API/intelligence/wallet" "$KEY" "$WBODY"
measure "401 no key" 401 GET "$API/status" ""
measure "403 scope" 403 GET "$API/intelligence/analysis/$AN" "$READER"
measure "404 unknown id" 404 GET "$API/intelligence/analysis/an_CkBqBaVNZQivNt9KpjngFq" "$KEY"
curl -s -o /dev/null "$API/status" -H "Authorization: Bearer $SLOWKEY" # spends its one token
measure "429 RATE_LIMITED" 429 GET "$API/status" "$SLOWKEY"
fresh_slow_server
measure "503 SERVICE_BUSY" 503 POST "$SAPI/intelligence/wallet" "$SKEY" "{\"wallet\":\"$WALLET\",\"refresh\":true}"

# The scan, as many integrators send it: SCAN_ACCOUNTS keys, each of its own account, taken in
# turn, since the lane holds at most 8 scans of one account at once (more are 503 at once) —
# so one account alone could not keep 64 connections busy. The keys may scan only; their rate
# limit and quota are far above what a run sends (~10^5 scans a full run; each 200 charges
# one unit), and every answer that is not 200 is counted from the server's own metrics below,
# so a throttled row cannot pass.
SCANKEY=$(new_keys "$WORK/main" transaction:scan "$SCAN_ACCOUNTS" "$WORK/main-scan.keys")
scan_body() { printf '{"transaction":"%s"}' "$("$BIN/xray" ledger demo-tx "$1")"; }
DRAIN=$(scan_body drain); BENIGN=$(scan_body sol-transfer)
SCAN_PATH=/v1/developer/intelligence/transaction
measure "POST scan (drain: malicious)" 200 POST "http://127.0.0.1:$MAIN$SCAN_PATH" "$SCANKEY" "$DRAIN"
measure "POST scan (sol-transfer: benign)" 200 POST "http://127.0.0.1:$MAIN$SCAN_PATH" "$SCANKEY" "$BENIGN"
# The same transaction asked with guards: its Lighthouse assertions and the guarded transaction.
GUARDED=$(printf '{"transaction":"%s","guards":true}' "$("$BIN/xray" ledger demo-tx sol-transfer)")
measure "POST scan (sol-transfer, guards)" 200 POST "http://127.0.0.1:$MAIN$SCAN_PATH" "$SCANKEY" "$GUARDED"
# Three transactions of the clean wallet run in order on one state (`transactions`: README
# "Sequences and bundles"), one quota unit each: a SOL and a token transfer, then the second
# part of the split drain — three simulations, each on what the ones before it left.
SEQ3=$(printf '{"transactions":["%s","%s","%s"]}' "$("$BIN/xray" ledger demo-tx sol-transfer)" \
  "$("$BIN/xray" ledger demo-tx token-transfer)" "$("$BIN/xray" ledger demo-tx split-drain-2)")
measure "POST scan (sequence of 3)" 200 POST "http://127.0.0.1:$MAIN$SCAN_PATH" "$SCANKEY" "$SEQ3"
# The scan over JSON-RPC: the local server answers every call after SCAN_LATENCY_MS. The lane
# sends at most 64 upstream requests at once and a scan makes two (pre-state and simulation,
# concurrently; its signer's history once a minute per wallet), so 64 connections saturate it
# with a scan waiting ~2 round trips, far from the 1.5 s upstream timeout (a read past it is
# answered 200 `timed_out`, without effects, and cheap to make: the checks below fail the run).
SCAN_RPC=$((PORT_BASE + 5)); SCAN_SRV=$((PORT_BASE + 6))
$SERVER_CPU "$BIN/xray" ledger serve --ledger demo --listen "127.0.0.1:$SCAN_RPC" --latency-ms "$SCAN_LATENCY_MS" \
  2>/dev/null &
PIDS+=($!)
wait_http "http://127.0.0.1:$SCAN_RPC/"
start_xray scanrpc "$SCAN_SRV" $((SCAN_SRV + 1)) --ledger "rpc:http://127.0.0.1:$SCAN_RPC"
RPCKEY=$(new_keys "$WORK/scanrpc" transaction:scan "$SCAN_ACCOUNTS" "$WORK/scanrpc-scan.keys")
SCAN_RPC_ROW="POST scan (drain), rpc +${SCAN_LATENCY_MS} ms"
CONNECTIONS=$SCAN_RPC_CONNECTIONS measure "$SCAN_RPC_ROW, c$SCAN_RPC_CONNECTIONS" 200 POST \
  "http://127.0.0.1:$SCAN_SRV$SCAN_PATH" "$RPCKEY" "$DRAIN"
# open_row NAME URL KEY RATE [BODY [DURATION_S]]: one open-model run (a POST of BODY when
# given, else a GET); prints its table row.
open_row() {
  local auth=() post=()
  case $3 in @*) auth=(--bearers "${3#@}") ;; ?*) auth=(--header "Authorization: Bearer $3") ;; esac
  [ -n "${5:-}" ] && post=(--method POST --header "Content-Type: application/json" --body "$5")
  $LOAD_CPU "$BIN/examples/openload" --url "$2" "${auth[@]}" "${post[@]}" --rate "$4" \
    --duration-s "${6:-$OPEN_DURATION_S}" --connections "$CONNECTIONS" --backlog-max "$OPEN_BACKLOG_MAX" >"$WORK/open.json"
  python3 - "$WORK/open.json" "$1" <<'PY'
import json, sys
m = json.load(open(sys.argv[1]))
print(f"| {sys.argv[2]:<30} | {m['offered_per_s']:>9} | {m['served_per_s']:>9.1f} | "
      f"{m['p50_ms']:.3f} | {m['p99_ms']:.3f} | {m['p999_ms']:.3f} | {m['dropped']} | {m['errors']} |")
PY
}

# open_model NAME BASE PATH KEY [BODY]: half of NAME's measured maximum, against the endpoint
# and against the reference answering the same bytes at the same rate (a GET, as in the
# saturation rows): where the reference drops iterations too, the generator (not the server)
# is the limit.
OPEN_ROWS=()
open_model() {
  [[ "$1" =~ $ONLY ]] || return 0
  local rate; rate=$(awk -v r="${MAX_RPS[$1]}" 'BEGIN { printf "%d", r / 2 }')
  reference "${BODY_BYTES[$1]}"
  OPEN_ROWS+=("$(open_row "bare, ${BODY_BYTES[$1]} bytes" "http://127.0.0.1:$BARE_PORT/" "" "$rate")")
  OPEN_ROWS+=("$(open_row "$1" "$2$3" "$4" "$rate" "${5:-}")")
}
open_model "GET status" "http://127.0.0.1:$MAIN" /v1/developer/status "$KEY"
open_model "GET analysis (READY)" "http://127.0.0.1:$MAIN" "/v1/developer/intelligence/analysis/$AN" "$KEY"
open_model "GET usage" "http://127.0.0.1:$MAIN" /v1/developer/usage "$KEY"
open_model "GET comparison (READY)" "http://127.0.0.1:$MAIN" "/v1/developer/intelligence/comparison/$PAIR" "$KEY"
open_model "POST scan (drain: malicious)" "http://127.0.0.1:$MAIN" "$SCAN_PATH" "$SCANKEY" "$DRAIN"
# Over JSON-RPC, the endpoint alone (its latency is the upstream's: a reference answering in
# µs says nothing), for SCAN_RPC_OPEN_DURATION_S. The upstream's answers are counted from the
# server's metrics around the run: a read that timed out is not counted.
rpc_calls() { metric_sum scanrpc $((SCAN_SRV + 1)) "xray_ledger_calls_total{method=\"$1\",outcome=\"ok\"}"; }
rpc_scans() { metric_sum scanrpc $((SCAN_SRV + 1)) xray_http_requests_total 'route="transaction"'; }
# Only after its saturation row (ONLY may have skipped it): half of that ceiling.
if [ -n "${MAX_RPS["$SCAN_RPC_ROW, c$SCAN_RPC_CONNECTIONS"]:-}" ]; then
  SCANS0=$(rpc_scans); SIMS0=$(rpc_calls simulateTransaction); PRES0=$(rpc_calls getMultipleAccounts)
  SCAN_RPC_RATE=$(awk -v r="${MAX_RPS["$SCAN_RPC_ROW, c$SCAN_RPC_CONNECTIONS"]}" 'BEGIN { r = int(r / 2); print (r < 1 ? 1 : r) }')
  OPEN_ROWS+=("$(open_row "$SCAN_RPC_ROW" "http://127.0.0.1:$SCAN_SRV$SCAN_PATH" "$RPCKEY" "$SCAN_RPC_RATE" "$DRAIN" \
    "$SCAN_RPC_OPEN_DURATION_S")")
  SCANS=$(( $(rpc_scans) - SCANS0 )); SIMS=$(( $(rpc_calls simulateTransaction) - SIMS0 ))
  PRES=$(( $(rpc_calls getMultipleAccounts) - PRES0 ))
  # openload waits for every answer, so each scan of the run made its reads: the pre-state and a
  # simulation — the node's, or (since the rpc source executes in process) the accounts' bytes
  # and their mints, two more getMultipleAccounts — at least two reads a scan either way; a read
  # that timed out is not counted. (Around a wrk run the counts do not match: wrk closes its connections with
  # scans in flight, whose reads still happen; there, every scan answered within 1 s — the
  # server's own histogram — says no read reached the 1.5 s timeout.)
  [ "$PRES" -ge "$SCANS" ] && [ $((PRES + SIMS)) -ge $((2 * SCANS)) ] ||
    WRONG+=("$SCAN_RPC_ROW: of $SCANS scans, $SIMS simulations and $PRES pre-states answered in time")
  within_1s=$(metric_sum scanrpc $((SCAN_SRV + 1)) 'xray_http_request_duration_seconds_bucket{route="transaction"' 'le="1"}')
  [ "$within_1s" -eq "$(rpc_scans)" ] ||
    WRONG+=("scan over rpc: $(( $(rpc_scans) - within_1s )) of $(rpc_scans) scans took over 1 s (reads may have timed out)")
fi
# Every scan of both servers was answered 200 (never 429 or 503, which are cheap to make).
for name in main scanrpc; do
  admin=$((MAIN + 1)); [ "$name" = main ] || admin=$((SCAN_SRV + 1))
  refused=$(metric_sum "$name" "$admin" xray_http_requests_total 'route="transaction"' 'status="200"')
  [ "$refused" -eq 0 ] || WRONG+=("scan on $name: $refused answers other than 200")
done

RSS_LOADED_KB=$(rss_kb "$MAIN_PID"); SERVED=$(served)

# Last: every admitted job is real work for the compute thread, which shares core 0 and would
# still be draining the backlog during any later row.
measure "POST wallet, new durable job" 202 POST "$API/intelligence/wallet" "$KEY" "{\"wallet\":\"$WALLET\",\"refresh\":true}"


echo
echo "Saturation, $(date -u +%Y-%m-%dT%H:%MZ), $(nproc) cores ($(sed -n 's/^model name\s*: //p' /proc/cpuinfo | head -1)),"
echo "release build, one listener thread, $PINNED; medians of $ROUNDS alternations of $DURATION:"
echo
echo "CPU columns: user/kernel µs per request of the serving process over its runs (/proc stat;"
echo "kernel time per request rises as the rate falls, so compare user time)."
echo
echo "| endpoint                               | status | body bytes | bare req/s | req/s | ratio | bare CPU µs | CPU µs |"
echo "|---|---|---|---|---|---|---|---|"
printf '%s\n' "${ROWS[@]}"

echo
echo "Open model (examples/openload.rs, constant arrival rate, ${OPEN_DURATION_S}s, $CONNECTIONS connections,"
echo "latency from each request's scheduled instant; generator $([ -n "$LOAD_CPU" ] && echo "on core 1" || echo unpinned)):"
echo
echo "| server                         | offered/s | served/s | p50 ms | p99 ms | p99.9 ms | dropped | errors |"
echo "|---|---|---|---|---|---|---|---|"
printf '%s\n' "${OPEN_ROWS[@]}"
echo
if [ -n "${SCANS:-}" ]; then
  echo "Scan over JSON-RPC (+${SCAN_LATENCY_MS} ms), open model at ${SCAN_RPC_RATE}/s: $SCANS scans answered; the upstream"
  echo "answered $SIMS simulations and $PRES pre-state reads of them in time."
  echo
fi
echo "Memory of the main server (VmRSS): ${RSS_IDLE_KB} KiB idle after start, ${RSS_LOADED_KB} KiB after serving"
echo "$SERVED requests (every row above but the last; that row's jobs are real work still draining)."
if [ ${#WRONG[@]} -gt 0 ]; then
  printf 'rows that did not get the answer they measure:\n' >&2
  printf '  %s\n' "${WRONG[@]}" >&2
  exit 1
fi
