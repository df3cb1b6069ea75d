# syntax=docker/dockerfile:1.7
# Images of the pqbench operator and worker: static musl binaries on a distroless base
# (no shell, no package manager, uid 65532). Pick one with --target:
#
#   docker build --target operator -t ghcr.io/pqbench/pqbench-operator:0.1.0 \
#       --build-arg PQBENCH_GIT_COMMIT="$(git rev-parse HEAD)" .
#   docker build --target worker -t ghcr.io/pqbench/pqbench-worker:0.1.0 \
#       --build-arg PQBENCH_GIT_COMMIT="$(git rev-parse HEAD)" .
#   docker build --target probe -t ghcr.io/pqbench/pqbench-probe:0.1.0 \
#       --build-arg PQBENCH_GIT_COMMIT="$(git rev-parse HEAD)" .
#
# The probe image (the testbed baselines on a cluster: the operator's pre-flight probe Job,
# and MinIO's disk-probe init container and iperf3 sidecar) is the worker binary on Debian
# with iperf3, fio and ping, the tools it runs; the two others have no shell or packages.
#
# Both targets share the builder stage (one compilation of the workspace). The builder runs
# on the image's own platform, so `docker buildx build --platform linux/arm64` (Graviton
# clients, as the study's c7g.4xlarge) compiles natively under emulation: slow, no cross
# toolchain needed. tests/e2e/kind/run.sh builds both for kind. hadolint checks this file
# (make chart-check).
#
# The base images are build arguments; the defaults are the release's. `make images`
# (scripts/images.sh) builds the same two targets with podman on a machine that reaches no
# image registry: a Debian bookworm base made with debootstrap as RUNTIME_IMAGE, and
# BINARIES=prebuilt, which takes binaries built on the host (glibc, not static: the host
# toolchain has no musl target) from the context's prebuilt/ folder. Same user, entrypoint
# and labels either way; the builder stage is then skipped.

# The toolchain rust-toolchain.toml pins, on Debian 13.
ARG RUST_VERSION=1.95.0
# Where the binaries are compiled.
ARG BUILDER_IMAGE=docker.io/library/rust:${RUST_VERSION}-slim-trixie
# What both images run on: no shell, no package manager, user 65532.
ARG RUNTIME_IMAGE=gcr.io/distroless/static-debian12:nonroot
# Where the binaries come from: `builder` (compiled below, static musl) or `prebuilt`.
ARG BINARIES=builder
# What the probe image runs on: `probe-base` (Debian with the tools, below) or an image
# with them already (scripts/images.sh: debootstrap --include).
ARG PROBE_BASE_IMAGE=probe-base
# The Debian the probe base installs the tools on.
ARG PROBE_DEBIAN_IMAGE=docker.io/library/debian:bookworm-slim

FROM ${BUILDER_IMAGE} AS builder
ARG RUST_VERSION
# The commit recorded in run summaries (worker/build.rs); there is no .git in the context.
ARG PQBENCH_GIT_COMMIT=unknown
ENV PQBENCH_GIT_COMMIT=${PQBENCH_GIT_COMMIT} \
    RUSTUP_TOOLCHAIN=${RUST_VERSION} \
    CARGO_TERM_COLOR=never
# musl-tools: the musl C toolchain for aws-lc-sys and mimalloc; cmake, clang and perl: the
# aws-lc build for musl targets. Versions are those of the Debian release the base pins.
# hadolint ignore=DL3008
RUN apt-get update \
    && apt-get install -y --no-install-recommends \
        musl-tools cmake clang libclang-dev perl make pkg-config ca-certificates \
    && rm -rf /var/lib/apt/lists/*
# x86_64 or aarch64, from the platform the stage runs on.
RUN echo "$(uname -m)-unknown-linux-musl" > /rust-target \
    && rustup target add "$(cat /rust-target)"
WORKDIR /src
COPY . .
# Static binaries (musl, crt-static), built once for both images; the registry and target
# caches survive between builds.
RUN --mount=type=cache,target=/usr/local/cargo/registry \
    --mount=type=cache,target=/src/target \
    target="$(cat /rust-target)" \
    && RUSTFLAGS="-C target-feature=+crt-static" \
        cargo build --release --locked --target "$target" \
        -p operator --bin pqbench-operator \
        -p worker --bin pqbench-worker \
    && mkdir -p /out \
    && cp "target/$target/release/pqbench-operator" "target/$target/release/pqbench-worker" /out/

# Binaries built outside, for BINARIES=prebuilt: the build context holds them in prebuilt/.
FROM scratch AS prebuilt
COPY prebuilt/pqbench-operator prebuilt/pqbench-worker /out/

# The binaries both images take, from the stage BINARIES names.
FROM ${BINARIES} AS binaries

# The operator: reconciles BenchmarkCampaigns; /metrics, /healthz, /readyz on :8080.
FROM ${RUNTIME_IMAGE} AS operator
LABEL org.opencontainers.image.title="pqbench-operator" \
      org.opencontainers.image.description="pqbench operator: runs BenchmarkCampaign resources" \
      org.opencontainers.image.licenses="Apache-2.0"
COPY --from=binaries /out/pqbench-operator /usr/local/bin/pqbench-operator
USER 65532:65532
EXPOSE 8080
ENTRYPOINT ["/usr/local/bin/pqbench-operator"]

# The worker: one run's client process (`pqbench-worker --spec FILE`), started by the
# operator's Jobs.
FROM ${RUNTIME_IMAGE} AS worker
LABEL org.opencontainers.image.title="pqbench-worker" \
      org.opencontainers.image.description="pqbench worker: the client process of one benchmark run" \
      org.opencontainers.image.licenses="Apache-2.0"
COPY --from=binaries /out/pqbench-worker /usr/local/bin/pqbench-worker
USER 65532:65532
ENTRYPOINT ["/usr/local/bin/pqbench-worker"]

# Debian with the probes' tools: iperf3 (network), fio (disk), iputils-ping (round trip);
# taskset is util-linux, which Debian always has.
FROM ${PROBE_DEBIAN_IMAGE} AS probe-base
# hadolint ignore=DL3008
RUN apt-get update \
    && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
        iperf3 fio iputils-ping ca-certificates \
    && rm -rf /var/lib/apt/lists/*

# The testbed probes: `pqbench-worker --probe-env` (the pre-flight probe Job),
# `--disk-probe` (MinIO's init container) and `iperf3 -s` (beside MinIO).
FROM ${PROBE_BASE_IMAGE} AS probe
LABEL org.opencontainers.image.title="pqbench-probe" \
      org.opencontainers.image.description="pqbench testbed probes: iperf3, fio and ping with pqbench-worker" \
      org.opencontainers.image.licenses="Apache-2.0"
COPY --from=binaries /out/pqbench-worker /usr/local/bin/pqbench-worker
USER 65532:65532
ENTRYPOINT ["/usr/local/bin/pqbench-worker"]
