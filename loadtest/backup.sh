#!/usr/bin/env bash
# Backup size and time for a store of ANALYSES (100,000) READY analyses (issue #43): `xray serve`
# on the demo ledger fills its store through the API (POST …/wallet with refresh: true over
# eleven demo wallets, from a few client threads; each is a new durable job and a new stored
# result), then `xray backup` runs while a client keeps polling, then `xray restore` — each
# timed, with the store's, the backup's and the restored directory's sizes, and the backup's
# pace (`--backup-rate-kib-per-s`, default the server's 65,536). Then INCREMENT (1 %) more
# analyses and an incremental backup (`--incremental`): its time and the bytes it wrote.
#
#   bash loadtest/backup.sh                 # ~5 min on a 2-core VM
#   ANALYSES=10000 bash loadtest/backup.sh  # smaller
#
# Environment: ANALYSES [100000], INCREMENT [ANALYSES / 100], CLIENT_THREADS [4], PORT_BASE [18900], XRAY_BIN
# [${CARGO_TARGET_DIR:-/var/tmp/xray-target}/release/xray, built if missing], RATE_KIB_PER_S
# (server default when unset). Everything on 127.0.0.1; every wait bounded; servers stopped on exit.
set -euo pipefail
cd "$(dirname "$0")/.."
ANALYSES=${ANALYSES:-100000}
INCREMENT=${INCREMENT:-$((ANALYSES / 100))}
CLIENT_THREADS=${CLIENT_THREADS:-4}
PORT_BASE=${PORT_BASE:-18900}
XRAY_BIN=${XRAY_BIN:-${CARGO_TARGET_DIR:-/var/tmp/xray-target}/release/xray}
[ -x "$XRAY_BIN" ] || { . scripts/cargo-env.sh; cargo build --release --bin xray >&2; }
. loadtest/lib.sh   # WORK, PIDS (stopped on exit), wait_http

DATA=$WORK/data
rate=(); [ -n "${RATE_KIB_PER_S:-}" ] && rate=(--backup-rate-kib-per-s "$RATE_KIB_PER_S")
XRAY_LOG=warn "$XRAY_BIN" serve --ledger demo --listen "127.0.0.1:$PORT_BASE" --admin-listen "127.0.0.1:$((PORT_BASE + 1))" \
  --data-dir "$DATA" --access-log false --queue-capacity 262144 --live-jobs-per-account-max 262144 "${rate[@]}" \
  >"$WORK/serve.out" 2>"$WORK/serve.err" &
PIDS+=($!)
wait_http "http://127.0.0.1:$PORT_BASE/healthz"
wait_admin "$DATA"
KEY=$("$XRAY_BIN" keys create --data-dir "$DATA" --name fill --scopes wallet:analyze,analysis:read,usage:read \
  --rate-per-second 1000000 --burst 1000000 --quota 1000000000 | sed -n 's/.*"key": *"\(svc_live_[^"]*\)".*/\1/p')

