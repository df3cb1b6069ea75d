#!/usr/bin/env python3
"""The timing table .ci/run prints at its end (issue 34).

    scripts/ci-timings.py TIMINGS START [JUNIT...]

TIMINGS: the lines scripts/timed appended (name, start, end, exit status, CPU seconds;
tab-separated). START: the Unix time .ci/run started at. JUNIT: cargo-nextest's JUnit reports
(target/nextest/<profile>/junit.xml), for the ten slowest test binaries.

Stages are listed in the order they started, with their start (minutes:seconds after
.ci/run's) and their length; background builds run beside the stages that start after
them. The CPU column is the user and system time of the stage's processes: on two cores a
stage can use at most twice its length, and background stages share the cores with what
runs beside them. A stage that has not ended (the run failed in it) has no line: the table
is printed on every exit. PQBENCH_CI_CPU (set by .ci/run) is the CPU seconds of the whole
run, for the total line.
"""

import os
import sys
import time
import xml.etree.ElementTree as ET
from datetime import datetime


def mmss(seconds):
    seconds = max(0, round(seconds))
    return f"{seconds // 60:d}:{seconds % 60:02d}"


def stages(path):
    rows = []
    try:
        with open(path, encoding="utf-8") as f:
            for line in f:
                parts = line.rstrip("\n").split("\t")
                if len(parts) != 5:
                    continue
                name, start, end, rc, cpu = parts
                rows.append((float(start), float(end), name, rc, float(cpu)))
    except FileNotFoundError:
        pass
    return sorted(rows)


def binaries(paths):
    """Per test binary: (span in s, summed test time in s, tests, failures)."""
    out = {}
    for path in paths:
        try:
            root = ET.parse(path).getroot()
        except (FileNotFoundError, ET.ParseError):
            continue
        for suite in root.iter("testsuite"):
            starts, ends, total, n, failed = [], [], 0.0, 0, 0
            for case in suite.iter("testcase"):
                took = float(case.get("time", "0") or 0)
                n += 1
                total += took
                if case.find("failure") is not None or case.find("error") is not None:
                    failed += 1
                ts = case.get("timestamp")
                if ts:
                    t = datetime.fromisoformat(ts).timestamp()
                    starts.append(t)
                    ends.append(t + took)
            span = max(ends) - min(starts) if starts else total
            out[suite.get("name", "?")] = (span, total, n, failed)
    return out


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    timings, start = sys.argv[1], float(sys.argv[2])
    rows = stages(timings)
    width = max([len(r[2]) for r in rows] + [20])
    print(f"== timing table ({mmss(time.time() - start)} in all)")
    print(f"{'stage':<{width}}  {'start':>6}  {'took':>6}  {'cpu':>6}  exit")
    for s, e, name, rc, cpu in rows:
        print(f"{name:<{width}}  {mmss(s - start):>6}  {mmss(e - s):>6}  {mmss(cpu):>6}  {rc}")
    total_cpu = os.environ.get("PQBENCH_CI_CPU")
    if total_cpu:
        wall = time.time() - start
        print(f"{'all of .ci/run':<{width}}  {'0:00':>6}  {mmss(wall):>6}  {mmss(float(total_cpu)):>6}")
    bins = binaries(sys.argv[3:])
    if bins:
        slow = sorted(bins.items(), key=lambda kv: -kv[1][0])[:10]
        w = max(len(k) for k, _ in slow)
        print()
        print("ten slowest test binaries (cargo nextest: first test's start to last test's end,")
        print("and the tests' own times added up; tests of different binaries run side by side)")
        print(f"{'binary':<{w}}  {'span':>6}  {'summed':>6}  tests  failed")
        for name, (span, total, n, failed) in slow:
            print(f"{name:<{w}}  {mmss(span):>6}  {mmss(total):>6}  {n:>5}  {failed:>6}")


if __name__ == "__main__":
    main()
