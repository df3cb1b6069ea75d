#!/usr/bin/env python3
"""Migration throughput by object size and method (issue 42, item 4).

For each object size and each method, a fresh bucket of N classical objects (format v2.1,
X25519, the header in metadata, written by `pqbench put --rewrappable`) is moved to
ML-KEM-768 by `pqbench migrate` (concurrency 4), the client pinned to CPU 0 and the S3
server to CPU 1: the embedded one (`pqbench serve-s3`, the default) or Garage (`--server
garage`, its binary from $PQBENCH_GARAGE or PATH: a real object store whose listings are
indexed and whose CopyObject shares the source's data blocks). The two methods, side by side
on the same kind of objects:

  re-encrypt  decrypt each version and seal it anew (the default);
  re-wrap     `--rewrap`: a new header for the unchanged body, one server-side CopyObject
              (FORMAT-v2.md §10; the old data key stays).

Both verify each new version from its stored header and size; with --verify both also open
it with the new key (--verify-secret), which reads every body back through the client.
Before each move `pqbench inventory` estimates a re-encryption; the table puts its time
floor beside the measured time. Repeated --reps times, sizes and methods interleaved round
by round. On the embedded server a bucket each, because s3s-fs walks the whole bucket for
every prefix listing, and migrate lists each key twice: in one shared bucket every round
would be slower than the last (on Garage, a prefix each in one bucket).

Per size and method: objects/s, plaintext MiB/s, client CPU per object (user + system of
the migrate process, from wait4), the server's CPU per object (/proc/PID/stat), each as the
mean over the repetitions with its min-max; and re-wrap's objects/s over re-encryption's.

Usage: scripts/bench-migrate.py [--pqbench target/release/pqbench] [--reps 3] [--verify]
       [--server embedded|garage] [--out target/bench-migrate]
Writes <out>/results.json and <out>/results.md and prints the table.
"""
import argparse
import json
import os
import secrets
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time

SIZES = [("4KiB", 4096, 200), ("64KiB", 65536, 200), ("1MiB", 1 << 20, 60), ("16MiB", 16 << 20, 6)]
METHODS = [("re-encrypt", []), ("re-wrap", ["--rewrap"])]


def run(cmd, env, check=True):
    r = subprocess.run(cmd, env=env, capture_output=True, text=True)
    if check and r.returncode != 0:
        sys.exit(f"failed: {' '.join(cmd)}\n{r.stderr}")
    return r


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


GARAGE_BUCKET = "pqbench-bench"


def start_garage(tmp, env):
    """A single-node Garage on CPU 1 with one bucket; its S3 settings go into env."""
    binary = os.environ.get("PQBENCH_GARAGE") or shutil.which("garage")
    if not binary:
        sys.exit("--server garage: no garage binary (PQBENCH_GARAGE or PATH; scripts/garage-install.sh)")
    d = os.path.join(tmp, "garage")
    os.makedirs(d)
    s3_port, rpc_port, admin_port = free_port(), free_port(), free_port()
    conf = os.path.join(d, "garage.toml")
    with open(conf, "w") as f:
        f.write(f"""metadata_dir = "{d}/meta"
data_dir = "{d}/blocks"
db_engine = "lmdb"
replication_factor = 1
rpc_bind_addr = "127.0.0.1:{rpc_port}"
rpc_public_addr = "127.0.0.1:{rpc_port}"
rpc_secret = "{secrets.token_hex(32)}"

[s3_api]
s3_region = "garage"
api_bind_addr = "127.0.0.1:{s3_port}"
root_domain = ".s3.garage.localhost"

[admin]
api_bind_addr = "127.0.0.1:{admin_port}"
""")
    access, secret = "GK" + secrets.token_hex(12), secrets.token_hex(32)
    genv = dict(os.environ, GARAGE_DEFAULT_ACCESS_KEY=access, GARAGE_DEFAULT_SECRET_KEY=secret,
                GARAGE_DEFAULT_BUCKET=GARAGE_BUCKET, RUST_LOG="garage=warn")
    log = open(os.path.join(d, "garage.log"), "w")
    server = subprocess.Popen(["taskset", "-c", "1", binary, "-c", conf, "server", "--single-node",
                               "--default-access-key", "--default-bucket"],
                              env=genv, stdout=log, stderr=log)
    env.update(AWS_ENDPOINT_URL=f"http://127.0.0.1:{s3_port}", AWS_ACCESS_KEY_ID=access,
               AWS_SECRET_ACCESS_KEY=secret, AWS_REGION="garage")
    return server


def fill(a, env, tmp, bucket, size, n, prefix):
    src = os.path.join(tmp, f"in-{size}")
    if not os.path.exists(src):
        with open(src, "wb") as f:
            f.write(os.urandom(size))
    procs = []
    for i in range(n):
        cmd = [a.pqbench, "put", "--bucket", bucket, "--key", f"{prefix}o{i:04d}",
               "--format", "v2", "--rewrappable", "--header", "metadata",
               "--recipient", os.path.join(tmp, "old", "recipient.pub"), "--in", src]
        if i == 0:
            run(cmd + (["--create-bucket"] if a.server == "embedded" else []), env)
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


def migrate(a, env, tmp, bucket, prefix, how):
    journal = os.path.join(tmp, "journal-" + bucket + "-" + prefix.strip("/"))
    cmd = ["taskset", "-c", "0", a.pqbench, "migrate", "--bucket", bucket, "--prefix",
           prefix, "--secret", os.path.join(tmp, "old", "recipient.key"),
           "--recipient", os.path.join(tmp, "new", "recipient.pub"),
           "--journal", journal, "--concurrency", "4"] + how
    if a.verify:
        cmd += ["--verify-secret", os.path.join(tmp, "new", "recipient.key")]
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


