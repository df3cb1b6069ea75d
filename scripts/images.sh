#!/usr/bin/env bash
# The operator, worker and probe images, built with podman on a machine that reaches no image
# registry (make images), and their check (make image-check).
#
#   scripts/images.sh base            the Debian bookworm base images (debootstrap, cached)
#   scripts/images.sh build [PROFILE] the images from binaries built on this host
#                                     (PROFILE: release, the default, or test: the
#                                     binaries `cargo test --workspace` builds)
#   scripts/images.sh check [PROFILE] the image tests (tests/images.rs) and the played
#                                     campaign (tests/played_jobs.rs), images built
#                                     first, with the test API server running
#   scripts/images.sh check-images [PROFILE]  the images built, then tests/images.rs
#   scripts/images.sh played          the played campaign alone, on the images as built
#                                     (it measures: make test runs it with nothing beside)
#
# The images are the Dockerfile's `operator`, `worker` and `probe` targets with
# RUNTIME_IMAGE (PROBE_BASE_IMAGE for the probe) set to a local base and BINARIES=prebuilt:
# the same user (65532), entrypoint and labels as a release, but glibc binaries from this
# host's toolchain (it has no musl target) on a Debian base instead of static ones on
# distroless. Tags: localhost/pqbench-operator:local, localhost/pqbench-worker:local and
# localhost/pqbench-probe:local.
#
# The bases are `debootstrap --variant=minbase --include=ca-certificates bookworm` (and,
# for the probe, `--include=ca-certificates,iperf3,fio,iputils-ping`) from the Debian
# mirror apt uses here, kept as tarballs in $PQBENCH_CACHE (default ~/.cache/pqbench) and
# imported once into podman's store. Needs root (debootstrap, podman
# with runc and the cgroupfs manager: scripts/containers.conf).
set -euo pipefail
cd "$(dirname "$0")/.."

export CONTAINERS_CONF="$PWD/scripts/containers.conf"
CACHE=${PQBENCH_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/pqbench}
BASE=localhost/pqbench-base:bookworm
PROBE_BASE=localhost/pqbench-probe-base:bookworm
TAG=${PQBENCH_IMAGE_TAG:-local}

die() { echo "images.sh: $*" >&2; exit 1; }

need() {
    command -v "$1" >/dev/null ||
        die "$1 is missing: install it (apt-get install podman runc debootstrap), as .ci/run does"
}

# The Debian mirror apt is configured with (one-line or deb822 sources), else Debian's CDN.
mirror() {
    local m
    m=$(grep -h -s -o -E 'https?://[^ ]*/debian/?( |$)' /etc/apt/sources.list /etc/apt/sources.list.d/* |
        grep -v -- '-security' | head -1 | tr -d ' ') || true
    echo "${m:-http://deb.debian.org/debian}"
}

# bootstrap IMAGE NAME PACKAGES: a debootstrapped bookworm with PACKAGES as IMAGE.
bootstrap() {
    local image=$1 name=$2 packages=$3
    if podman image exists "$image"; then
        echo "base: $image is in podman's store"
        return
    fi
    local tarball="$CACHE/$name-bookworm.tar"
    if [ ! -s "$tarball" ]; then
        need debootstrap
        [ "$(id -u)" = 0 ] || die "debootstrap needs root"
        mkdir -p "$CACHE"
        local root
        root=$(mktemp -d "$CACHE/rootfs.XXXXXX")
        trap 'rm -rf "$root"' EXIT
        echo "base: debootstrap bookworm with $packages from $(mirror) (about a minute)"
        debootstrap --variant=minbase --include="$packages" bookworm "$root" "$(mirror)" \
            >"$CACHE/debootstrap-$name.log" 2>&1 ||
            { tail -20 "$CACHE/debootstrap-$name.log" >&2; die "debootstrap failed (log: $CACHE/debootstrap-$name.log)"; }
        # No package lists or downloaded packages in the image.
        rm -rf "$root"/var/cache/apt/archives/*.deb "$root"/var/lib/apt/lists/*
        tar -C "$root" --numeric-owner -cf "$tarball.tmp" .
        mv "$tarball.tmp" "$tarball"
        rm -rf "$root"
        trap - EXIT
    fi
    echo "base: importing $tarball as $image"
    podman import --quiet "$tarball" "$image" >/dev/null
}

base() {
    need podman
    bootstrap "$BASE" base ca-certificates
    bootstrap "$PROBE_BASE" probe-base ca-certificates,iperf3,fio,iputils-ping
}

build() {
    local profile=${1:-release} dir
    base
    echo "build: pqbench-operator, pqbench-worker and pqbench-probe ($profile)"
    case "$profile" in
        release)
            cargo build --release -p operator --bin pqbench-operator -p worker --bin pqbench-worker
            dir=target/release
            ;;
        test)
            # The binaries `cargo test --workspace` builds for its own tests (a no-op where
            # they are built, as in CI; `cargo build` would rebuild them with other features).
            cargo test --workspace --no-run --quiet
            dir=target/debug
            ;;
        *) die "build takes release or test, not $profile" ;;
    esac
    local ctx=target/images/context
    rm -rf "$ctx"
    mkdir -p "$ctx/prebuilt"
    cp "$dir/pqbench-operator" "$dir/pqbench-worker" "$ctx/prebuilt/"
    for image in operator worker probe; do
        podman build --quiet --file Dockerfile --target "$image" \
            --build-arg RUNTIME_IMAGE="$BASE" --build-arg PROBE_BASE_IMAGE="$PROBE_BASE" \
            --build-arg BINARIES=prebuilt \
            --tag "localhost/pqbench-$image:$TAG" "$ctx" >/dev/null
        echo "build: localhost/pqbench-$image:$TAG"
    done
    # The unnamed binaries stage the builds leave behind.
    podman image prune --force >/dev/null
}

# The image tests (tests/images.rs), the played campaign (tests/played_jobs.rs), or both, on
# the images as built. --workspace: the features of the whole workspace, as `cargo test
# --workspace` built them; the root package alone unifies fewer and rebuilt 85 crates
# (4 min 43 s cold).
run_tests() {
    PQBENCH_IMAGE_TAG=$TAG scripts/with-k8s-apiserver.sh \
        cargo nextest run --workspace --profile images --run-ignored only -E "$1"
}
IMAGES='binary_id(pqbench::images)'
PLAYED='binary_id(pqbench::played_jobs)'

check() {
    build "${1:-release}"
    run_tests "$IMAGES | $PLAYED"
}

case "${1:-}" in
    base) base ;;
    build) build "${2:-release}" ;;
    check) check "${2:-release}" ;;
    check-images) build "${2:-release}" && run_tests "$IMAGES" ;;
    played) run_tests "$PLAYED" ;;
    *) die "usage: scripts/images.sh base | build [release|test] | check [release|test] | check-images [release|test] | played" ;;
esac
