#!/usr/bin/env python3
"""Checks the Grafana dashboard of the Helm chart against the closed set of metric names.

Usage: dashboard-check.py DASHBOARD_JSON METRICS_TXT
(scripts/chart-check.sh runs it with the chart venv's python on
charts/pqbench/dashboards/pqbench.json and charts/pqbench/dashboards/metrics.txt; it needs
only the standard library.)

Checks:
  - the file is JSON, uid and title `pqbench`, schemaVersion >= 36 (datasource references
    as {type, uid} objects);
  - template variables: `datasource` (type datasource, prometheus); `mode`, `backend` and
    `operation` (type query on ${datasource}, label_values(pqbench_requests_total, <name>),
    multi, include all);
  - panel ids are unique; every panel but a row (which holds no queries) has the datasource
    {type: prometheus, uid: ${datasource}}, a unit, a grid position and at least one target,
    and every target has that datasource and a non-empty expr;
  - every PromQL expr (and variable query): each identifier beginning `pqbench_` (outside
    string literals) is a family of metrics.txt, or `<histogram>_bucket|_sum|_count`; a
    histogram is never used bare; `_bucket` only under histogram_quantile(..., by (..., le));
    each worker metric (every family not `pqbench_operator_*`) is selected with
    mode=~"$mode", backend=~"$backend", operation=~"$operation"; range windows are
    $__rate_interval or $__range; every `$variable` is defined or a Grafana built-in;
  - coverage: every family of metrics.txt is used by at least one panel (no exception, not
    even pqbench_operator_leader: the "Leaders" stat shows it).

metrics.txt: one family name per line, as PromQL sees it (counters with `_total`,
histograms by base name); `#` starts a comment line, blank lines are ignored. The list
carries no types, so a family is taken as a histogram when its name does not end in
`_total` and ends in a base unit (`_seconds`, `_bytes`): every histogram of the set is so
named, and a gauge named that way would fail here loudly rather than pass silently.
"""
import json
import re
import sys
from pathlib import Path

UID = TITLE = "pqbench"
DATASOURCE = {"type": "prometheus", "uid": "${datasource}"}
FILTER_VARS = ("mode", "backend", "operation")
HISTOGRAM_SUFFIXES = ("_bucket", "_sum", "_count")
HISTOGRAM_UNITS = ("_seconds", "_bytes")
BUILTIN_VARS = {"__rate_interval", "__range", "__interval", "__range_s", "__interval_ms", "__all"}
NAME = re.compile(r"(?<![A-Za-z0-9_:])pqbench_[A-Za-z0-9_:]*")
STRING = re.compile(r'"(?:[^"\\]|\\.)*"|\'(?:[^\'\\]|\\.)*\'|`[^`]*`')
SELECTOR = re.compile(r"(?<![A-Za-z0-9_:])(pqbench_[A-Za-z0-9_:]*)\s*(\{[^}]*\})?")
RANGE = re.compile(r"\[([^\]]*)\]")
VARIABLE = re.compile(r"\$\{?([A-Za-z_][A-Za-z0-9_]*)")

failures = []


def fail(msg):
    failures.append(msg)
    print(f"  FAIL: {msg}", file=sys.stderr)


