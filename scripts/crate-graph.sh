#!/usr/bin/env bash
# The crate graph, as the user guide states it (docs/src/development/index.md, "Layout of the
# repository"): the pure crates (envelope, stats, campaign, analysis, report, run) link no I/O
# crate of the workspace and no I/O library (async runtime, HTTP, the AWS SDK, Parquet, the S3
# server); the arrows between campaign (schema and design), analysis (rows to the report model)
# and report (its rendering) run one way; the operator links neither the run engine (worker),
# the rendering (report), Parquet, the embedded S3 server nor OpenSSL (nor do stats and
# campaign); and dataset (the run files) links
# no network crate. `cargo tree` only reads the lock file: no
# build.
set -euo pipefail
cd "$(dirname "$0")/.."
fail=0
# $1 crate, $2 extended regex of crate names it must not link (normal dependencies).
check() {
    local hits
    hits=$(cargo tree -q -e normal -p "$1" --prefix none | awk '{print $1}' | sort -u |
        grep -Ex "$2" || true)
    if [ -n "$hits" ]; then
        echo "*** crate-graph: $1 links $(echo "$hits" | tr '\n' ' ')(docs/src/development/index.md, Layout) ***" >&2
        fail=1
    else
        echo "crate-graph: $1 ok"
    fi
}
io='tokio|mio|hyper|hyper-util|reqwest|tonic|aws-sdk-s3|aws-config|parquet|s3s|s3s-fs|s3|obs|worker|operator'
for crate in envelope stats campaign analysis report run; do
    check "$crate" "$io"
done
check campaign 'analysis|report|run'
check analysis 'report|run'
check operator 'worker|report|dataset|parquet|s3s|s3s-fs|openssl|openssl-sys|openssl-src|ossl-kem'
# OpenSSL's build (the openssl backend) only where it is timed: the CLI and the worker.
for crate in stats campaign; do
    check "$crate" 'openssl|openssl-sys|openssl-src|ossl-kem'
done
# The run files (Parquet, checksums, validator, collector) are file I/O only: no network.
check dataset 'tokio|mio|hyper|hyper-util|reqwest|tonic|aws-sdk-s3|aws-config|s3s|s3s-fs|s3|obs|worker|operator'
exit "$fail"
