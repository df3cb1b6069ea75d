#!/usr/bin/env bash
# End-to-end test on kind (`make e2e-kind`): creates the cluster of kind-config.yaml
# ("pqbench-e2e"), builds the operator, worker and probe images with Docker, loads them into the
# nodes, installs charts/pqbench with helm, then runs each scenario folder here (all of them,
# or those named) and checks what its `expect` file says. Needs docker, kind (>= 0.24),
# kubectl and helm on PATH; see README.md beside this script.
#
#   tests/e2e/kind/run.sh [--keep] [--no-build] [scenario...]
#
# --keep      leave the cluster (and the campaigns) for inspection; default: delete it
# --no-build  use the images already loaded (IMAGE_TAG), skip docker build and kind load
# Environment: KIND_CLUSTER (pqbench-e2e), KIND_NODE_IMAGE (kind's default), IMAGE_TAG (e2e).
#
# `expect` lines (`key: value`):
#   phase: P          the campaign must reach status.phase P (Succeeded or Failed)
#   timeout: 30m      how long to wait for it (default 10m)
#   message: TEXT     status.message must contain TEXT (case-insensitive)
#   verdicts: true    status.verdicts and status.verdictSummary must be set
#   fenced: true      the campaign's NetworkPolicies exist (<name>-minio, <name>-workers), no
#                     pod of it takes a Secret through its environment but MinIO, and
#                     status.images holds resolved digests (sha256)
#   reject: TEXT      `kubectl apply` must fail with TEXT in its error
#   patch: JSON       a merge patch applied after the campaign is accepted...
#   patch-reject: T   ...which must fail with T in its error
set -euo pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../../.." && pwd)
CLUSTER=${KIND_CLUSTER:-pqbench-e2e}
TAG=${IMAGE_TAG:-e2e}
OPERATOR_IMAGE=ghcr.io/pqbench/pqbench-operator:$TAG
WORKER_IMAGE=ghcr.io/pqbench/pqbench-worker:$TAG
PROBE_IMAGE=ghcr.io/pqbench/pqbench-probe:$TAG
RELEASE=pqbench
RELEASE_NS=pqbench-system
KUBECTX=kind-$CLUSTER

keep=0
build=1
scenarios=()
for arg in "$@"; do
    case "$arg" in
        --keep) keep=1 ;;
        --no-build) build=0 ;;
        -h | --help)
            sed -n '2,/^set -euo/p' "$0" | sed '$d'
            exit 0
            ;;
        -*)
            echo "unknown option $arg" >&2
            exit 2
            ;;
        *) scenarios+=("${arg%/}") ;;
    esac
