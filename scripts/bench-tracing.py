#!/usr/bin/env python3
"""What request tracing costs (issue 7): client CPU per request of `pqbench run-one` with
tracing off and at sample ratios 0, 0.01 and 1, measured side by side in one invocation,
the configurations interleaved round by round (these machines are shared and noisy).

Spans go over OTLP/gRPC to Rotel (`rotel` from PyPI, the project's venv), a separate
collector process with the blackhole exporter, so the CPU measured is the worker's own:
the sampling decision, building the spans, and the batch exporter's thread (serialising and
sending). The S3 server is `pqbench serve-s3` in another process, as in every run-one.

Usage: scripts/bench-tracing.py [--pqbench target/release/pqbench] [--rounds 5]
       [--measured 5s] [--op get] [--size 4KiB] [--concurrency 2] [--out target/bench-tracing]
Writes <out>/results.json and <out>/results.md and prints the table.
"""
import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import time

CONFIGS = [("off", None), ("ratio 0", "0"), ("ratio 0.01", "0.01"), ("ratio 1", "1")]


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def rotel_agent(python):
    r = subprocess.run([python, "-c", "import os, rotel; print(os.path.join("
                        "os.path.dirname(rotel.__file__), 'rotel-agent'))"],
                       capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"rotel is not installed for {python}: make python ({r.stderr.strip()})")
    return r.stdout.strip()


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--pqbench", default="target/release/pqbench")
    p.add_argument("--python", default=os.environ.get("PQBENCH_PYTHON", ".venv/bin/python"))
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--warmup", default="1s")
    p.add_argument("--measured", default="5s")
    p.add_argument("--op", default="get")
    p.add_argument("--mode", default="ml-kem-768")
    p.add_argument("--size", default="4KiB")
    p.add_argument("--concurrency", type=int, default=2)
    p.add_argument("--out", default="target/bench-tracing")
    a = p.parse_args()
    os.makedirs(a.out, exist_ok=True)

    port = free_port()
    log = open(os.path.join(a.out, "rotel.log"), "w")
    rotel = subprocess.Popen([rotel_agent(a.python), "start", "--otlp-grpc-endpoint",
                              f"127.0.0.1:{port}", "--otlp-http-endpoint",
                              f"127.0.0.1:{free_port()}", "--exporter", "blackhole",
                              "--pid-file", os.path.join(a.out, "rotel.pid"),
                              "--log-file", os.path.join(a.out, "rotel-daemon.log")],
                             stdout=log, stderr=subprocess.STDOUT)
    try:
        for _ in range(100):
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                time.sleep(0.1)
        else:
            sys.exit("rotel did not start")
        endpoint = f"http://127.0.0.1:{port}"
        samples = {name: [] for name, _ in CONFIGS}
        traced = {name: [] for name, _ in CONFIGS}
        for rnd in range(a.rounds):
            order = CONFIGS if rnd % 2 == 0 else list(reversed(CONFIGS))
            for name, ratio in order:
                run_id = f"tr-{name.replace(' ', '-')}-{rnd}"
                cmd = [a.pqbench, "run-one", "--mode", a.mode, "--op", a.op, "--size", a.size,
                       "--concurrency", str(a.concurrency), "--warmup", a.warmup,
                       "--measured", a.measured, "--run-id", run_id,
                       "--out", os.path.join(a.out, "runs"), "--json"]
                if ratio is not None:
                    cmd += ["--otlp-endpoint", endpoint, "--otlp-protocol", "grpc",
                            "--trace-sample-ratio", ratio]
                env = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
                r = subprocess.run(cmd, capture_output=True, text=True, env=env)
                if r.returncode not in (0, 1) or not r.stdout.strip():
                    sys.exit(f"run-one failed: {' '.join(cmd)}\n{r.stderr}")
                s = json.loads(r.stdout)
                samples[name].append(s["cpu"]["cpuPerRequestUs"])
                line = next((l for l in r.stderr.splitlines() if l.startswith("traces: ")), "")
                traced[name].append(line)
                print(f"round {rnd + 1}/{a.rounds} {name:>10}: {s['cpu']['cpuPerRequestUs']:.1f} "
                      f"µs CPU/request, {s['throughputRps']:.0f} req/s"
                      + (f"  [{line}]" if line else ""), flush=True)
    finally:
        rotel.terminate()
        rotel.wait()

    base = statistics.median(samples["off"])
    rows = []
    for name, ratio in CONFIGS:
        med = statistics.median(samples[name])
        ratios = [x / y for x, y in zip(samples[name], samples["off"])]
        rows.append({"config": name, "sample_ratio": ratio, "cpu_us_median": med,
                     "cpu_us": samples[name], "delta_us": med - base,
                     "ratio_to_off_median": statistics.median(ratios),
                     "ratio_to_off_min": min(ratios), "ratio_to_off_max": max(ratios),
                     "exporter": traced[name][-1] if traced[name] else ""})
    cell = f"{a.op} {a.size} {a.mode} aws-lc, concurrency {a.concurrency}, closed loop"
    json.dump({"cell": cell, "rounds": a.rounds, "measured": a.measured, "rows": rows},
              open(os.path.join(a.out, "results.json"), "w"), indent=2)
    lines = [f"Tracing cost, {cell}; {a.rounds} rounds of {a.measured}, interleaved; "
             "client CPU per request (process CPU over the measured window / requests).", "",
             "| tracing | CPU µs/request (median) | Δ vs off, µs | ratio to off (median, min–max of rounds) |",
             "|---|---:|---:|---|"]
    for r in rows:
        lines.append(f"| {r['config']} | {r['cpu_us_median']:.1f} | {r['delta_us']:+.1f} | "
                     f"{r['ratio_to_off_median']:.3f} ({r['ratio_to_off_min']:.3f}–"
                     f"{r['ratio_to_off_max']:.3f}) |")
    md = "\n".join(lines) + "\n"
    open(os.path.join(a.out, "results.md"), "w").write(md)
    print()
    print(md)


if __name__ == "__main__":
    main()
