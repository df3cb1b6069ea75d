#!/usr/bin/env bash
# scripts/garage-install.sh: installs Garage 2.5.0, the second S3 server the object-store
# tests run every test body against (a separate process), into ~/.cargo/bin; a no-op when
# it is there. Needs Debian's libsodium-dev, libzstd-dev and pkg-config (.ci/run installs
# them).
#
# A lean build for tests, not for serving data: the two features the tests use (LMDB, the
# metrics endpoint; not SQLite or K2V), Debian's libsodium and zstd instead of their C
# sources (system-libs), and opt-level 0 except for what hashes, checksums, encrypts or
# stores every byte. On 2 cores: 211 s of CPU, against 516 s at opt-level 1 and about 20
# min of wall time for a default `cargo install garage` (issue 34); the tests' largest
# objects (33 MiB) round-trip in about twice the time of an opt-level-1 Garage.
set -euo pipefail

if garage --version 2>/dev/null | grep -q 'cargo:2\.5\.0'; then
    echo "garage 2.5.0 is installed"
    exit 0
fi
hot=(sha2 sha1 md-5 blake2 crc-fast crc32fast hmac xxhash-rust lmdb-master-sys heed
    aes-gcm aes ghash polyval digest block-buffer hex base64)
args=(--config 'profile.release.opt-level=0')
for p in "${hot[@]}"; do
    args+=(--config "profile.release.package.\"$p\".opt-level=3")
done
cargo install garage --version 2.5.0 --locked --no-default-features \
    --features lmdb,metrics,system-libs "${args[@]}"
garage --version
