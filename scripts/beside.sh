#!/usr/bin/env bash
# scripts/beside.sh LOG BACKGROUND... -- FOREGROUND...: runs BACKGROUND with its output in
# LOG while FOREGROUND runs as usual, then waits for BACKGROUND and prints LOG. Fails when
# either failed (FOREGROUND's status first), after both have ended: nothing is cut short.
#
# make test runs the image check (a played campaign that mostly waits on containers and
# the operator's polls) beside the checks that only compute (the oracle, the chart, the
# fuzz smoke, the vectors, the doctests).
set -uo pipefail
log=$1
shift
bg=()
while [ $# -gt 0 ] && [ "$1" != "--" ]; do
    bg+=("$1")
    shift
done
[ $# -gt 0 ] || { echo "usage: scripts/beside.sh LOG BACKGROUND... -- FOREGROUND..." >&2; exit 2; }
shift
mkdir -p "$(dirname "$log")"
"${bg[@]}" >"$log" 2>&1 &
pid=$!
echo "-- beside what follows: ${bg[*]} (log: $log)"
"$@"
fg_rc=$?
echo "-- waiting for: ${bg[*]}"
wait "$pid"
bg_rc=$?
echo "== output of: ${bg[*]}"
cat "$log"
if [ "$bg_rc" -ne 0 ]; then
    echo "*** failed ($bg_rc): ${bg[*]} (log: $log)" >&2
fi
if [ "$fg_rc" -ne 0 ]; then
    exit "$fg_rc"
fi
exit "$bg_rc"
