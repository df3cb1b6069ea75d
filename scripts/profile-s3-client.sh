#!/usr/bin/env bash
# Where the client's CPU goes per request, on each S3 client (issue 19): 64 KiB GET and PUT
# of x25519 objects at 8 workers through `pqbench bench-store`, the server (`pqbench
# serve-s3`) pinned to CPU 1 and the client to CPU 0, nothing else running.
#
#   usage: scripts/profile-s3-client.sh PQBENCH [PQBENCH_ALLOC_COUNT] [OUT_DIR]
#     PQBENCH              a release build (cargo build --release)
#     PQBENCH_ALLOC_COUNT  optional: a build with `--features alloc-count` (allocations
#                          per request), e.g. cargo build --release --features alloc-count
#                          --target-dir target/alloc-count
#     OUT_DIR              where the flame data go (default: a new temporary directory)
#
# Per client and operation it measures
#   - user and system CPU per logical request (bench-store's getrusage split);
#   - syscalls per logical request: `perf stat -e raw_syscalls:sys_enter` over two runs
#     that differ only in the number of requests (cleanup off), the difference divided by
#     the difference in logical requests (the cell and its S3-only control make the same
#     S3 calls);
#   - flame data: `perf record --call-graph dwarf`, folded stacks in OUT_DIR/*.folded
#     (feed them to any flame-graph renderer), and the self time by component;
#   - allocations per logical request, with the alloc-count build.
# Prints one markdown table. About 4 minutes.
set -euo pipefail
B=$(realpath "$1"); A=${2:+$(realpath "$2")}
OUT=${3:-$(mktemp -d)}; mkdir -p "$OUT"
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
command -v perf >/dev/null || { echo "needs perf (Debian: linux-perf)" >&2; exit 2; }
[ "$(nproc)" -ge 2 ] || { echo "needs 2 CPUs (server on CPU 1, client on CPU 0)" >&2; exit 2; }
T=$(mktemp -d); SPID=
trap '[ -n "$SPID" ] && kill "$SPID" 2>/dev/null; rm -rf "$T"' EXIT
taskset -c 1 "$B" serve-s3 --dir "$T/s3" --port 0 --bucket pqbench-bench --env-file "$T/env" >/dev/null 2>&1 &
SPID=$!
for _ in $(seq 50); do [ -s "$T/env" ] && break; sleep 0.2; done
. "$T/env"
# bench-store on CPU 0: one mode, one operation, 8 workers, one client, cleanup off.
bs() { # binary op client requests extra...
  local bin=$1 op=$2 cl=$3 n=$4; shift 4
  taskset -c 0 "$bin" bench-store --endpoint "$AWS_ENDPOINT_URL" --modes x25519 --ops "$op" \
    --concurrency 8 --rounds 1 --s3-client "$cl" --requests "$n" --no-cleanup "$@"
}
for cl in aws-sdk lean; do for op in get put; do
  echo "$cl $op" >&2
  for n in 2000 6000; do
    perf stat -x, -e raw_syscalls:sys_enter -o "$OUT/syscalls-$cl-$op-$n.csv" -- \
      taskset -c 0 "$B" bench-store --endpoint "$AWS_ENDPOINT_URL" --modes x25519 --ops "$op" \
      --concurrency 8 --rounds 1 --s3-client "$cl" --requests "$n" --no-cleanup \
      --json "$OUT/bs-$cl-$op-$n.json" >/dev/null 2>&1
  done
  perf record -q -F 997 --call-graph dwarf,16384 -o "$OUT/perf-$cl-$op.data" -- \
    taskset -c 0 "$B" bench-store --endpoint "$AWS_ENDPOINT_URL" --modes x25519 --ops "$op" \
    --concurrency 8 --rounds 1 --s3-client "$cl" --requests 3000 --no-cleanup >/dev/null 2>&1
  perf script -i "$OUT/perf-$cl-$op.data" 2>/dev/null \
    | python3 "$HERE/fold-perf.py" > "$OUT/$cl-$op.folded"
  rm -f "$OUT/perf-$cl-$op.data"
  if [ -n "$A" ]; then
    bs "$A" "$op" "$cl" 2000 --json "$OUT/alloc-$cl-$op.json" >/dev/null 2>&1
  fi
done; done
python3 "$HERE/fold-perf.py" --summary "$OUT"
echo "flame data (folded stacks): $OUT" >&2