def estimate(a, env, bucket, prefix):
    r = run(["taskset", "-c", "0", a.pqbench, "inventory", "--bucket", bucket, "--prefix",
             prefix, "--cores", "1", "--concurrency", "4", "--link-gbps", "100",
             "--json"], env)
    return json.loads(r.stdout)["estimate"]


def summary(xs):
    return {"mean": statistics.fmean(xs), "min": min(xs), "max": max(xs)}


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--pqbench", default="target/release/pqbench")
    p.add_argument("--reps", type=int, default=3)
    p.add_argument("--out", default="target/bench-migrate")
    p.add_argument("--server", choices=["embedded", "garage"], default="embedded")
    p.add_argument("--verify", action="store_true",
                   help="open every new version with the new key (--verify-secret)")
    a = p.parse_args()
    a.pqbench = os.path.abspath(a.pqbench)
    os.makedirs(a.out, exist_ok=True)
    tmp = tempfile.mkdtemp(prefix="pqbench-bench-migrate-")
    server = None
    try:
        env = dict(os.environ)
        if a.server == "garage":
            server = start_garage(tmp, env)
            for _ in range(600):
                if run([a.pqbench, "ls", "--bucket", GARAGE_BUCKET], env, check=False).returncode == 0:
                    break
                if server.poll() is not None:
                    sys.exit("garage exited during startup")
                time.sleep(0.1)
            else:
                sys.exit("garage did not answer within 60 s")
        else:
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
            for line in open(env_file):
                line = line.strip()
                if "=" in line and not line.startswith("#"):
                    k, v = line.removeprefix("export ").split("=", 1)
                    env[k] = v.strip("'\"")
        env["TMPDIR"] = tmp
        for name, mode in (("old", "x25519"), ("new", "ml-kem-768")):
            run([a.pqbench, "keygen", "--mode", mode, "--out", os.path.join(tmp, name)], env)
        rows = {(name, m): [] for name, _, _ in SIZES for m, _ in METHODS}
        for rep in range(a.reps):
            for name, size, n in SIZES:
                for method, how in METHODS:
                    run_name = f"b{rep}-{name.lower()}-{method}"
                    if a.server == "garage":
                        bucket, prefix = GARAGE_BUCKET, run_name + "/"
                    else:
                        bucket, prefix = run_name, "m/"
                    fill(a, env, tmp, bucket, size, n, prefix)
                    est = estimate(a, env, bucket, prefix)
                    server_before = proc_cpu(server.pid)
                    wall, cpu, report = migrate(a, env, tmp, bucket, prefix, how)
                    server_cpu = proc_cpu(server.pid) - server_before
                    if report["moved"] != n or report["failed"] != 0:
                        sys.exit(f"{run_name}: moved {report['moved']} of {n}: {report}")
                    if report["rewrapped"] != (n if how else 0):
                        sys.exit(f"{run_name}: {report['rewrapped']} re-wrapped of {n}: {report}")
                    rows[(name, method)].append({
                        "objects": n, "size": size, "wall_s": wall, "cpu_s": cpu,
                        "estimate_s": est["seconds"], "estimate_bound": est["bound"],
                        "estimate_cpu_s": est["cpu_seconds"], "server_cpu_s": server_cpu})
                    print(f"rep {rep} {name} {method}: {n} objects in {wall:.2f} s, "
                          f"CPU {cpu:.2f} s, server CPU {server_cpu:.2f} s "
                          f"(inventory's floor {est['seconds']:.2f} s, {est['bound']})",
                          file=sys.stderr)
        results = []
        for (name, method), rs in rows.items():
            size = rs[0]["size"]
            n = rs[0]["objects"]
            results.append({
                "size": name, "method": method, "objects": n, "reps": len(rs),
                "objects_per_s": summary([r["objects"] / r["wall_s"] for r in rs]),
                "mib_per_s": summary([r["objects"] * size / r["wall_s"] / (1 << 20) for r in rs]),
                "cpu_us_per_object": summary([r["cpu_s"] / r["objects"] * 1e6 for r in rs]),
                "server_cpu_us_per_object": summary([r["server_cpu_s"] / r["objects"] * 1e6 for r in rs]),
                "wall_s": summary([r["wall_s"] for r in rs]),
                "inventory_floor_s": summary([r["estimate_s"] for r in rs]),
                "inventory_cpu_s": summary([r["estimate_cpu_s"] for r in rs]),
                "runs": rs,
            })
        for r in results:
            if r["method"] == "re-wrap":
                base = next(x for x in results
                            if x["size"] == r["size"] and x["method"] == "re-encrypt")
                r["objects_per_s_vs_reencrypt"] = (r["objects_per_s"]["mean"]
                                                  / base["objects_per_s"]["mean"])
        json.dump({"results": results, "reps": a.reps, "verify": a.verify, "server": a.server,
                   "command": " ".join(sys.argv)}, open(os.path.join(a.out, "results.json"), "w"),
                  indent=2)
        f = lambda s, d=1: f"{s['mean']:.{d}f} ({s['min']:.{d}f}–{s['max']:.{d}f})"
        md = ["| size | method | objects | objects/s | × re-encrypt | MiB/s | client CPU µs/object | server CPU µs/object | wall s | inventory's floor s | inventory's CPU s |",
              "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
        for r in results:
            ratio = r.get("objects_per_s_vs_reencrypt")
            ratio = f"{ratio:.2f}" if ratio else ""
            md.append(f"| {r['size']} | {r['method']} | {r['objects']} | {f(r['objects_per_s'])} | {ratio} | {f(r['mib_per_s'])} | "
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
