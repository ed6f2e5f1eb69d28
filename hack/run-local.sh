#!/usr/bin/env bash
# make run-local: Parley on a real local cluster, from nothing, in one command.
#
#  1. hack/local-cluster up: etcd, kube-apiserver, kube-controller-manager, kube-scheduler and a
#     real node (kubelet + containerd); falls back to the control plane alone if the node fails
#  2. the CRDs from config/crd/bases
#  3. the manager, built from ./cmd/manager and run as a host process against the cluster
#     (log: <cluster dir>/logs/manager.log; `make cluster-down` stops it with the cluster);
#     PARLEY_MANAGER=in-cluster deploys config/default with the local image instead
#  4. the samples from config/samples
#  5. a sample agent pod from the test-agent image (hack/images.sh), owned by the first sample
#     Conversation, Running on the real node
# and prints what it did, how to explore and how to stop.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
lc=$root/hack/local-cluster
AGENT_IMAGE=localhost/parley-test-agent:${IMAGE_TAG:-dev}

step() { printf '\n\033[1m==> %s\033[0m\n' "$*"; }
warn() { printf '\033[33mWARNING: %s\033[0m\n' "$*"; }
fail() {
  printf '\033[31mERROR: %s\033[0m\n' "$*" >&2
  exit 1
}
# wait_until TIMEOUT CMD...: run CMD every 0.2 s until it succeeds; fails after TIMEOUT seconds.
wait_until() {
  local deadline=$((SECONDS + $1))
  shift
  until "$@" >/dev/null 2>&1; do
    ((SECONDS < deadline)) || return 1
    sleep 0.2
  done
}
# crds_established: every CRD of config/crd/bases (names in $crd_names) has Established=True.
crds_established() {
  local name
  for name in $crd_names; do
    [ "$(kubectl get crd "$name" -o go-template='{{with .status}}{{range .conditions}}{{if eq .type "Established"}}{{.status}}{{end}}{{end}}{{end}}')" = True ] || return 1
  done
}
# crds_discoverable: every CRD of config/crd/bases (names in $crd_names) is in discovery.
crds_discoverable() {
  local served
  served=$(kubectl api-resources -o name 2>/dev/null | LC_ALL=C sort) || true
  [ -z "$(comm -23 <(echo "$crd_names") <(echo "$served"))" ]
}

if [ "$(id -u)" != 0 ]; then
  echo "make run-local starts containerd and a kubelet: run it as root" >&2
  exit 1
fi

step "Local cluster (hack/local-cluster up)"
with_node=1
if ! "$lc" up; then
  warn "the real node (kubelet + containerd) did not come up; see $("$lc" logs)/kubelet.log and containerd.log."
  warn "continuing on the CONTROL PLANE ALONE: Conversations are reconciled, but no pod can run."
  with_node=0
  PARLEY_CLUSTER_NODE=0 "$lc" up
fi
KUBECONFIG=$("$lc" kubeconfig)
export KUBECONFIG
logs=$("$lc" logs)