def read_metrics(path):
    names = []
    for n, line in enumerate(path.read_text().splitlines(), 1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        if not re.fullmatch(r"pqbench_[a-z0-9_]+", line):
            fail(f"{path}:{n}: `{line}` is not a metric name (one pqbench_ name per line)")
        elif line in names:
            fail(f"{path}:{n}: {line} is listed twice")
        else:
            names.append(line)
    if not names:
        fail(f"{path}: lists no metric")
    return names


def is_histogram(family):
    return not family.endswith("_total") and family.endswith(HISTOGRAM_UNITS)


def all_panels(panels):
    for p in panels:
        yield p
        # A collapsed row carries its panels inside it.
        yield from all_panels(p.get("panels", []) or [])


def check_expr(where, expr, families, variables, used, filtered=True):
    """Checks one PromQL expression; adds the families it uses to `used`. `filtered`: worker
    metrics must be selected by the filter variables (not in the variables' own queries)."""
    bare = STRING.sub('""', expr)
    for name in NAME.findall(bare):
        if name in families:
            if is_histogram(name):
                fail(f"{where}: {name} is a histogram, it has no bare series (use _bucket, _sum or _count)")
            used.add(name)
            continue
        base = next((name[: -len(s)] for s in HISTOGRAM_SUFFIXES if name.endswith(s)), None)
        if base in families and is_histogram(base):
            used.add(base)
            if name.endswith("_bucket") and not (
                "histogram_quantile(" in bare and re.search(r"\bby\s*\([^)]*\ble\b", bare)
            ):
                fail(f"{where}: {name} outside histogram_quantile(..., sum by (..., le) (...))")
            continue
        fail(f"{where}: {name} is not in metrics.txt (nor a _bucket/_sum/_count of a histogram there)")
    for name, selector in SELECTOR.findall(expr):
        if not filtered or name.startswith("pqbench_operator_"):
            continue
        for var in FILTER_VARS:
            if not re.search(rf'\b{var}\s*=~\s*"\${var}"', selector or ""):
                fail(f'{where}: worker metric {name} is not selected with {var}=~"${var}"')
    for window in RANGE.findall(bare):
        if window not in ("$__rate_interval", "$__range"):
            fail(f"{where}: range window [{window}]: use [$__rate_interval] or [$__range]")
    for var in VARIABLE.findall(expr):
        if var not in variables and var not in BUILTIN_VARS:
            fail(f"{where}: ${var} is no variable of the dashboard")


def main():
    if len(sys.argv) != 3:
        print(__doc__.split("\n\n")[1], file=sys.stderr)
        sys.exit(2)
    dashboard_path, metrics_path = Path(sys.argv[1]), Path(sys.argv[2])
    families = read_metrics(metrics_path)
    try:
        d = json.loads(dashboard_path.read_text())
    except (OSError, ValueError) as e:
        fail(f"{dashboard_path}: not JSON: {e}")
        return
    if d.get("uid") != UID or d.get("title") != TITLE:
        fail(f"{dashboard_path}: uid {d.get('uid')!r} and title {d.get('title')!r}, expected {UID!r} and {TITLE!r}")
    if not isinstance(d.get("schemaVersion"), int) or d["schemaVersion"] < 36:
        fail(f"{dashboard_path}: schemaVersion {d.get('schemaVersion')!r} < 36")

    used = set()
    variables = {}
    for v in d.get("templating", {}).get("list", []):
        variables[v.get("name")] = v
    ds = variables.get("datasource")
    if not ds or ds.get("type") != "datasource" or ds.get("query") != "prometheus":
        fail("templating: no variable `datasource` of type datasource with query prometheus")
    for name in FILTER_VARS:
        v = variables.get(name)
        if not v:
            fail(f"templating: no variable `{name}`")
            continue
        where = f"variable {name}"
        query = v.get("query")
        query = query.get("query") if isinstance(query, dict) else query
        expected = f"label_values(pqbench_requests_total, {name})"
        if v.get("type") != "query" or re.sub(r"\s", "", query or "") != re.sub(r"\s", "", expected):
            fail(f"{where}: expected a query variable {expected}, found {v.get('type')} {query!r}")
        if v.get("datasource") != DATASOURCE:
            fail(f"{where}: datasource {v.get('datasource')!r}, expected {DATASOURCE}")
        if not (v.get("multi") and v.get("includeAll")):
            fail(f"{where}: must be multi-value with include all")
        if query:
            check_expr(where, query, families, variables, set(), filtered=False)

    ids = set()
    n_panels = n_targets = 0
    for p in all_panels(d.get("panels", [])):
        where = f"panel {p.get('id')} {p.get('title')!r}"
        if p.get("id") in ids or not isinstance(p.get("id"), int):
            fail(f"{where}: panel id missing or not unique")
        ids.add(p.get("id"))
        if not {"h", "w", "x", "y"} <= set(p.get("gridPos", {})):
            fail(f"{where}: no gridPos")
        if p.get("type") == "row":
            if p.get("targets"):
                fail(f"{where}: a row has no queries")
            continue
        n_panels += 1
        if p.get("datasource") != DATASOURCE:
            fail(f"{where}: datasource {p.get('datasource')!r}, expected {DATASOURCE}")
        if not p.get("fieldConfig", {}).get("defaults", {}).get("unit"):
            fail(f"{where}: no unit (fieldConfig.defaults.unit)")
        targets = p.get("targets") or []
        if not targets:
            fail(f"{where}: no target")
        for t in targets:
            n_targets += 1
            twhere = f"{where} target {t.get('refId')}"
            if t.get("datasource") != DATASOURCE:
                fail(f"{twhere}: datasource {t.get('datasource')!r}, expected {DATASOURCE}")
            if not (t.get("expr") or "").strip():
                fail(f"{twhere}: no expr")
                continue
            check_expr(twhere, t["expr"], families, variables, used)

    for name in families:
        if name not in used:
            fail(f"{metrics_path}: {name} is used by no panel of {dashboard_path}")
    if not failures:
        print(f"  {dashboard_path}: {n_panels} panels, {n_targets} queries, "
              f"{len(used)} of the {len(families)} families of {metrics_path} used, none outside it")


main()
if failures:
    print(f"\n{len(failures)} dashboard failure(s) above", file=sys.stderr)
    sys.exit(1)
