# Shared by the saturation scripts (max.sh, ab.sh): CPU pinning, waiting for a server, one
# closed-loop wrk run with the serving process's CPU time, a request's status and size, medians.
# Sourced, not run: it also makes the run's scratch directory WORK and stops every process
# whose pid is in PIDS when the script exits.

WORK=$(mktemp -d)
PIDS=()
cleanup() {
  for pid in "${PIDS[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$WORK"
}
trap cleanup EXIT

if [ "$(nproc)" -ge 2 ]; then SERVER_CPU="taskset -c 0"; LOAD_CPU="taskset -c 1"; PINNED="server core 0, wrk core 1"
else SERVER_CPU=""; LOAD_CPU=""; PINNED="unpinned (one core: wrk and the server share it)"; fi

# wait_admin DATA_DIR: until the server of DATA_DIR wrote its admin address (`xray keys` reads
# it): the admin listener starts just after the API one, so /healthz can answer first.
wait_admin() {
  for _ in $(seq 1 200); do [ -s "$1/admin.addr" ] && return 0; sleep 0.05; done
  echo "no admin address in $1 after 10 s" >&2; return 1
}

wait_http() { # url
  for _ in $(seq 1 200); do curl -s -o /dev/null "$1" && return 0; sleep 0.05; done
  echo "nothing answers at $1" >&2; return 1
}

# lua FILE METHOD KEY [BODY]: a wrk script sending one fixed request. KEY `@KEYFILE` (one key
# a line): each request takes the next key of the file in turn, so the requests in flight are
# spread evenly over the keys (and their accounts).
lua() {
  {
    echo "wrk.method = \"$2\""
    case $3 in
      @*) echo "local keys = {"; sed 's/.*/  "&",/' "${3#@}"; echo "}"
        echo "local sent = 0"
        echo "request = function()"
        echo "  sent = sent + 1"
        echo "  wrk.headers[\"Authorization\"] = \"Bearer \" .. keys[sent % #keys + 1]"
        echo "  return wrk.format()"
        echo "end" ;;
      ?*) echo "wrk.headers[\"Authorization\"] = \"Bearer $3\"" ;;
    esac
    if [ -n "${4:-}" ]; then
      echo "wrk.headers[\"Content-Type\"] = \"application/json\""
      echo "wrk.body = '$4'"
    fi
  } >"$1"
}

# The process's user and kernel CPU time so far, in clock ticks (/proc/PID/stat fields 14, 15).
cpu_ticks() { awk '{ print $14, $15 }' "/proc/$1/stat"; }
TICK_US=$((1000000 / $(getconf CLK_TCK)))

# wrk_run SCRIPT URL PID: one closed-loop run; prints "req/s requests user_ticks kernel_ticks"
# (the CPU the serving process PID spent during the run).
wrk_run() {
  local out u0 s0 u1 s1
  read -r u0 s0 < <(cpu_ticks "$3")
  out=$($LOAD_CPU wrk -t1 -c"$CONNECTIONS" -d"$DURATION" -s "$1" "$2" 2>&1)
  read -r u1 s1 < <(cpu_ticks "$3")
  echo "$out" | awk -v u=$((u1 - u0)) -v s=$((s1 - s0)) \
    '/requests in/ { n = $1 } /Requests\/sec/ { r = $2 } END { print r, n, u, s }'
}

# cpu_per_request RUNS…: "user/kernel" µs per request over the runs' "req/s requests u s" lines.
cpu_per_request() {
  awk -v tick="$TICK_US" '{ n += $2; u += $3; s += $4 } END { if (n > 0) printf "%.1f/%.1f", u * tick / n, s * tick / n; else print "n/a" }'
}

# probe METHOD URL KEY [BODY]: what one request answers (status, body bytes), with curl (KEY
# `@KEYFILE`: its first key).
probe() {
  local args=(-s -o /dev/null -w '%{http_code} %{size_download}' -X "$1" "$2") key=$3
  [ "${key#@}" = "$key" ] || key=$(head -1 "${key#@}")
  [ -n "$key" ] && args+=(-H "Authorization: Bearer $key")
  [ -n "${4:-}" ] && args+=(-H "Content-Type: application/json" -d "$4")
  curl "${args[@]}"
}

median() { sort -g | awk '{ a[NR] = $1 } END { if (NR % 2) print a[(NR + 1) / 2]; else printf "%.2f\n", (a[NR / 2] + a[NR / 2 + 1]) / 2 }'; }

