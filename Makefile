# pqbench developer commands; .ci/run calls these same targets.
# Python oracle (pyca/cryptography 50 = OpenSSL 4) lives in a local venv.
VENV   := .venv
PY     := $(VENV)/bin/python
export PQBENCH_PYTHON := $(abspath $(PY))

.PHONY: all check soak test test-checks lint lint-code book docs-check docs-reference fmt clippy doc crate-graph images image-check bench bench-build bench-store bench-run bench-tracing bench-migrate profile-s3 python golden fuzz fuzz-smoke modes oracle-check crds crd-check k8s-apiserver chart-check e2e-kind

all: lint test

# Create the venv with the interop oracle (pip reaches PyPI).
$(PY): tests/interop/requirements.txt
	python3 -m venv $(VENV)
	$(PY) -m pip install --quiet --disable-pip-version-check -r tests/interop/requirements.txt
	touch $(PY)

python: $(PY) ## install the Python oracle

# Each part of make test is timed (scripts/timed): .ci/run prints the table.
TIMED := scripts/timed

# Run every test. The workspace's test build first; then the container images built from
# the test binaries and checked with podman (tests/images.rs) beside the checks that only
# compute: the statistics oracle regenerated and
# compared with the committed fixture, the Helm chart check, the fuzz smoke (every target
# built and run briefly), the vector self-check against OpenSSL and the doctests; then the
# whole workspace's tests with cargo-nextest (.config/nextest.toml, NEXTEST_THREADS at a
# time) with the test Kubernetes API server running (scripts/with-k8s-apiserver.sh). The
# CRD drift check is a test of the workspace (operator/tests/crd.rs: crds/ and the chart's
# copy are what the types generate). Last, alone, the played campaign (tests/played_jobs.rs:
# the main job on the images with its Jobs played as containers), which measures.
test:
	$(TIMED) "test: python venv" $(MAKE) -s python
	$(TIMED) "test: build" cargo test --workspace --no-run --quiet
	scripts/beside.sh target/image-check.log \
	    $(TIMED) "test: images (beside)" scripts/images.sh check-images test \
	    -- $(MAKE) -s test-checks
	$(TIMED) "test: cargo nextest" scripts/with-k8s-apiserver.sh \
	    cargo nextest run --workspace --test-threads $(NEXTEST_THREADS)
	$(TIMED) "test: played campaign (alone)" scripts/images.sh played

# The checks of make test that compute and do not measure.
test-checks:
	$(TIMED) "test: oracle-check" $(MAKE) -s oracle-check
	$(TIMED) "test: chart-check" $(MAKE) -s chart-check
	$(TIMED) "test: fuzz-smoke" $(MAKE) -s fuzz-smoke
	$(TIMED) "test: vectors" $(PY) envelope/tests/vectors/check_vectors.py
	$(TIMED) "test: doctests" cargo test --workspace --doc --quiet

# Tests at a time in make test: two per core. The suite waits far more than it computes
# (campaign windows, pauses, retries' backoff, servers): on 2 cores, with the tests that
# measure run alone (.config/nextest.toml), 4 at a time took 487 s against 652 s for 2,
# every test passing (issue 34).
NEXTEST_THREADS ?= $(shell echo $$((2 * $$(nproc))))

# The developer's fast loop (a few minutes warm): formatting, clippy, and the pure crates'
# tests (no server, no API server, no images). make test is still what must pass.
check: fmt clippy
	cargo nextest run -p envelope -p stats -p campaign -p analysis -p report -p run

# Regenerate the BenchmarkCampaign CRD from the Rust types (operator/src/api.rs, campaign).
crds:
	cargo run -q -p operator --bin crdgen

# The committed CRD (crds/ and the chart's copy in charts/) must be what the types generate
# (make test checks the same in operator/tests/crd.rs, without a build of its own).
crd-check: crds
	git diff --exit-code -- crds/ charts/ || { echo "*** crd-check: crds/ or charts/ differ from the commit: the committed CRD is stale (commit what make crds wrote) or chart edits are uncommitted ***" >&2; exit 1; }