done
if [ ${#scenarios[@]} -eq 0 ]; then
    for d in "$HERE"/*/; do
        [ -f "$d/expect" ] && scenarios+=("$(basename "$d")")
    done
fi
for s in "${scenarios[@]}"; do
    [ -f "$HERE/$s/expect" ] && [ -f "$HERE/$s/campaign.yaml" ] || {
        echo "no scenario $s (need $HERE/$s/campaign.yaml and expect)" >&2
        exit 2
    }
done

for tool in docker kind kubectl helm; do
    command -v "$tool" >/dev/null || {
        echo "e2e-kind needs $tool on PATH (see tests/e2e/kind/README.md)" >&2
        exit 2
    }
done

log() { echo "== e2e-kind: $*"; }
k() { kubectl --context "$KUBECTX" "$@"; }

# One `key: value` of a scenario's expect file (empty when absent).
expect() {
    sed -n "s/^$2: *//p" "$HERE/$1/expect" | head -n 1
}

cleanup() {
    if [ $keep = 1 ]; then
        log "cluster $CLUSTER kept (kind delete cluster --name $CLUSTER)"
    else
        kind delete cluster --name "$CLUSTER" >/dev/null 2>&1 || true
    fi
}

log "cluster $CLUSTER"
if kind get clusters 2>/dev/null | grep -qx "$CLUSTER"; then
    log "reusing the existing cluster $CLUSTER"
else
    create=(kind create cluster --name "$CLUSTER" --config "$ROOT/kind-config.yaml" --wait 5m)
    [ -n "${KIND_NODE_IMAGE:-}" ] && create+=(--image "$KIND_NODE_IMAGE")
    "${create[@]}"
fi
trap cleanup EXIT
k get nodes -L eks.amazonaws.com/nodegroup

if [ $build = 1 ]; then
    log "images ($TAG)"
    commit=$(git -C "$ROOT" rev-parse HEAD 2>/dev/null || echo unknown)
    docker build --target operator -t "$OPERATOR_IMAGE" --build-arg PQBENCH_GIT_COMMIT="$commit" "$ROOT"
    docker build --target worker -t "$WORKER_IMAGE" --build-arg PQBENCH_GIT_COMMIT="$commit" "$ROOT"
    docker build --target probe -t "$PROBE_IMAGE" --build-arg PQBENCH_GIT_COMMIT="$commit" "$ROOT"
    kind load docker-image --name "$CLUSTER" "$OPERATOR_IMAGE" "$WORKER_IMAGE" "$PROBE_IMAGE"
fi

# Each scenario runs in a namespace of its own, watched by the operator (a Role in each):
# made before the release, kept across scenarios (deleting one would delete its Role).
watched=()
for s in "${scenarios[@]}"; do
    k create namespace "e2e-$s" --dry-run=client -o yaml | k apply -f - >/dev/null
    watched+=("\"e2e-$s\"")
done
log "helm install $RELEASE ($RELEASE_NS), watching ${scenarios[*]/#/e2e-}"
helm upgrade --install "$RELEASE" "$ROOT/charts/pqbench" \
    --kube-context "$KUBECTX" --namespace "$RELEASE_NS" --create-namespace \
    --set image.tag="$TAG" --set workerImage.tag="$TAG" --set probeImage.tag="$TAG" \
    --set-json "watchNamespaces=[$(IFS=,; echo "${watched[*]}")]" \
    --set-json 'policy.allowedImages=["registry.pqbench.invalid/"]' \
    --set-json 'logging={"format":"text","level":"info,operator=debug"}' \
    --wait --timeout 5m
k -n "$RELEASE_NS" rollout status deployment --selector app.kubernetes.io/name=pqbench-operator --timeout 3m
k wait --for condition=Established crd/benchmarkcampaigns.pqbench.io --timeout 60s

# What a failed scenario leaves to read: the campaign, its namespace, the operator's log.
diagnose() {
    local ns=$1
    echo "---- kubectl describe bc -n $ns"
    k -n "$ns" describe benchmarkcampaigns || true
    echo "---- objects and events in $ns"
    k -n "$ns" get all,secrets,configmaps -o wide || true
    k -n "$ns" get events --sort-by=.lastTimestamp || true
    echo "---- pods in $ns"
    k -n "$ns" describe pods || true
    k -n "$ns" logs --all-containers --prefix --tail 50 -l app.kubernetes.io/name=pqbench-worker || true
    echo "---- operator log"
    k -n "$RELEASE_NS" logs --all-containers --prefix --tail 300 -l app.kubernetes.io/name=pqbench-operator || true
}

# Waits until the campaign reaches a final phase (Succeeded or Failed) or the timeout;
# prints each phase change. Echoes the last phase seen.
wait_final() {
    local ns=$1 name=$2 timeout=$3 phase="" last="" deadline
    deadline=$(($(date +%s) + $(to_seconds "$timeout")))
    while [ "$(date +%s)" -lt "$deadline" ]; do
        phase=$(k -n "$ns" get bc "$name" -o jsonpath='{.status.phase}' 2>/dev/null || true)
        if [ "$phase" != "$last" ]; then
            echo "   $(date +%T) $name: ${phase:-<none>} $(k -n "$ns" get bc "$name" -o jsonpath='{.status.progress.summary}' 2>/dev/null || true)" >&2
            last=$phase
        fi
        case "$phase" in Succeeded | Failed) break ;; esac
        sleep 5
    done
    echo "$phase"
}

to_seconds() {
    case "$1" in
        *h) echo $((${1%h} * 3600)) ;;
        *m) echo $((${1%m} * 60)) ;;
        *s) echo "${1%s}" ;;
        *) echo "$1" ;;
    esac
}

