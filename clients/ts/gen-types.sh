#!/usr/bin/env bash
# Generates the API types from the OpenAPI document into $1 (default src/schema.d.ts): the one
# place the generator's options live (run-tests.sh regenerates with it to check the committed file).
#   --default-non-nullable false: a field with a `default` stays optional (request bodies)
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
out=${1:-$HERE/src/schema.d.ts}
"$HERE/node_modules/.bin/openapi-typescript" "$HERE/../../docs/openapi.json" \
  --default-non-nullable false --output "$out" >/dev/null