# Helm chart: lint, render, kubernetes-validate 1.30/1.34, checkov, shellcheck (own venv).
chart-check:
	scripts/chart-check.sh

# The operator and worker images with podman, from a debootstrapped Debian base and
# release binaries built here (scripts/images.sh; needs root, podman, runc, debootstrap).
images:
	scripts/images.sh build release

# The images as a user meets them (tests/images.rs): a worker run as the operator's Job
# starts it, SIGTERM to a worker, the operator against the test API server; and the main
# job on the images with its Jobs played as containers (tests/played_jobs.rs, ~5.5 min).
# IMAGE_PROFILE=test builds the images from the binaries `cargo test` builds (CI).
IMAGE_PROFILE ?= release
image-check:
	scripts/images.sh check $(IMAGE_PROFILE)

# Coverage-guided fuzzing (fuzz/, nightly cargo fuzz; scripts/fuzz.sh): every target for
# FUZZ_SECONDS each, from the committed seeds, after replaying every saved crash.
# `make fuzz FUZZ_SECONDS=3600 FUZZ_JOBS=2` is a long run; fuzz-smoke (25 s per target) is
# the short one of make test, there so that every target keeps building and running (two
# targets at a time, one per core); its
# seed is fixed (FUZZ_SMOKE_SEED), so CI replays the developer's smoke rather than a new draw,
# and it builds the targets unoptimised (FUZZ_PROFILE=dev: half the build time).
FUZZ_SECONDS ?= 600
fuzz:
	scripts/fuzz.sh $(FUZZ_SECONDS)

fuzz-smoke:
	FUZZ_SEED=$(FUZZ_SMOKE_SEED) FUZZ_PROFILE=dev FUZZ_PARALLEL=2 scripts/fuzz.sh $(FUZZ_SMOKE_SECONDS)
FUZZ_SMOKE_SEED ?= 1
FUZZ_SMOKE_SECONDS ?= 25

# End-to-end on kind (needs docker, kind, kubectl, helm; not run by CI): tests/e2e/kind/.
e2e-kind:
	tests/e2e/kind/run.sh

# Build the test Kubernetes API server (cached in ~/.cache/k8s-test-apiserver; Debian
# packages only). `make test` starts it around `cargo test`; unbuilt, its tests skip loudly.
# It is not part of this repository: K8S_TEST_APISERVER names its checkout (the default is
# where this project's machines have it); scripts/with-k8s-apiserver.sh reads the same
# variable from the environment.
K8S_TEST_APISERVER ?= ../shared/tools/k8s-test-apiserver
k8s-apiserver:
	bash $(K8S_TEST_APISERVER)/build.sh

# Regenerate the SciPy/statsmodels fixture the stats tests compare against (pinned versions
# in tests/interop/requirements.txt) into target/, and require it to agree with the
# committed one: every float within 1e-12 relative, everything else equal. Not byte for
# byte: NumPy's SIMD kernels differ by CPU in the last digit (compare.py says more).
oracle-check: $(PY)
	cd stats/tests/oracle && $(abspath $(PY)) -m unittest -q test_compare
	mkdir -p target/oracle
	$(PY) stats/tests/oracle/generate.py --out target/oracle/cases.json
	$(PY) stats/tests/oracle/compare.py stats/tests/oracle/cases.json target/oracle/cases.json

# Formatting, clippy and rustdoc, warnings as errors; the crate graph as the guide states it
# (docs/src/development/index.md).
lint: lint-code docs-check

# The Rust side of lint: formatting, clippy, rustdoc, the crate graph.
lint-code: fmt clippy doc crate-graph