echo "backup: $(nproc) cores ($(sed -n 's/^model name\s*: //p' /proc/cpuinfo | head -1)), $(date -u +%Y-%m-%dT%H:%MZ)" >&2
# fill COUNT: COUNT more READY analyses (until the key's usage has grown by COUNT).
fill() {
python3 - "$PORT_BASE" "$KEY" "$1" "$CLIENT_THREADS" <<'PY'
import http.client, json, sys, threading, time
port, key, total, threads = int(sys.argv[1]), sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
# Demo archetypes that analyze to READY in a few ms (not busy_trader's 1,000 transactions).
wallets = ["DpeZhDXtytSdG8iHfzcWkzDNxV32hHKKv6aCbVkMrW7z", "958wcmLFyUbXiuZF6LjCYXExopYrw1g5SfbySVup8hHQ",
           "5o6v3Td9ytgimfJwPRbuDs1ZtXt2xS6C2ddGQAM6F19w", "DHdEcT9YqynY7Zicaw5Vkd67tigaDoogF82pC9kW9XTq",
           "6SoUSfvAF7ZVfH4uc5to3DeDxsHeyW2xJAkyDbk6trKu", "8bPtYYeYuDqCYpk7BrTvoRNtUVAQJGxptTGRe6Y3xnm9",
           "8LfB2JaaRSEND5pW6j1b1eR5KXkRjNSdAq3HJv59okD2", "5Xa4hF3f3optCeAwtR6wVwcRP89cAGDyoFWHf4Ap2ko9",
           "vaGm75gV244Ayqa2rvHDDXMqnYHNq6ShQFFGdXp3crg", "69ZJ3Facy9HXBZ17fDEmBL6aTF3DVzQzV2RdM762k7eY",
           "DFVgjwHHnhJgpurkcMhMQ5eBm5Sa8i2tLm8G6pYBE16w"]
headers = {"Authorization": f"Bearer {key}", "Content-Type": "application/json"}
def used_now():
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    conn.request("GET", "/v1/developer/usage", headers={"Authorization": f"Bearer {key}"})
    return json.loads(conn.getresponse().read())["data"]["quota"]
used = used_now()["used"] + total
def post(share, offset):
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    for i in range(share):
        body = json.dumps({"wallet": wallets[(offset + i) % len(wallets)], "refresh": True})
        while True:
            conn.request("POST", "/v1/developer/intelligence/wallet", body, headers)
            r = conn.getresponse(); r.read()
            if r.status == 202: break
            if r.status in (429, 503): time.sleep(0.05); continue
            raise SystemExit(f"POST answered {r.status}")
ts = [threading.Thread(target=post, args=(total // threads + (1 if n < total % threads else 0), n)) for n in range(threads)]
for t in ts: t.start()
for t in ts: t.join()
# Then until every one is READY (the usage's `used`), bounded.
deadline = time.time() + 1800
while True:
    quota = used_now()
    if quota["used"] >= used and quota["reserved"] == 0: break
    if time.time() > deadline: raise SystemExit(f"not all READY within 30 min: {quota}")
    time.sleep(0.5)
PY
}
t0=$(date +%s.%N)
fill "$ANALYSES"
t1=$(date +%s.%N)
store_bytes=$(du -sb "$DATA/db" | cut -f1)
# A client polls a READY analysis throughout the backup (the server keeps serving): its count
# of answers and of anything but 200.
AN=$(curl -s -X POST "http://127.0.0.1:$PORT_BASE/v1/developer/intelligence/wallet" -H "Authorization: Bearer $KEY" \
  -H 'Content-Type: application/json' -d '{"wallet":"DpeZhDXtytSdG8iHfzcWkzDNxV32hHKKv6aCbVkMrW7z"}' |
  sed -n 's/.*"analysisId":"\([^"]*\)".*/\1/p')
( ok=0; bad=0; while [ ! -e "$WORK/stop" ]; do
    s=$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$PORT_BASE/v1/developer/intelligence/analysis/$AN" \
      -H "Authorization: Bearer $KEY"); if [ "$s" = 200 ]; then ok=$((ok + 1)); else bad=$((bad + 1)); fi
  done; echo "$ok $bad" >"$WORK/polls" ) &
POLLER=$!
t2=$(date +%s.%N)
"$XRAY_BIN" backup --data-dir "$DATA" --to "$WORK/backup" >"$WORK/backup.json"
t3=$(date +%s.%N)
touch "$WORK/stop"; wait "$POLLER"
"$XRAY_BIN" restore --from "$WORK/backup" --data-dir "$WORK/restored" >"$WORK/restore.json"
t4=$(date +%s.%N)
read -r polls_ok polls_bad <"$WORK/polls"
fill "$INCREMENT"
t5=$(date +%s.%N)
"$XRAY_BIN" backup --data-dir "$DATA" --incremental --to "$WORK/backup-2" >"$WORK/backup-2.json"
t6=$(date +%s.%N)
python3 - "$WORK" "$ANALYSES" "$store_bytes" "$t0" "$t1" "$t2" "$t3" "$t4" "$polls_ok" "$polls_bad" "$t5" "$t6" "$INCREMENT" <<'PY'
import json, os, sys
work, n, store = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
t0, t1, t2, t3, t4 = map(float, sys.argv[4:9])
ok, bad = int(sys.argv[9]), int(sys.argv[10])
t5, t6, more = float(sys.argv[11]), float(sys.argv[12]), int(sys.argv[13])
second = json.load(open(f"{work}/backup-2.json"))
backup = json.load(open(f"{work}/backup.json"))
manifest = json.load(open(f"{work}/backup/manifest.json"))
def du(path):
    return sum(os.path.getsize(os.path.join(d, f)) for d, _, fs in os.walk(path) for f in fs)
print(f"| analyses READY in the store | {n:,} (filled in {t1 - t0:.1f} s) |")
print(f"| store (`db/`) on disk | {store / 2**20:.1f} MiB |")
print(f"| backup: files, bytes | {len(manifest['files'])}, {manifest['totalBytes'] / 2**20:.1f} MiB |")
print(f"| `xray backup` (checkpoint, paced copy, digests, manifest) | {t3 - t2:.2f} s ({manifest['totalBytes'] / 2**20 / (t3 - t2):.1f} MiB/s) |")
print(f"| `xray restore` (every digest checked, then copied) | {t4 - t3:.2f} s, {du(work + '/restored') / 2**20:.1f} MiB |")
print(f"| polls of a READY analysis during the backup | {ok} answered 200, {bad} otherwise |")
written = second["bytesTotal"] - second["bytesShared"]
print(f"| then {more:,} more analyses; `xray backup --incremental` | {t6 - t5:.2f} s: {second['bytesTotal'] / 2**20:.1f} MiB "
      f"held, {second['bytesShared'] / 2**20:.1f} MiB linked from the first, {written / 2**20:.1f} MiB written |")
assert backup["state"] == "DONE" and bad == 0, (backup, bad)
assert second["state"] == "DONE" and second["base"] == f"{work}/backup", second
PY
