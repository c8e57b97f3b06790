#!/usr/bin/env bash
# Tests of the TypeScript client against the real server (Node's own test runner).
#
#   1. npm ci (only when node_modules is missing or package-lock.json changed since it ran)
#   2. the generated types are current: openapi-typescript regenerates ../../docs/openapi.json
#      into a temporary file, which must equal the committed src/schema.d.ts
#   3. tsc builds src/ into dist/
#   4. `xray serve --ledger demo` on loopback (free ports, a temporary data dir), keys made
#      through its admin listener (scripts/demo-server.sh: start_demo_server, demo_key), then `node --test test/`;
#      the server is always stopped and the temporary directory removed (EXIT trap)
#
# The binary: $XRAY_BIN, else ${CARGO_TARGET_DIR:-/var/tmp/xray-target}/release/xray (this
# script never builds it). Bounded: the tests time out after TEST_TIMEOUT_S (default 180).
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
cd "$HERE"

XRAY_BIN=${XRAY_BIN:-${CARGO_TARGET_DIR:-/var/tmp/xray-target}/release/xray}
TEST_TIMEOUT_S=${TEST_TIMEOUT_S:-180}

# 1. dependencies, pinned by package-lock.json
lock_sum=$(sha256sum package-lock.json | cut -d' ' -f1)
if [ ! -d node_modules ] || [ "$(cat node_modules/.lock-sum 2>/dev/null)" != "$lock_sum" ]; then
  npm ci --no-audit --no-fund --loglevel=error
  echo "$lock_sum" >node_modules/.lock-sum
fi

# 2. the committed types are those the OpenAPI document generates today
fresh=$(mktemp "${TMPDIR:-/tmp}/xray-schema.XXXXXX.d.ts")
bash gen-types.sh "$fresh"
if ! cmp -s "$fresh" src/schema.d.ts; then
  diff -u src/schema.d.ts "$fresh" | head -40 >&2 || true
  rm -f "$fresh"
  echo "src/schema.d.ts is stale: run 'npm run generate' in clients/ts and commit it" >&2
  exit 1
fi
rm -f "$fresh"
echo "types: src/schema.d.ts is current with docs/openapi.json"

# 3. build
npm run --silent build
npx --no-install tsc -p tsconfig.test.json

# 4. the real server
source "$ROOT/scripts/demo-server.sh"
WORK=$(mktemp -d "${TMPDIR:-/tmp}/xray-ts-client.XXXXXX")
use_demo_workdir "$XRAY_BIN" "$WORK"
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
PORT=$(free_port)
ADMIN_PORT=$(free_port)
start_demo_server "$XRAY_BIN" "$WORK/data" "$PORT" "$ADMIN_PORT" "$WORK/serve.out" \
  --webhook-allow-hosts 127.0.0.1 --freshness-window-s 300

ALL=wallet:analyze,wallet:compare,analysis:read,usage:read,transaction:scan,monitor:write,monitor:read,policy:read,policy:write
key_json() { # BIN DATA NAME SCOPES [extra keys-create options…]
  "$1" keys create --data-dir "$2" --name "$3" --scopes "$4" "${@:5}"
}
main_json=$(key_json "$XRAY_BIN" "$WORK/data" ts-client "$ALL" --rate-per-second 100000 --burst 100000 --quota 1000000)
export XRAY_API_KEY
XRAY_API_KEY=$(python3 -c 'import json,sys; print(json.loads(sys.argv[1])["key"])' "$main_json")
account=$(python3 -c 'import json,sys; print(json.loads(sys.argv[1])["account"])' "$main_json")
export XRAY_WEBHOOK_SECRET
XRAY_WEBHOOK_SECRET=$("$XRAY_BIN" accounts webhook-secret --data-dir "$WORK/data" --account "$account" |
  python3 -c 'import json, sys; print(json.load(sys.stdin)["secret"])')
# a key that may read usage only (the 403 test), and one with a bucket of one token (the 429 retry test)
export XRAY_NARROW_KEY XRAY_SLOW_KEY
XRAY_NARROW_KEY=$(demo_key "$XRAY_BIN" "$WORK/data" ts-narrow usage:read)
XRAY_SLOW_KEY=$(key_json "$XRAY_BIN" "$WORK/data" ts-slow usage:read --rate-per-second 1 --burst 1 |
  python3 -c 'import json, sys; print(json.load(sys.stdin)["key"])')
export XRAY_BASE_URL="http://127.0.0.1:$PORT"
# base64 transactions of the demo ledger for the scan tests
export XRAY_DEMO_TX_APPROVE XRAY_DEMO_TX_SOL XRAY_DEMO_TX_REVOKE XRAY_DEMO_TX_SPLIT_1 XRAY_DEMO_TX_SPLIT_2
XRAY_DEMO_TX_APPROVE=$("$XRAY_BIN" ledger demo-tx approve)
XRAY_DEMO_TX_SOL=$("$XRAY_BIN" ledger demo-tx sol-transfer)
# another wallet's (open_delegation's): a sequence with it and the clean wallet's has no one signer
XRAY_DEMO_TX_REVOKE=$("$XRAY_BIN" ledger demo-tx revoke)
# a drain split over two transactions (a sequence scan's whole shows it, neither alone does)
XRAY_DEMO_TX_SPLIT_1=$("$XRAY_BIN" ledger demo-tx split-drain-1)
XRAY_DEMO_TX_SPLIT_2=$("$XRAY_BIN" ledger demo-tx split-drain-2)

timeout "$TEST_TIMEOUT_S" node --test --test-reporter=spec build-test/test/*.test.js
