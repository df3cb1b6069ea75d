#!/usr/bin/env python3
"""The run-engine benchmark (issue "Run engine", section Benchmark).

1. Client CPU per request and throughput of 64 KiB GET and PUT at concurrency 1, 32 and 128
   for x25519, ml-kem-768 and x-wing on both backends: one `pqbench run-one` per cell, the
   server (`pqbench serve-s3`) in a separate process.
2. The run engine's own overhead: client CPU per request of `run-one` divided by that of
   `bench-store` (the object-store bench) at the same settings, measured side by side,
   interleaved, in this one invocation (target <= 1.10).

Usage: scripts/bench-run.py [--pqbench target/release/pqbench] [--warmup 2s]
       [--measured 8s] [--quick] [--out target/bench-run]
Writes <out>/results.json and <out>/results.md and prints the tables.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import time


def sh(cmd):
    r = subprocess.run(cmd, capture_output=True, text=True)
    return r


def run_one(a, mode, backend, op, conc, run_id):
    cmd = [a.pqbench, "run-one", "--mode", mode, "--backend", backend, "--op", op,
           "--size", "64KiB", "--concurrency", str(conc), "--warmup", a.warmup,
           "--measured", a.measured, "--fixtures", "64", "--run-id", run_id,
           "--out", os.path.join(a.out, "runs"), "--json"]
    r = sh(cmd)
    if r.returncode not in (0, 1) or not r.stdout.strip():
        sys.exit(f"run-one failed: {' '.join(cmd)}\n{r.stderr}")
    return json.loads(r.stdout)


def bench_store(a, mode, backend, op, conc, requests):
    path = os.path.join(a.out, f"bs-{mode}-{backend}-{op}-{conc}.json")
    cmd = [a.pqbench, "bench-store", "--modes", mode, "--backend", backend, "--ops", op,
           "--concurrency", str(conc), "--size", "64KiB", "--requests", str(requests),
           "--rounds", "1", "--json", path]
    r = sh(cmd)
    if r.returncode != 0:
        sys.exit(f"bench-store failed: {' '.join(cmd)}\n{r.stderr}")
    rows = json.load(open(path))["rows"]
    row = next(x for x in rows if x["op"] == op and x["concurrency"] == conc)
    return row["median"]


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--pqbench", default="target/release/pqbench")
    p.add_argument("--warmup", default="2s")
    p.add_argument("--measured", default="8s")
    p.add_argument("--out", default="target/bench-run")
    p.add_argument("--quick", action="store_true", help="concurrency 1 and 32 only, aws-lc only")
    p.add_argument("--overhead-reps", type=int, default=3)
    a = p.parse_args()
    os.makedirs(a.out, exist_ok=True)
    modes = ["x25519", "ml-kem-768", "x-wing"]
    backends = ["aws-lc"] if a.quick else ["aws-lc", "rustcrypto"]
    concs = [1, 32] if a.quick else [1, 32, 128]
    stamp = int(time.time())
    cells = [(m, b, op, c) for b in backends for op in ["get", "put"] for c in concs for m in modes]
    rows = []
    t0 = time.time()
    for i, (m, b, op, c) in enumerate(cells):
        s = run_one(a, m, b, op, c, f"bench-{stamp}-{i}")
        rows.append({
            "mode": m, "backend": b, "op": op, "concurrency": c,
            "rps": s["throughputRps"], "cpu_us": s["cpu"]["cpuPerRequestUs"],
            "crypto_us": s["cpu"]["cryptoCpuPerRequestUs"], "cores_used": s["cpu"]["coresUsed"],
            "p50_ms": s["latencyMs"]["p50"], "p99_ms": s["latencyMs"]["p99"],
            "unacc_p99_pct": 100 * s["unaccounted"]["p99Fraction"],
            "unacc_agg_pct": 100 * s["unaccounted"]["aggregateFraction"],
            "server_cores": s["server"]["cpuCoresUsed"], "valid": s["valid"],
            "failed": s["counts"]["failed"],
        })
        el = time.time() - t0
        print(f"\r[{i + 1}/{len(cells)}] ETA {el / (i + 1) * (len(cells) - i - 1):.0f} s",
              end="", file=sys.stderr, flush=True)
    print(file=sys.stderr)

    # Overhead: run-one vs bench-store, same cell, interleaved, repeated.
    over = []
    for (m, op, c) in [("ml-kem-768", "get", 1), ("ml-kem-768", "get", 32),
                       ("ml-kem-768", "put", 1), ("ml-kem-768", "put", 32)]:
        ratios, ro, bs = [], [], []
        for r in range(a.overhead_reps):
            s = run_one(a, m, "aws-lc", op, c, f"ovh-{stamp}-{op}-{c}-{r}")
            n = min(3000, max(500, int(s["counts"]["ok"])))
            b = bench_store(a, m, "aws-lc", op, c, n)
            ro.append(s["cpu"]["cpuPerRequestUs"])
            bs.append(b["cpu_us"])
            ratios.append(ro[-1] / bs[-1])
        over.append({"mode": m, "op": op, "concurrency": c,
                     "run_one_cpu_us": statistics.median(ro),
                     "bench_store_cpu_us": statistics.median(bs),
                     "ratio_median": statistics.median(ratios), "ratios": ratios})

    json.dump({"cells": rows, "overhead": over, "warmup": a.warmup, "measured": a.measured},
              open(os.path.join(a.out, "results.json"), "w"), indent=2)
    lines = ["| op | backend | conc | mode | req/s | CPU µs/req | crypto µs | cores | p50 ms | p99 ms | unacc. p99 % | server cores | valid |",
             "|---|---|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---|"]
    for r in rows:
        sc = "" if r["server_cores"] is None else f"{r['server_cores']:.2f}"
        lines.append(f"| {r['op']} | {r['backend']} | {r['concurrency']} | {r['mode']} | {r['rps']:.0f} | "
                     f"{r['cpu_us']:.0f} | {r['crypto_us']:.0f} | {r['cores_used']:.2f} | {r['p50_ms']:.2f} | "
                     f"{r['p99_ms']:.2f} | {r['unacc_p99_pct']:.1f} | {sc} | {'yes' if r['valid'] else 'no'} |")
    lines += ["", "| run-engine overhead | conc | run-one CPU µs/req | bench-store CPU µs/req | ratio (median) | ratios |",
              "|---|---:|---:|---:|---:|---|"]
    for o in over:
        lines.append(f"| {o['op']} {o['mode']} aws-lc | {o['concurrency']} | {o['run_one_cpu_us']:.0f} | "
                     f"{o['bench_store_cpu_us']:.0f} | {o['ratio_median']:.3f} | "
                     + ", ".join(f"{x:.3f}" for x in o["ratios"]) + " |")
    text = "\n".join(lines) + "\n"
    open(os.path.join(a.out, "results.md"), "w").write(text)
    print(text)


if __name__ == "__main__":
    main()