step "CRDs (config/crd/bases)"
crds=(config/crd/bases/*.yaml)
if [ -e "${crds[0]}" ]; then
  # Client-side, as most people and Argo CD apply (the CRDs fit the last-applied annotation).
  kubectl apply -f config/crd/bases
  crd_names=$(kubectl get -f config/crd/bases -o name | sed 's|^[^/]*/||' | LC_ALL=C sort)
  # A CRD that was just created has status.conditions: null for a moment. A jsonpath filter on
  # that errors ("<nil> is not array or slice and cannot be filtered"; with set -e it ended the
  # first run on a new machine), and so does `kubectl wait --for condition=Established` (".status.
  # conditions accessor error: <nil> is of the type <nil>"). A go-template ranges over null.
  if ! wait_until 120 crds_established; then
    kubectl get -f config/crd/bases -o custom-columns='NAME:.metadata.name,CONDITIONS:.status.conditions' >&2 || true
    fail "the CRDs did not become Established within 120s"
  fi
  # Established is not yet served: the apiserver publishes a new group in discovery on its own
  # schedule. Until then `kubectl apply -k config/samples` says "no matches for kind" and the
  # manager cannot start its informers. api-resources also refreshes kubectl's discovery cache,
  # which `kubectl get conv,ckpt` (short names) below reads.
  wait_until 60 crds_discoverable ||
    fail "the CRDs are Established but not in the apiserver's discovery after 60s: $(tr '\n' ' ' <<<"$crd_names")"
else
  warn "no CRDs in config/crd/bases yet"
fi

manager_running=0
manager_where=""
if [ "${PARLEY_MANAGER:-process}" = in-cluster ] && [ "$with_node" = 1 ]; then
  step "Manager (image localhost/parley-manager:${IMAGE_TAG:-dev}, config/default, in the cluster)"
  "$lc" stop manager
  hack/images.sh manager
  # An overlay of config/default for this cluster: the local image, never pulled, one replica.
  overlay=$root/.local/run-local-manager
  mkdir -p "$overlay"
  cat >"$overlay/kustomization.yaml" <<EOF
apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
resources: [../../config/default]
images:
- {name: parley-manager, newName: localhost/parley-manager, newTag: "${IMAGE_TAG:-dev}"}
patches:
- target: {kind: Deployment, name: parley-controller-manager}
  patch: |-
    - {op: replace, path: /spec/replicas, value: 1}
    - {op: add, path: /spec/template/spec/containers/0/imagePullPolicy, value: Never}
EOF
  kubectl kustomize "$overlay" | kubectl apply -f -
  if kubectl -n parley-system rollout status deployment/parley-controller-manager --timeout 180s; then
    manager_running=1
    manager_where="in the cluster: kubectl -n parley-system logs deploy/parley-controller-manager"
  else
    warn "the in-cluster manager did not become ready: kubectl -n parley-system describe pods"
  fi
else
  if [ "${PARLEY_MANAGER:-process}" != process ] && [ "$with_node" = 0 ]; then
    warn "PARLEY_MANAGER=in-cluster needs the node: running the manager as a host process"
  fi
  step "Manager (go build ./cmd/manager, run as a host process)"
  if go build -o bin/manager ./cmd/manager; then
    help=$(bin/manager --help 2>&1 || true)
    args=()
    # Bind whatever the manager listens on to loopback when it offers the flags.
    [[ $help != *metrics-bind-address* ]] || args+=(--metrics-bind-address=127.0.0.1:8443)
    [[ $help != *health-probe-bind-address* ]] || args+=(--health-probe-bind-address=127.0.0.1:8081)
    # Out of the cluster, leader election needs a namespace to hold its Lease.
    [[ $help != *leader-election-namespace* ]] || args+=(--leader-election-namespace=kube-system)
    # A manager deployed by an earlier PARLEY_MANAGER=in-cluster run would compete with this one.
    kubectl -n parley-system delete deployment parley-controller-manager --ignore-not-found >/dev/null
    "$lc" stop manager
    "$lc" start manager "$root/bin/manager" "${args[@]}"
    manager_running=1
    manager_where="host process, log $logs/manager.log"
    if [[ $help == *health-probe-bind-address* ]]; then
      # 60 s: a cold start on a busy 2-core machine is slow (leader election, informer caches).
      wait_until 60 curl -sf http://127.0.0.1:8081/readyz ||
        warn "the manager is not ready after 60s; see $logs/manager.log"
    fi
  else
    warn "./cmd/manager does not build: no manager is running"
  fi
fi

step "Samples (config/samples)"
if [ -e config/samples/kustomization.yaml ]; then
  kubectl apply -k config/samples
else
  warn "no samples in config/samples yet"
fi

step "Sample agent pod (image $AGENT_IMAGE)"
conv=$(kubectl get conversations.parley.dev -o jsonpath='{.items[0].metadata.name}' 2>/dev/null || true)
if [ "$with_node" = 1 ]; then
  hack/images.sh agent
  owner=""
  if [ -n "$conv" ]; then
    uid=$(kubectl get conversations.parley.dev "$conv" -o jsonpath='{.metadata.uid}')
    owner="  ownerReferences:
  - {apiVersion: parley.dev/v1alpha1, kind: Conversation, name: $conv, uid: $uid}"
  fi
  kubectl delete pod sample-agent --ignore-not-found --wait=true >/dev/null
  kubectl apply -f - <<EOF
apiVersion: v1
kind: Pod
metadata:
  name: sample-agent
  labels: {app.kubernetes.io/name: parley-test-agent, parley.dev/conversation: "${conv}"}
${owner}
spec:
  restartPolicy: Never
  terminationGracePeriodSeconds: 5
  containers:
  - name: agent
    image: ${AGENT_IMAGE}
    imagePullPolicy: Never
    args: [serve]
    env:
    - {name: PARLEY_CONVERSATION, value: "${conv}"}
    - name: PARLEY_NAMESPACE
      valueFrom: {fieldRef: {fieldPath: metadata.namespace}}
EOF
  if ! kubectl wait --for condition=Ready pod/sample-agent --timeout 120s; then
    kubectl describe pod sample-agent >&2 || true
    fail "the sample agent pod is not Ready after 120s (events above; kubelet log: $logs/kubelet.log)"
  fi
else
  warn "no node: the sample agent pod is skipped"
fi

step "kubectl get conv,ckpt"
kubectl get conv,ckpt 2>/dev/null || warn "the Conversation and Checkpoint CRDs are not installed"
step "kubectl get pods -o wide"
kubectl get pods -o wide

cat <<EOF

Parley is running on a local cluster$([ "$with_node" = 1 ] || echo " (CONTROL PLANE ONLY: the real node failed, pods cannot run)").
  manager:     $([ "$manager_running" = 1 ] && echo "$manager_where" || echo "NOT running (see the warnings above)")
  logs:        $logs/ (one file per component)

Explore:
  export KUBECONFIG=$KUBECONFIG
  kubectl get conv,ckpt,pods
  kubectl describe conv ${conv:-NAME}
$([ "$with_node" = 1 ] && echo "  kubectl logs sample-agent" || echo "  hack/local-cluster logs   # kubelet.log, containerd.log: why the node failed")
  hack/local-cluster status

Stop everything (cluster, node, manager): make cluster-down
EOF
