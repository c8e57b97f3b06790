#!/usr/bin/env bash
# One step of `make test`, timed: runs the command, then records its wall-clock seconds and exit
# status in the run's step table; `step.sh --begin` starts a table, `step.sh --summary` prints
# it (the README's Tests section quotes such a table). The table lives beside cargo's target
# directory so a clean clone leaves no file behind in the tree.
# Exits with the command's status, so `make` stops at the first failing step as before.
#
# `step.sh --beside LABEL CMD…` starts a step in the background, its output kept aside, for a
# step that mostly waits (timers, a slow node) next to one that keeps the cores busy;
# `step.sh --join` waits for every such step, prints its output, records its row and fails if
# it failed. Only steps with no latency threshold go beside another: they share the cores.
set -uo pipefail
table="${CARGO_TARGET_DIR:-/var/tmp/xray-target}/make-test-steps.tsv"
beside="$table.beside"
# Ends what a previous run left beside (its make stopped at a failing step): each such step is
# a process group of its own, its id in <n>.pgid.
stop_beside() {
  for pgid_file in "$beside"/*.pgid; do
    [ -e "$pgid_file" ] && kill -- "-$(cat "$pgid_file")" 2>/dev/null
  done
  rm -rf "$beside"
}
case "${1:-}" in
  --begin) stop_beside; mkdir -p "$(dirname "$table")" && : >"$table" && date +%s >"$table.start"; exit 0 ;;
  --beside)
    label=$2
    shift 2
    mkdir -p "$beside"
    n=$(find "$beside" -name '*.label' | wc -l)
    printf '%s' "$label" >"$beside/$n.label"
    # The wrapper writes the step's seconds and status when it ends (whole, through a rename);
    # --join reads them. setsid: a group of its own, so --begin or --join can end all of it.
    setsid bash -c 't0=$(date +%s); "$@" >"$0.out" 2>&1; status=$?
      printf "%d\t%d\n" "$(( $(date +%s) - t0 ))" "$status" >"$0.done.tmp" && mv "$0.done.tmp" "$0.done"' \
      "$beside/$n" "$@" </dev/null &
    echo $! >"$beside/$n.pgid"
    echo "== step started beside the next ones: $label" >&2
    exit 0 ;;
  --join)
    failed=0
    for label_file in "$beside"/*.label; do
      [ -e "$label_file" ] || continue
      n=$(basename "$label_file" .label)
      # Bounded: a step beside another ends within its own limits; 15 minutes is far past them.
      for _ in $(seq 1 9000); do [ -e "$beside/$n.done" ] && break; sleep 0.1; done
      label="$(cat "$label_file") (beside)"
      cat "$beside/$n.out" >&2
      if [ -e "$beside/$n.done" ]; then
        IFS=$'\t' read -r seconds status <"$beside/$n.done"
      else
        kill -- "-$(cat "$beside/$n.pgid")" 2>/dev/null
        seconds=900 status=124
      fi
      printf '%d\t%d\t%s\n' "$seconds" "$status" "$label" >>"$table"
      echo "== step done: $label ($seconds s, exit $status)" >&2
      [ "$status" -eq 0 ] || failed=1
      rm -f "$label_file" "$beside/$n.out" "$beside/$n.done" "$beside/$n.pgid"
    done
    exit "$failed" ;;
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
