#!/usr/bin/env python3
"""Folded stacks from `perf script`, and the summary table of profile-s3-client.sh.

    perf script -i perf.data | fold-perf.py > stacks.folded
    fold-perf.py --summary OUT_DIR

The folded format is one line per distinct stack, root first, frames joined by ';', then
the sample count: what flame-graph renderers (inferno, flamegraph.pl, speedscope) read.
The summary attributes each sample's leaf frame to a component by its symbol's path.
"""
import collections
import csv
import json
import os
import re
import sys

# (component, pattern on the leaf symbol), first match wins.
COMPONENTS = [
    ("kernel (syscalls, TCP, scheduling)", r"_\[k\]$"),
    ("allocator", r"^(mi_|_mi_|__rust_alloc|__rust_dealloc|__rust_realloc|malloc|free|cfree|realloc|_int_)"),
    ("memcpy / memset", r"^(__memcpy|__memmove|__memset|memcpy|memmove|memset)"),
    # SHA-256 block functions are the signed payload's hash (aws-lc for lean, sha2 for
    # the SDK); the envelope's own SHA-256 (HKDF over a few hundred bytes) is negligible.
    ("SigV4 (aws-sigv4, payload SHA-256, HMAC)", r"aws_sigv4|sha2::|hmac::|Sha256|sha256_block|sha256"),
    ("envelope crypto (aws-lc, RustCrypto)", r"aws_lc|^aws_lc_|envelope::|ml_kem|x25519|aes_gcm|sha3|^(CRYPTO|EVP|aes_|gcm_|sha256_block|x25519_|curve25519|fiat_)"),
    ("hyper / HTTP", r"hyper|httparse|http::|http_body"),
    ("aws-sdk / smithy runtime", r"aws_sdk_s3|aws_smithy|aws_types|aws_runtime|aws_credential"),
    ("tokio runtime", r"tokio::|mio::|parking_lot|std::sys::sync|futex"),
    ("XML (quick-xml)", r"quick_xml"),
    ("pqbench (store, bench)", r"^s3::|pqbench::|worker::"),
    ("vDSO clock reads", r"__vdso|read_tsc"),
    ("bytes, futures, fmt, hex", r"^bytes::|futures_|atomic_waker|core::fmt|alloc::fmt|hex::|<alloc::string::String as core::fmt"),
]


def leaf_component(sym):
    for name, pat in COMPONENTS:
        if re.search(pat, sym):
            return name
    return "other"


def fold(lines):
    stacks = collections.Counter()
    frames = []
    for line in lines:
        line = line.rstrip("\n")
        if not line.strip():
            if frames:
                stacks[";".join(reversed(frames))] += 1
            frames = []
            continue
        if not line.startswith(("\t", " ")):
            continue  # the sample's header line
        parts = line.strip().split(None, 1)
        sym = parts[1] if len(parts) > 1 else parts[0]
        kernel = "kernel.kallsyms" in sym or "[kernel" in sym
        sym = re.sub(r"\s+\(.*\)$", "", sym)  # the (dso)
        sym = re.sub(r"\+0x[0-9a-f]+$", "", sym)
        # Kernel frames carry flame graphs' `_[k]` suffix.
        frames.append(sym.replace(";", ":") + ("_[k]" if kernel else ""))
    if frames:
        stacks[";".join(reversed(frames))] += 1
    for stack, n in stacks.most_common():
        print(f"{stack} {n}")


def syscalls(path):
    with open(path) as f:
        for row in csv.reader(f):
            if len(row) > 2 and "raw_syscalls" in row[2]:
                return float(row[0])
    return float("nan")


def summary(out):
    print("| client | op | CPU µs/req | user µs | sys µs | syscalls/req | allocations/req | top self time by component |")
    print("|---|---|---:|---:|---:|---:|---:|---|")
    for cl in ("aws-sdk", "lean"):
        for op in ("get", "put"):
            base = os.path.join(out, f"bs-{cl}-{op}-6000.json")
            if not os.path.exists(base):
                continue
            row = json.load(open(base))["rows"][0]["median"]
            # Logical requests per run: the cell and its control, warm-up (max(n/10, 32))
            # plus measured each.
            logical = lambda n: 2 * (n + max(n // 10, 32))
            d = syscalls(os.path.join(out, f"syscalls-{cl}-{op}-6000.csv")) - syscalls(
                os.path.join(out, f"syscalls-{cl}-{op}-2000.csv"))
            per = d / (logical(6000) - logical(2000))
            alloc = "–"
            ap = os.path.join(out, f"alloc-{cl}-{op}.json")
            if os.path.exists(ap):
                a = json.load(open(ap))["rows"][0]["median"].get("allocations")
                alloc = f"{a:.0f}" if a is not None else "–"
            comp = collections.Counter()
            fp = os.path.join(out, f"{cl}-{op}.folded")
            total = 0
            if os.path.exists(fp):
                for line in open(fp):
                    stack, n = line.rsplit(" ", 1)
                    comp[leaf_component(stack.split(";")[-1])] += int(n)
                    total += int(n)
            top = ", ".join(f"{k} {100 * v / total:.0f} %" for k, v in comp.most_common(5)) if total else "–"
            print(f"| {cl} | {op} | {row['cpu_us']:.0f} | {row['user_us']:.0f} | {row['sys_us']:.0f} | {per:.1f} | {alloc} | {top} |")


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--summary":
        summary(sys.argv[2])
    else:
        fold(sys.stdin)
