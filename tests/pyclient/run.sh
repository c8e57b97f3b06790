#!/usr/bin/env bash
# A mainstream generator takes the whole document (issue #42): openapi-python-client (pinned,
# requirements.txt) generates a Python client from docs/openapi.json, then that client — and
# nothing else — drives the README's quick start against the real `xray serve`.
#
#   1. a venv of requirements.txt under the cache directory (made once per digest of that file)
#   2. generation into a temporary directory: it must print nothing but its "Generating" line
#      (no warning, no schema or response left out, ruff found); quickstart.py then checks that
#      every operation of the document is a module of the client with every JSON answer parsed,
#      and every object, enum and union schema a class
#   3. `xray serve --ledger demo` on loopback (free ports, a temporary data dir), a key made with
#      `xray keys create` and the account's webhook secret with `xray accounts webhook-secret`, as
#      the README does (scripts/demo-server.sh)
#   4. quickstart.py: status, a wallet X-Ray (202, an idempotent resend, a batch, the poll until
#      READY read as typed fields), a comparison, the pre-sign scan of `xray ledger demo-tx drain`
#      and of `token-transfer` asked with guards (`xray.scan.v3`), a monitor, the policy, usage, /healthz and the signing keys — asserting the generated
#      classes' fields, never raw JSON
# The server is always stopped and the temporary directory removed (EXIT trap).
#
# Environment (defaults in brackets):
#   XRAY_BIN [$CARGO_TARGET_DIR/release/xray; this script never builds it]
#   XRAY_PYCLIENT_VENV [${XDG_CACHE_HOME:-~/.cache}/xray/pyclient-<digest of requirements.txt>]
#   TEST_TIMEOUT_S [120: the bound of quickstart.py; generation is bounded at 120 s too]
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-/var/tmp/xray-target}
XRAY_BIN=${XRAY_BIN:-$CARGO_TARGET_DIR/release/xray}
TEST_TIMEOUT_S=${TEST_TIMEOUT_S:-120}
started=$(date +%s)

# 1. the pinned generator and the generated client's runtime, in a venv of their own
digest=$(sha256sum "$HERE/requirements.txt" | cut -c1-12)
VENV=${XRAY_PYCLIENT_VENV:-${XDG_CACHE_HOME:-$HOME/.cache}/xray/pyclient-$digest}
if [ ! -f "$VENV/.installed" ]; then
  echo "pyclient: installing tests/pyclient/requirements.txt into $VENV (pip)" >&2
  rm -rf "$VENV"
  mkdir -p "$(dirname "$VENV")"
  python3 -m venv "$VENV" ||
    { echo "python3 -m venv failed (on Debian: apt-get install python3-venv; make deps does)" >&2; exit 1; }
  "$VENV/bin/pip" install --quiet --disable-pip-version-check -r "$HERE/requirements.txt"
  touch "$VENV/.installed"
fi

# shellcheck source=../../scripts/demo-server.sh
. "$ROOT/scripts/demo-server.sh"
WORK=$(mktemp -d "${TMPDIR:-/tmp}/xray-pyclient.XXXXXX")
use_demo_workdir "$XRAY_BIN" "$WORK"

# 2. generate; any line but "Generating …" is a warning (the generator exits 0 with warnings)
mkdir -p "$WORK/gen"
if ! (cd "$WORK/gen" && PATH="$VENV/bin:$PATH" timeout 120 "$VENV/bin/openapi-python-client" generate \
  --path "$ROOT/docs/openapi.json" --output-path xray_api_client --meta none) >"$WORK/gen.log" 2>&1; then
  cat "$WORK/gen.log" >&2
  echo "pyclient: openapi-python-client failed" >&2
  exit 1
fi
if grep -qv '^Generating ' "$WORK/gen.log"; then
  cat "$WORK/gen.log" >&2
  echo "pyclient: openapi-python-client warned (above): the document must generate without a warning" >&2
  exit 1
fi
echo "pyclient: $("$VENV/bin/openapi-python-client" --version) generated a client with no warning"

# 3. the real server, a key and the account's webhook secret, as the README's quick start has them
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
PORT=$(free_port)
ADMIN_PORT=$(free_port)
start_demo_server "$XRAY_BIN" "$WORK/data" "$PORT" "$ADMIN_PORT" "$WORK/serve.out"
ALL=wallet:analyze,wallet:compare,analysis:read,usage:read,transaction:scan,monitor:write,monitor:read,policy:read,policy:write
key_json=$("$XRAY_BIN" keys create --data-dir "$WORK/data" --name pyclient --scopes "$ALL")
export XRAY_API_KEY XRAY_ACCOUNT
XRAY_API_KEY=$(python3 -c 'import json,sys; print(json.loads(sys.argv[1])["key"])' "$key_json")
XRAY_ACCOUNT=$(python3 -c 'import json,sys; print(json.loads(sys.argv[1])["account"])' "$key_json")
"$XRAY_BIN" accounts webhook-secret --data-dir "$WORK/data" --account "$XRAY_ACCOUNT" >/dev/null
export XRAY_BASE_URL="http://127.0.0.1:$PORT"
export XRAY_DEMO_TX_DRAIN XRAY_DEMO_TX_TOKEN
XRAY_DEMO_TX_DRAIN=$("$XRAY_BIN" ledger demo-tx drain)
XRAY_DEMO_TX_TOKEN=$("$XRAY_BIN" ledger demo-tx token-transfer)

# 4. the quick start through the generated client
PYTHONPATH="$WORK/gen" timeout "$TEST_TIMEOUT_S" "$VENV/bin/python" -B "$HERE/quickstart.py" \
  "$ROOT/docs/openapi.json" xray_api_client
echo "pyclient: passed in $(($(date +%s) - started)) s"
