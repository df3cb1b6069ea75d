#!/usr/bin/env python3
"""Migration throughput by object size (issue 42, item 4).

For each object size, a fresh bucket of N classical objects (v1 x25519, written by
`pqbench put`) is moved to ML-KEM-768 by `pqbench migrate` (re-encryption, verified with
--verify-secret, concurrency 4), the client pinned to CPU 0 and the embedded S3 server
(`pqbench serve-s3`) to CPU 1. Before each move `pqbench inventory` estimates it; the
table puts its time floor beside the measured time. Repeated --reps times per size, the
sizes interleaved round by round. A bucket each, because the embedded server (s3s-fs) walks
the whole bucket for every prefix listing, and migrate lists each key twice: in one shared
bucket every round would be slower than the last.

Per size: objects/s, plaintext MiB/s, client CPU per object (user + system of the migrate
process, from wait4), the server's CPU per object (/proc/PID/stat), each as the mean over the repetitions with its min-max.

Re-wrap (FORMAT-v2.md §10) is designed, not built, so it has no column.

Usage: scripts/bench-migrate.py [--pqbench target/release/pqbench] [--reps 3]
       [--out target/bench-migrate]
Writes <out>/results.json and <out>/results.md and prints the table.
"""
import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

SIZES = [("4KiB", 4096, 200), ("64KiB", 65536, 200), ("1MiB", 1 << 20, 60), ("16MiB", 16 << 20, 6)]


def run(cmd, env, check=True):
    r = subprocess.run(cmd, env=env, capture_output=True, text=True)
    if check and r.returncode != 0:
        sys.exit(f"failed: {' '.join(cmd)}\n{r.stderr}")
    return r


def fill(a, env, tmp, bucket, size, n):
    src = os.path.join(tmp, f"in-{size}")
    if not os.path.exists(src):
        with open(src, "wb") as f:
            f.write(os.urandom(size))
    procs = []
    for i in range(n):
        cmd = [a.pqbench, "put", "--bucket", bucket, "--key", f"m/o{i:04d}",
               "--mode", "x25519", "--recipient", os.path.join(tmp, "old", "recipient.pub"),
               "--in", src]
        if i == 0:
            run(cmd + ["--create-bucket"], env)
            continue
        procs.append(subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL,
                                      stderr=subprocess.PIPE))
        if len(procs) >= 4:
            p = procs.pop(0)
            if p.wait() != 0:
                sys.exit(f"put failed: {p.stderr.read().decode()}")
    for p in procs:
        if p.wait() != 0:
            sys.exit(f"put failed: {p.stderr.read().decode()}")


def migrate(a, env, tmp, bucket):
    journal = os.path.join(tmp, "journal-" + bucket)
    cmd = ["taskset", "-c", "0", a.pqbench, "migrate", "--bucket", bucket, "--prefix",
           "m/", "--secret", os.path.join(tmp, "old", "recipient.key"),
           "--recipient", os.path.join(tmp, "new", "recipient.pub"),
           "--verify-secret", os.path.join(tmp, "new", "recipient.key"),
           "--journal", journal, "--concurrency", "4"]
    t0 = time.monotonic()
    p = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    _, status, ru = os.wait4(p.pid, 0)
    wall = time.monotonic() - t0
    out, err = p.stdout.read().decode(), p.stderr.read().decode()
    if os.waitstatus_to_exitcode(status) != 0:
        sys.exit(f"migrate failed: {out}\n{err}")
    report = json.load(open(os.path.join(journal, "report.json")))
    return wall, ru.ru_utime + ru.ru_stime, report


def proc_cpu(pid):
    """utime + stime of a process, in seconds (/proc/PID/stat fields 14 and 15)."""
    fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def estimate(a, env, bucket):
    r = run(["taskset", "-c", "0", a.pqbench, "inventory", "--bucket", bucket, "--prefix",
             "m/", "--cores", "1", "--concurrency", "4", "--link-gbps", "100",
             "--json"], env)
    return json.loads(r.stdout)["estimate"]


