#!/usr/bin/env bash
# Runs a command with the test Kubernetes API server (../shared/tools/k8s-test-apiserver:
# Kubernetes 1.36's CRD machinery on etcd) started on 127.0.0.1 and KUBECONFIG pointing at
# it, and stops the server afterwards.
#
# If the server's binaries are not built (its build.sh failed or never ran), the command
# runs with PQBENCH_K8S_SKIP set to the reason: the API-server tests then say so loudly and
# skip, and every other test runs.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
TOOL=${K8S_TEST_APISERVER:-$ROOT/../shared/tools/k8s-test-apiserver}
W=${K8S_TEST_APISERVER_WORK:-${XDG_CACHE_HOME:-$HOME/.cache}/k8s-test-apiserver}
if [ ! -f "$TOOL/start.sh" ] || [ ! -x "$W/bin/crdserver" ] || [ ! -x "$W/bin/etcd" ]; then
    reason="the test API server is not built (need $TOOL/start.sh and $W/bin/crdserver); build it with: bash $TOOL/build.sh"
    echo "*** WARNING: $reason ***" >&2
    PQBENCH_K8S_SKIP="$reason" exec "$@"
fi
RUN=$(mktemp -d "${TMPDIR:-/tmp}/pqbench-k8s.XXXXXX")/run
export RUN
trap 'bash "$TOOL/stop.sh" >/dev/null 2>&1 || true; rm -rf "$(dirname "$RUN")"' EXIT
bash "$TOOL/start.sh"
export KUBECONFIG="$RUN/kubeconfig"
"$@"