# Runs one scenario in its own namespace; returns non-zero on any unmet expectation.
run_scenario() {
    local s=$1 ns="e2e-$1" file="$HERE/$1/campaign.yaml" out name
    # (set -e does not act inside a function called from `if`: every step checks itself.)
    # A clean namespace: an earlier run's campaigns gone (their children with them).
    k -n "$ns" delete benchmarkcampaigns --all --wait --timeout 2m >/dev/null || return 1

    local reject
    reject=$(expect "$s" reject)
    if [ -n "$reject" ]; then
        if out=$(k -n "$ns" apply -f "$file" 2>&1); then
            echo "   apply was accepted; expected a refusal containing: $reject" >&2
            echo "$out" >&2
            return 1
        fi
        grep -qF -- "$reject" <<<"$out" || {
            echo "   apply was refused, but not with \"$reject\":" >&2
            echo "$out" >&2
            return 1
        }
        echo "   refused as expected: $(grep -F -- "$reject" <<<"$out" | head -n 1)"
        return 0
    fi

    out=$(k -n "$ns" apply -f "$file" -o name) || {
        echo "   apply failed: $out" >&2
        return 1
    }
    name=$(grep -m 1 '^benchmarkcampaign' <<<"$out" | cut -d/ -f2)
    [ -n "$name" ] || {
        echo "   $file holds no BenchmarkCampaign" >&2
        return 1
    }

    local patch patch_reject
    patch=$(expect "$s" patch)
    patch_reject=$(expect "$s" patch-reject)
    if [ -n "$patch" ]; then
        if out=$(k -n "$ns" patch bc "$name" --type merge -p "$patch" 2>&1); then
            if [ -n "$patch_reject" ]; then
                echo "   the patch $patch was accepted; expected a refusal containing: $patch_reject" >&2
                return 1
            fi
        elif [ -z "$patch_reject" ] || ! grep -qF -- "$patch_reject" <<<"$out"; then
            echo "   the patch $patch was refused unexpectedly:" >&2
            echo "$out" >&2
            return 1
        else
            echo "   patch refused as expected: $(grep -F -- "$patch_reject" <<<"$out" | head -n 1)"
        fi
    fi

    local want timeout got
    want=$(expect "$s" phase)
    [ -n "$want" ] || return 0
    timeout=$(expect "$s" timeout)
    got=$(wait_final "$ns" "$name" "${timeout:-10m}")
    if [ "$got" != "$want" ]; then
        echo "   phase is ${got:-<none>} after ${timeout:-10m}; expected $want" >&2
        return 1
    fi
    # The phase also satisfies a kubectl wait (what users script against).
    k -n "$ns" wait --for=jsonpath='{.status.phase}'="$want" "bc/$name" --timeout 10s >/dev/null || return 1

    local message status_message
    message=$(expect "$s" message)
    status_message=$(k -n "$ns" get bc "$name" -o jsonpath='{.status.message}') || return 1
    echo "   status.message: $status_message"
    if [ -n "$message" ] && ! grep -qiF -- "$message" <<<"$status_message"; then
        echo "   status.message lacks \"$message\"" >&2
        return 1
    fi
    if [ "$(expect "$s" verdicts)" = true ]; then
        local summary rows
        summary=$(k -n "$ns" get bc "$name" -o jsonpath='{.status.verdictSummary}') || return 1
        rows=$(k -n "$ns" get bc "$name" -o jsonpath='{range .status.verdicts[*]}{.cell} {.mode} {.verdict}{"\n"}{end}') || return 1
        [ -n "$summary" ] && [ -n "$rows" ] || {
            echo "   no verdicts in status" >&2
            return 1
        }
        echo "   verdicts: $summary"
        while IFS= read -r row; do echo "     $row"; done <<<"$rows"
        echo "   results: $(k -n "$ns" get bc "$name" -o jsonpath='{.status.results}')"
    fi
    if [ "$(expect "$s" fenced)" = true ]; then
        local np refs images
        for np in "$name-minio" "$name-workers"; do
            k -n "$ns" get networkpolicy "$np" >/dev/null || {
                echo "   no NetworkPolicy $np" >&2
                return 1
            }
        done
        refs=$(k -n "$ns" get jobs -l "pqbench.io/campaign=$name" \
            -o jsonpath='{range .items[*].spec.template.spec.containers[*].env[*]}{.valueFrom.secretKeyRef.name}{"\n"}{end}' | grep -v '^$' || true)
        [ -z "$refs" ] || {
            echo "   Job pods take Secrets through their environment: $refs" >&2
            return 1
        }
        images=$(k -n "$ns" get bc "$name" -o jsonpath='{range .status.images[*]}{.image} {.imageID}{"\n"}{end}')
        grep -q '@sha256:' <<<"$images" || {
            echo "   status.images holds no resolved digest: $images" >&2
            return 1
        }
        echo "   fenced; images: $(tr '\n' ' ' <<<"$images")"
    fi
}

passed=0
failed=0
failed_names=()
for s in "${scenarios[@]}"; do
    log "scenario $s"
    if run_scenario "$s"; then
        echo "   PASS $s"
        passed=$((passed + 1))
        [ $keep = 1 ] || k -n "e2e-$s" delete benchmarkcampaigns --all --wait=false >/dev/null 2>&1 || true
    else
        echo "   FAIL $s"
        diagnose "e2e-$s"
        failed=$((failed + 1))
        failed_names+=("$s")
    fi
done

log "summary"
[ $failed -eq 0 ] || echo "failed: ${failed_names[*]}"
echo "$passed passed, $failed failed"
[ $failed -eq 0 ]
