#!/usr/bin/env bash
# Admissions at saturation on three stores, in one run (issue #14, item 9): one node on the
# embedded RocksDB store, one node on a 3-member etcd cluster, three nodes on that etcd.
# Each admission is a POST that creates durable work (`refresh: true`: no dedup, no reuse),
# made with one of KEYS keys picked at random per request (integrators hold many keys), and
# once more with a single key on three nodes: one key's admissions share one usage record,
# which every admission compares and writes (docs/scaling.md, bound 5).
#
#   bash loadtest/cluster.sh                  # ROUNDS=3 alternations of DURATION=4s each
#   ROUNDS=1 DURATION=2s OPEN_DURATION_S=3 bash loadtest/cluster.sh    # quick look
#
# Closed model: wrk (one thread per node, CONNECTIONS split among the nodes) drives each
# configuration to its maximum; the three configurations alternate ROUNDS times and the
# medians are reported, with each one's ratio to the embedded store. Open model: then
# examples/openload offers half of each configuration's median maximum for OPEN_DURATION_S
# (three openloads at a third each for three nodes) and reports p50 / p99 / p99.9 of the
# admission latency (from each request's scheduled instant) and the requests it dropped.
# Environment: ROUNDS [3], DURATION [4s], CONNECTIONS [48], OPEN_DURATION_S [8], KEYS [16],
# PORT_BASE [18600]. Everything runs on this machine, unpinned (three etcd members, up to
# three nodes and the load generator share its cores: see docs/scaling.md for what that can
# and cannot show); etcd's data is on tmpfs (/dev/shm), so disk fsync latency is not measured.
# Bounded: every run is DURATION / OPEN_DURATION_S long; every process is stopped on exit.
set -euo pipefail
cd "$(dirname "$0")/.."
export XRAY_LOG=${XRAY_LOG:-warn}
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-/var/tmp/xray-target}
ROUNDS=${ROUNDS:-3}
DURATION=${DURATION:-4s}
CONNECTIONS=${CONNECTIONS:-48}
OPEN_DURATION_S=${OPEN_DURATION_S:-8}
KEYS=${KEYS:-16}
PORT_BASE=${PORT_BASE:-18600}
BIN="$CARGO_TARGET_DIR/release"
WORK=$(mktemp -d /dev/shm/xray-cluster.XXXXXX)
PIDS=()
NODE_PIDS=()

cleanup() {
  for pid in "${NODE_PIDS[@]}" "${PIDS[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$WORK"
}
trap cleanup EXIT

for tool in wrk etcd etcdctl; do
  command -v "$tool" >/dev/null || { echo "$tool not found (make deps installs it)" >&2; exit 1; }
done
. scripts/cargo-env.sh
cargo build --release --quiet --bin xray --example openload

wait_http() { # url
  for _ in $(seq 1 200); do curl -s -o /dev/null "$1" && return 0; sleep 0.05; done
  echo "nothing answers at $1" >&2; return 1
}

# --- a 3-member etcd on tmpfs ---
CLUSTER=""; ENDPOINTS=""
for i in 1 2 3; do
  CLUSTER+="${CLUSTER:+,}m$i=http://127.0.0.1:$((PORT_BASE + 10 * i + 1))"
  ENDPOINTS+="${ENDPOINTS:+,}127.0.0.1:$((PORT_BASE + 10 * i))"
done
for i in 1 2 3; do
  client="http://127.0.0.1:$((PORT_BASE + 10 * i))"; peer="http://127.0.0.1:$((PORT_BASE + 10 * i + 1))"
  etcd --name "m$i" --data-dir "$WORK/etcd-m$i" --listen-client-urls "$client" --advertise-client-urls "$client" \
    --listen-peer-urls "$peer" --initial-advertise-peer-urls "$peer" --initial-cluster "$CLUSTER" \
    --initial-cluster-state new --auto-compaction-mode periodic --auto-compaction-retention 5m \
    --quota-backend-bytes 4294967296 --logger zap --log-level error >"$WORK/etcd-m$i.log" 2>&1 &
  PIDS+=($!)
