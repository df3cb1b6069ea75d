#!/usr/bin/env bash
# Coverage-guided fuzzing of pqbench's parsers and readers (fuzz/, cargo fuzz + libFuzzer).
#
#   scripts/fuzz.sh [SECONDS] [TARGET...]
#
# Builds every target, replays every saved crash in fuzz/regressions/<target>/ (each must
# now pass), then fuzzes each TARGET (default: all) for SECONDS (default 30) from the
# committed seeds (fuzz/corpus/<target>/) and the working corpus it grows in
# target/fuzz-corpus/<target>/. Prints executions, coverage and corpus size per target.
# A crash, a timeout or a leak stops the run with the input's path and how to replay it;
# copy the input into fuzz/regressions/<target>/ once the defect is fixed.
#
# Environment: FUZZ_SANITIZER (default `none`: every workspace crate forbids unsafe code and
# cargo fuzz does not instrument the C of AWS-LC, so AddressSanitizer finds little here and
# costs ~3x the executions; `address` for a deeper run), FUZZ_JOBS (parallel fuzzing
# processes per target, default 1), FUZZ_PARALLEL (targets fuzzed at once, default 1; the
# smoke runs two, one per core), FUZZ_BUILD_ONLY (set: build the targets and stop; .ci/run
# builds the smoke's in the background), FUZZ_TABLE (where the table goes, default
# target/fuzz-table.txt; two runs side by side need two), FUZZ_REPORT (a file to append it to),
# FUZZ_SEED (libFuzzer's random seed; unset, each run draws one and explores anew, which a
# long run wants; make fuzz-smoke fixes it, so that a CI run follows the same mutations as
# the developer's `make test` and cannot fail on an input nobody has met: a crash a long
# run finds becomes a regression input, replayed on every run), FUZZ_PROFILE (`release`, the
# default, for real fuzzing; `dev` for the smoke: it builds in half the time, 1m50s against
# 3m30s cold on 2 cores, and runs 10-30x slower, which a 25 s check that every target builds
# and runs can afford).
#
# Needs the nightly toolchain (cargo fuzz's instrumentation flags are nightly-only) and
# cargo-fuzz 0.13.2; without them it fails with the reason rather than skipping.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD

seconds=${1:-30}
shift || true
case $seconds in '' | *[!0-9]*)
    echo "fuzz.sh: SECONDS must be a whole number, not '$seconds' (usage: scripts/fuzz.sh [SECONDS] [TARGET...])" >&2
    exit 2
    ;;
esac
sanitizer=${FUZZ_SANITIZER:-none}
case ${FUZZ_SEED:-1} in '' | *[!0-9]*)
    echo "fuzz.sh: FUZZ_SEED must be a whole number, not '$FUZZ_SEED'" >&2
    exit 2
    ;;
esac
table=${FUZZ_TABLE:-target/fuzz-table.txt}
jobs=${FUZZ_JOBS:-1}
parallel=${FUZZ_PARALLEL:-1}
case $parallel in '' | 0 | *[!0-9]*)
    echo "fuzz.sh: FUZZ_PARALLEL must be a whole number of at least 1, not '$parallel'" >&2
    exit 2
    ;;
esac

if ! rustup run nightly rustc --version >/dev/null 2>&1; then
    echo "*** fuzz.sh: no nightly toolchain (rustup run nightly rustc failed); cargo fuzz needs it. The machine image ships one: check 'rustup toolchain list' ***" >&2
    exit 1
fi
if ! cargo +nightly fuzz --version 2>/dev/null | grep -q '0\.13\.'; then
    echo "*** fuzz.sh: cargo-fuzz 0.13 is not installed: cargo install cargo-fuzz --version 0.13.2 --locked ***" >&2
    exit 1
fi

all=$(cd fuzz && cargo +nightly fuzz list)
targets=("$@")
[ ${#targets[@]} -gt 0 ] || mapfile -t targets <<<"$all"
for t in "${targets[@]}"; do
    grep -qx "$t" <<<"$all" || {
        echo "fuzz.sh: no target '$t'; the targets are: $(echo "$all" | tr '\n' ' ')" >&2
        exit 2
    }
done

profile=${FUZZ_PROFILE:-release}
case $profile in
release) profile_flag=() ;;
dev) profile_flag=(--dev) profile=debug ;;
*)
    echo "fuzz.sh: FUZZ_PROFILE must be release or dev, not '$profile'" >&2
    exit 2
    ;;
