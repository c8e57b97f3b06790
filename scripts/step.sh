#!/usr/bin/env bash
# One step of `make test`, timed: runs the command, then records its wall-clock seconds and exit
# status in the run's step table; `step.sh --begin` starts a table, `step.sh --summary` prints
# it (the README's Tests section quotes such a table). The table lives beside cargo's target
# directory so a clean clone leaves no file behind in the tree.
# Exits with the command's status, so `make` stops at the first failing step as before.
set -uo pipefail
table="${CARGO_TARGET_DIR:-/var/tmp/xray-target}/make-test-steps.tsv"
case "${1:-}" in
  --begin) mkdir -p "$(dirname "$table")" && : >"$table" && date +%s >"$table.start"; exit 0 ;;
  --summary)
    start=$(cat "$table.start" 2>/dev/null || date +%s)
    echo "== make test, step by step (wall-clock seconds on $(nproc) cores)"
    awk -F'\t' '{ printf "%6d s  %s%s\n", $1, $3, ($2 == 0 ? "" : "  (exit " $2 ")") }' "$table"
    echo "$(( $(date +%s) - start )) s in all"
    exit 0 ;;
esac
label=$1
shift
t0=$(date +%s)
"$@"
status=$?
printf '%d\t%d\t%s\n' "$(( $(date +%s) - t0 ))" "$status" "$label" >>"$table"
echo "== step done: $label ($(( $(date +%s) - t0 )) s, exit $status)" >&2
exit "$status"