done
for _ in $(seq 1 100); do
  ETCDCTL_API=3 etcdctl --endpoints "$ENDPOINTS" endpoint health >/dev/null 2>&1 && break; sleep 0.1
done
ETCDCTL_API=3 etcdctl --endpoints "$ENDPOINTS" endpoint health >/dev/null

RUN=0
# start_nodes STORE N K: N fresh nodes (ports NODE_PORTS), K keys made on the first (KEY_LIST).
start_nodes() {
  local store=$1 n=$2 k=$3 i port prefix
  RUN=$((RUN + 1)); prefix="bench-$RUN/"; NODE_PORTS=()
  for i in $(seq 1 "$n"); do
    port=$((PORT_BASE + 50 + 2 * i))
    "$BIN/xray" serve --listen "127.0.0.1:$port" --admin-listen "127.0.0.1:$((port + 1))" \
      --data-dir "$WORK/run$RUN-n$i" --store "$store" --etcd-prefix "$prefix" --listener-threads 1 \
      --compute-threads 1 --access-log false --queue-capacity 1048576 \
      --live-jobs-per-account-max 2097152 >"$WORK/run$RUN-n$i.out" 2>"$WORK/run$RUN-n$i.err" &
    NODE_PIDS+=($!); NODE_PORTS+=("$port")
    wait_http "http://127.0.0.1:$port/healthz"
    # The admin listener (which `xray keys` reaches) starts just after the API one.
    for _ in $(seq 1 200); do [ -s "$WORK/run$RUN-n$i/admin.addr" ] && break; sleep 0.05; done
  done
  KEY_LIST=()
  for i in $(seq 1 "$k"); do
    KEY_LIST+=("$("$BIN/xray" keys create --data-dir "$WORK/run$RUN-n1" --name "load$i" --scopes wallet:analyze \
      --rate-per-second 1000000 --burst 1000000 --quota 1000000000 | sed -n 's/.*"key": *"\(svc_live_[^"]*\)".*/\1/p')")
  done
  sleep 1.5 # the key reaches every node (watch), and each counts the live nodes (upkeep round)
}

stop_nodes() {
  for pid in "${NODE_PIDS[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
  for pid in "${NODE_PIDS[@]}"; do wait "$pid" 2>/dev/null || true; done
  NODE_PIDS=()
}

WALLET=DpeZhDXtytSdG8iHfzcWkzDNxV32hHKKv6aCbVkMrW7z
BODY="{\"wallet\":\"$WALLET\",\"refresh\":true}"
# The wrk script: each request with one of KEY_LIST, at random.
lua() {
  printf 'local keys = {'; printf '"Bearer %s",' "${KEY_LIST[@]}"; printf '}\n'
  printf 'wrk.method = "POST"\nwrk.headers["Content-Type"] = "application/json"\nwrk.body = %s\n' "'$BODY'"
  printf 'request = function()\n  wrk.headers["Authorization"] = keys[math.random(#keys)]\n'
  printf '  return wrk.format()\nend\n'
}

# closed_run: every node driven at once; prints "admissions/s non2xx".
closed_run() {
  local per=$((CONNECTIONS / ${#NODE_PORTS[@]})) port outs=()
  lua >"$WORK/post.lua"
  for port in "${NODE_PORTS[@]}"; do
    wrk -t1 -c"$per" -d"$DURATION" -s "$WORK/post.lua" "http://127.0.0.1:$port/v1/developer/intelligence/wallet" \
      >"$WORK/wrk-$port.out" 2>&1 &
    outs+=($!)
  done
  for pid in "${outs[@]}"; do wait "$pid"; done
  cat "$WORK"/wrk-*.out | awk '/Requests\/sec/ { r += $2 } /Non-2xx/ { e += $NF } END { printf "%.1f %d\n", r, e }'
  rm -f "$WORK"/wrk-*.out
}

# open_run RATE: openload at RATE split among the nodes; prints "p50 p99 p999 dropped errors"
# (the worst node's percentiles, dropped and errors summed).
open_run() {
  local rate=$1 per port outs=()
  per=$(awk -v r="$rate" -v n="${#NODE_PORTS[@]}" 'BEGIN { printf "%d", r / n }')
  printf '%s\n' "${KEY_LIST[@]}" >"$WORK/bearers"
  for port in "${NODE_PORTS[@]}"; do
    "$BIN/examples/openload" --url "http://127.0.0.1:$port/v1/developer/intelligence/wallet" --method POST \
      --bearers "$WORK/bearers" --header "Content-Type: application/json" --body "$BODY" \
      --expect-status 202 --rate "$per" --duration-s "$OPEN_DURATION_S" \
      --connections $((CONNECTIONS / ${#NODE_PORTS[@]})) --backlog-max 1024 >"$WORK/open-$port.json" &
    outs+=($!)
  done
  for pid in "${outs[@]}"; do wait "$pid"; done
  python3 - "$WORK"/open-*.json <<'PY'
import json, sys
runs = [json.load(open(p)) for p in sys.argv[1:]]
print(max(r["p50_ms"] for r in runs), max(r["p99_ms"] for r in runs), max(r["p999_ms"] for r in runs),
      sum(r["dropped"] for r in runs), sum(r["errors"] for r in runs))
PY
  rm -f "$WORK"/open-*.json
}

CONFIGS=("1 node, embedded RocksDB|rocksdb|1|$KEYS" "1 node, etcd (3 members)|etcd:$ENDPOINTS|1|$KEYS"
  "3 nodes, etcd (3 members)|etcd:$ENDPOINTS|3|$KEYS" "3 nodes, etcd, one key|etcd:$ENDPOINTS|3|1")
declare -A RATES ERRORS
for round in $(seq 1 "$ROUNDS"); do
  for config in "${CONFIGS[@]}"; do
    IFS='|' read -r name store n k <<<"$config"
    start_nodes "$store" "$n" "$k"
    read -r rps non2xx < <(closed_run)
    stop_nodes
    RATES[$name]+="$rps "; ERRORS[$name]=$(( ${ERRORS[$name]:-0} + non2xx ))
    echo "round $round: $name: $rps admissions/s ($non2xx not 202)" >&2
  done
done

median() { tr ' ' '\n' | sed '/^$/d' | sort -g | awk '{ a[NR] = $1 } END { if (NR % 2) print a[(NR + 1) / 2]; else printf "%.1f\n", (a[NR / 2] + a[NR / 2 + 1]) / 2 }'; }

echo
echo "Admissions, $(date -u +%Y-%m-%dT%H:%MZ), $(nproc) cores ($(sed -n 's/^model name\s*: //p' /proc/cpuinfo | head -1)), unpinned;"
echo "etcd $(etcd --version | sed -n 's/^etcd Version: //p'), 3 members on tmpfs; wrk -c$CONNECTIONS split among the nodes;"
echo "closed model: medians of $ROUNDS alternations of $DURATION; open model: half the median, ${OPEN_DURATION_S}s:"
echo
echo "| configuration ($KEYS keys unless said) | admissions/s (median) | vs embedded | not 202 | p50 ms | p99 ms | p99.9 ms | dropped | errors |"
echo "|---|---|---|---|---|---|---|---|---|"
BASE=""
for config in "${CONFIGS[@]}"; do
  IFS='|' read -r name store n k <<<"$config"
  med=$(echo "${RATES[$name]}" | median)
  [ -z "$BASE" ] && BASE=$med
  start_nodes "$store" "$n" "$k"
  read -r p50 p99 p999 dropped errors < <(open_run "$(awk -v m="$med" 'BEGIN { printf "%d", m / 2 }')")
  stop_nodes
  ratio=$(awk -v m="$med" -v b="$BASE" 'BEGIN { printf "%.2f", m / b }')
  echo "| $name | $med | $ratio | ${ERRORS[$name]} | $p50 | $p99 | $p999 | $dropped | $errors |"
done