# The user guide (docs/, mdBook 0.5.4: `cargo install mdbook --version 0.5.4 --locked`),
# built into target/book; open target/book/index.html.
MDBOOK ?= mdbook
book:
	@command -v $(MDBOOK) >/dev/null || { echo "*** book: mdbook is not installed: cargo install mdbook --version 0.5.4 --locked ***" >&2; exit 1; }
	$(MDBOOK) build docs

# The docs hold: the book builds and every relative link and anchor in it, the README's
# and the chart README's resolves (offline, scripts/check-book.py); the CLI reference
# (docs/src/reference/cli, from the clap definitions) and the campaign field reference
# (from the CRD's schema) are what the code generates, as the CRD is (one test each). The
# tests build with the workspace's features, so make test reuses what they compile.
docs-check: book
	python3 scripts/check-book.py target/book docs/src README.md charts/pqbench/README.md
	cargo test -q --workspace --test cli_reference --test crd

# Regenerate the generated references after changing a command's flags or the CRD's types.
docs-reference:
	cargo run -q --bin pqbench -- cli-reference docs/src/reference/cli
	cargo run -q -p operator --bin crdgen

# No pure crate links an I/O crate; the operator links neither the engine, Parquet nor s3s.
crate-graph:
	scripts/crate-graph.sh

# Check formatting (stable rustfmt).
fmt:
	cargo fmt --all --check

# Lint every target, warnings are errors.
clippy:
	cargo clippy --workspace --all-targets -- -D warnings

# Build the API docs; broken intra-doc links fail.
doc:
	RUSTDOCFLAGS="-D warnings" cargo doc --no-deps --workspace

# Compile the benches without running them (CI).
bench-build:
	cargo bench --workspace --no-run

# Run the criterion benches and the envelope-overhead figure.
bench:
	cargo bench -p envelope --bench envelope
	cargo bench -p envelope --bench overhead

# Client CPU per request of S3 PUT/GET (64 KiB, x25519 and ml-kem-768, concurrency 1 and 32)
# against a `pqbench serve-s3` child process.
bench-store:
	cargo run --release -- bench-store --json target/bench-store.json

# Where the client's CPU goes on each S3 client (issue 19): needs perf; quiet machine.
profile-s3:
	cargo build --release --bin pqbench --features alloc-count
	cp target/release/pqbench target/pqbench-alloc-count
	cargo build --release --bin pqbench
	scripts/profile-s3-client.sh target/release/pqbench target/pqbench-alloc-count target/profile-s3

# The run-engine benchmark: run-one per cell, and run-one vs bench-store CPU per request.
bench-run:
	cargo build --release --bin pqbench
	python3 scripts/bench-run.py --pqbench target/release/pqbench --out target/bench-run

# What request tracing costs: run-one CPU per request with tracing off and at sample ratios
# 0, 0.01 and 1 (spans to a Rotel collector process), interleaved side by side.
# Migration throughput by object size, re-encryption beside re-wrap (pqbench migrate), client and server
# pinned apart; writes target/bench-migrate/results.{json,md}.
bench-migrate:
	cargo build --release --bin pqbench
	python3 scripts/bench-migrate.py --pqbench target/release/pqbench --out target/bench-migrate

bench-tracing: $(PY)
	cargo build --release --bin pqbench
	$(PY) scripts/bench-tracing.py --pqbench target/release/pqbench --out target/bench-tracing

# A 10-minute run whose resident memory must stay flat (tests/soak.rs; issue 20). Needs
# a quiet machine; PQBENCH_SOAK_SECONDS=N for another length (at least 120).
soak:
	cargo test --test soak -- --ignored --nocapture

# Regenerate the golden objects (only when the format changes on purpose).
golden:
	PQBENCH_BLESS=1 cargo test -p envelope --test format golden
	PQBENCH_BLESS=1 cargo test -p envelope --test golden_v2 -- golden_v2_objects golden_v2_1_objects
	PQBENCH_BLESS=1 cargo test -p envelope --test golden_v2 a_golden_rewrap

# The main job for now: every mode, its sizes and its seal/open cost.
modes:
	cargo run --release -- modes