esac
echo "== fuzz: build (nightly $(rustup run nightly rustc --version | awk '{print $2}'), sanitizer $sanitizer, ${FUZZ_PROFILE:-release} profile)"
(cd fuzz && cargo +nightly fuzz build "${profile_flag[@]}" --sanitizer "$sanitizer" --target-dir "$root/target/fuzz")
bin="$root/target/fuzz/x86_64-unknown-linux-gnu/$profile"
[ -z "${FUZZ_BUILD_ONLY:-}" ] || exit 0

echo "== fuzz: replaying saved crashes (fuzz/regressions/)"
for t in "${targets[@]}"; do
    dir=fuzz/regressions/$t
    [ -d "$dir" ] && [ -n "$(ls -A "$dir")" ] || continue
    if ! "$bin/$t" -runs=0 "$dir"/* >"target/fuzz-replay-$t.log" 2>&1; then
        tail -30 "target/fuzz-replay-$t.log" >&2
        echo "*** fuzz.sh: a saved crash of $t fails again (log above) ***" >&2
        exit 1
    fi
    echo "$t: $(ls "$dir" | wc -l) saved inputs pass"
done

# One target: fuzzes it, then writes its row of the table to target/fuzz-row-<target>.txt.
fuzz_one() {
    local t=$1
    echo "== fuzz: $t for ${seconds}s"
    local corpus=target/fuzz-corpus/$t artifacts=target/fuzz-artifacts/$t/ log=target/fuzz-$t.log
    mkdir -p "$corpus" "$artifacts"
    local args=(-max_total_time="$seconds" -print_final_stats=1 -timeout=20 -rss_limit_mb=4096
        -artifact_prefix="$artifacts" "$corpus" "fuzz/corpus/$t")
    [ -z "${FUZZ_SEED:-}" ] || args=(-seed="$FUZZ_SEED" "${args[@]}")
    [ "$jobs" -gt 1 ] && args=(-fork="$jobs" "${args[@]}")
    if ! "$bin/$t" "${args[@]}" >"$log" 2>&1; then
        grep -v '^#' "$log" | tail -40 >&2
        local found
        found=$(grep -o "Test unit written to [^ ]*" "$log" | tail -1 | cut -d' ' -f5)
        echo "*** fuzz.sh: $t failed; input: ${found:-see $log}; replay: $bin/$t ${found:-INPUT} ***" >&2
        return 1
    fi
    # The last status line (`#N DONE cov: …`, or `#N: cov: …` with -fork) holds the
    # executions and the coverage reached.
    local last execs cov ft corp
    last=$(grep -E '^#[0-9]+' "$log" | tail -1)
    execs=$(grep -oE '^#[0-9]+' <<<"$last" | tr -d '#')
    cov=$(grep -o 'cov: [0-9]*' <<<"$last" | awk '{print $2}')
    ft=$(grep -o 'ft: [0-9]*' <<<"$last" | awk '{print $2}')
    corp=$(ls "$corpus" | wc -l)
    printf '%-12s %8s %12s %9s %8s %9s %7s\n' "$t" "$seconds" "$execs" "$((execs / (seconds > 0 ? seconds : 1)))" \
        "${cov:-?}" "${ft:-?}" "$corp" >"target/fuzz-row-$t.txt"
}

# FUZZ_PARALLEL targets at a time (each one process, or FUZZ_JOBS with -fork).
failed=0
for ((i = 0; i < ${#targets[@]}; i += parallel)); do
    pids=()
    for t in "${targets[@]:i:parallel}"; do
        rm -f "target/fuzz-row-$t.txt"
        fuzz_one "$t" &
        pids+=($!)
    done
    for p in "${pids[@]}"; do
        wait "$p" || failed=1
    done
    [ "$failed" = 0 ] || exit 1
done
printf '%-12s %8s %12s %9s %8s %9s %7s\n' target seconds executions exec/s cov features corpus >"$table"
for t in "${targets[@]}"; do
    cat "target/fuzz-row-$t.txt" >>"$table"
done
echo "== fuzz: done, no failures"
cat "$table"
[ -z "${FUZZ_REPORT:-}" ] || cat "$table" >>"$FUZZ_REPORT"
