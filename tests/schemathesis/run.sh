#!/usr/bin/env bash
# Property-based contract test: schemathesis 4 (every phase — examples, coverage, fuzzing,
# stateful — and every check) against the real `xray serve` (demo ledger, a fresh data dir) on
# loopback, driven by docs/openapi.json. Exits non-zero on any failure; prints the seed, so a
# failure replays with SEED=<seed>.
#
# Bounded: MAX_EXAMPLES per operation and phase (about 1,000 cases in all at the default) and
# TIME_LIMIT_S for the whole run (about 20 s here; the limit is a guard, not the plan).
#
# Environment (defaults in brackets):
#   MAX_EXAMPLES [100]  TIME_LIMIT_S [300]  SEED [random]  PORT [18095]  ADMIN_PORT [18096]
#   XRAY_BIN [$CARGO_TARGET_DIR/release/xray, built by `cargo test --release --all-targets`]
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
MAX_EXAMPLES=${MAX_EXAMPLES:-100}
TIME_LIMIT_S=${TIME_LIMIT_S:-300}
PORT=${PORT:-18095}
ADMIN_PORT=${ADMIN_PORT:-18096}
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-/var/tmp/xray-target}
XRAY_BIN=${XRAY_BIN:-$CARGO_TARGET_DIR/release/xray}
WORK=$(mktemp -d)

if ! command -v st >/dev/null || ! st --version 2>/dev/null | grep -q ' 4\.'; then
  echo "schemathesis 4 not found: installing it (pip)" >&2
  pip install --quiet 'schemathesis>=4,<5'
fi
[ -x "$XRAY_BIN" ] || { echo "no xray binary at $XRAY_BIN (run: cargo build --release)" >&2; exit 1; }

SERVER_PID=""
finish() {
  if [ -n "$SERVER_PID" ]; then
    kill -TERM "$SERVER_PID" 2>/dev/null || true
    wait "$SERVER_PID" 2>/dev/null || true
  fi
  rm -rf "$WORK"
}
trap finish EXIT

XRAY_LOG=warn "$XRAY_BIN" serve --ledger demo --data-dir "$WORK/data" --listen "127.0.0.1:$PORT" \
  --admin-listen "127.0.0.1:$ADMIN_PORT" --access-log false >"$WORK/serve.out" 2>&1 &
SERVER_PID=$!
for _ in $(seq 1 100); do
  curl -fsS -o /dev/null "http://127.0.0.1:$PORT/healthz" 2>/dev/null && break
  sleep 0.1
done
# Limits far above what the run sends: it tests the contract, not the 429 path.
API_KEY=$("$XRAY_BIN" keys create --data-dir "$WORK/data" --name schemathesis \
  --scopes wallet:analyze,wallet:compare,analysis:read,usage:read \
  --rate-per-second 100000 --burst 100000 --quota 1000000 |
  python3 -c 'import json, sys; print(json.load(sys.stdin)["key"])')

cd "$WORK"
seed_args=()
[ -n "${SEED:-}" ] && seed_args=(--seed "$SEED")
PYTHONPATH="$HERE" SCHEMATHESIS_HOOKS=hooks timeout "$TIME_LIMIT_S" \
  st --config-file "$HERE/schemathesis.toml" run "$ROOT/docs/openapi.json" \
  --url "http://127.0.0.1:$PORT" -H "Authorization: Bearer $API_KEY" \
  --phases examples,coverage,fuzzing,stateful --checks all --max-examples "$MAX_EXAMPLES" \
  --workers 1 --request-timeout 10 --generation-database none --no-color "${seed_args[@]}"