def summary(xs):
    return {"mean": statistics.fmean(xs), "min": min(xs), "max": max(xs)}


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--pqbench", default="target/release/pqbench")
    p.add_argument("--reps", type=int, default=3)
    p.add_argument("--out", default="target/bench-migrate")
    a = p.parse_args()
    a.pqbench = os.path.abspath(a.pqbench)
    os.makedirs(a.out, exist_ok=True)
    tmp = tempfile.mkdtemp(prefix="pqbench-bench-migrate-")
    server = None
    try:
        env_file = os.path.join(tmp, "s3.env")
        server = subprocess.Popen(["taskset", "-c", "1", a.pqbench, "serve-s3", "--dir",
                                   os.path.join(tmp, "s3"), "--env-file", env_file],
                                  stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        for _ in range(100):
            if os.path.exists(env_file):
                break
            time.sleep(0.05)
        else:
            sys.exit("serve-s3 wrote no env file")
        env = dict(os.environ)
        for line in open(env_file):
            line = line.strip()
            if "=" in line and not line.startswith("#"):
                k, v = line.removeprefix("export ").split("=", 1)
                env[k] = v.strip("'\"")
        env["TMPDIR"] = tmp
        for name, mode in (("old", "x25519"), ("new", "ml-kem-768")):
            run([a.pqbench, "keygen", "--mode", mode, "--out", os.path.join(tmp, name)], env)
        rows = {name: [] for name, _, _ in SIZES}
        for rep in range(a.reps):
            for name, size, n in SIZES:
                prefix = f"b{rep}-{name.lower()}"
                fill(a, env, tmp, prefix, size, n)
                est = estimate(a, env, prefix)
                server_before = proc_cpu(server.pid)
                wall, cpu, report = migrate(a, env, tmp, prefix)
                server_cpu = proc_cpu(server.pid) - server_before
                if report["moved"] != n or report["failed"] != 0:
                    sys.exit(f"{prefix}: moved {report['moved']} of {n}: {report}")
                rows[name].append({"objects": n, "size": size, "wall_s": wall, "cpu_s": cpu,
                                   "estimate_s": est["seconds"], "estimate_bound": est["bound"],
                                   "estimate_cpu_s": est["cpu_seconds"],
                                   "server_cpu_s": server_cpu})
                print(f"rep {rep} {name}: {n} objects in {wall:.2f} s, CPU {cpu:.2f} s, "
                      f"server CPU {server_cpu:.2f} s "
                      f"(inventory's floor {est['seconds']:.2f} s, {est['bound']})",
                      file=sys.stderr)
        results = []
        for name, size, n in SIZES:
            rs = rows[name]
            results.append({
                "size": name, "objects": n, "reps": len(rs),
                "objects_per_s": summary([r["objects"] / r["wall_s"] for r in rs]),
                "mib_per_s": summary([r["objects"] * size / r["wall_s"] / (1 << 20) for r in rs]),
                "cpu_us_per_object": summary([r["cpu_s"] / r["objects"] * 1e6 for r in rs]),
                "server_cpu_us_per_object": summary([r["server_cpu_s"] / r["objects"] * 1e6 for r in rs]),
                "wall_s": summary([r["wall_s"] for r in rs]),
                "inventory_floor_s": summary([r["estimate_s"] for r in rs]),
                "inventory_cpu_s": summary([r["estimate_cpu_s"] for r in rs]),
                "runs": rs,
            })
        json.dump({"results": results, "reps": a.reps,
                   "command": " ".join(sys.argv)}, open(os.path.join(a.out, "results.json"), "w"),
                  indent=2)
        f = lambda s, d=1: f"{s['mean']:.{d}f} ({s['min']:.{d}f}–{s['max']:.{d}f})"
        md = ["| size | objects | objects/s | MiB/s | client CPU µs/object | server CPU µs/object | wall s | inventory's floor s | inventory's CPU s |",
              "|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
        for r in results:
            md.append(f"| {r['size']} | {r['objects']} | {f(r['objects_per_s'])} | {f(r['mib_per_s'])} | "
                      f"{f(r['cpu_us_per_object'], 0)} | {f(r['server_cpu_us_per_object'], 0)} | {f(r['wall_s'], 2)} | {f(r['inventory_floor_s'], 2)} | "
                      f"{f(r['inventory_cpu_s'], 2)} |")
        text = "\n".join(md) + "\n"
        open(os.path.join(a.out, "results.md"), "w").write(text)
        print(text)
    finally:
        if server:
            server.terminate()
            server.wait()
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
