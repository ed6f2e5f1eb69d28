#!/usr/bin/env bash
# make run-local: Parley on a real local cluster, from nothing, in one command.
#
#  1. hack/local-cluster up: etcd, kube-apiserver, kube-controller-manager, kube-scheduler and a
#     real node (kubelet + containerd); falls back to the control plane alone if the node fails
#  2. the CRDs from config/crd/bases
#  3. the manager, built from ./cmd/manager and run as a host process against the cluster
#     (log: <cluster dir>/logs/manager.log; `make cluster-down` stops it with the cluster);
#     PARLEY_MANAGER=in-cluster deploys config/default with the local image instead
#  4. the samples from config/samples, the agent sample's image (test/agent, hack/images.sh)
#     imported first; the objectStore sample's history in a real S3 server (versitygw) with its
#     bucket and credentials Secret (hack/lib/local-s3.sh)
#  5. waits for the agent sample's story: the controller runs its pod, the agent converses
#     through the Session API, crashes once in turn 3, and a second pod resumes from the
#     resume bundle and finishes; then for every sample to be up (Active, or Ready for a
#     Checkpoint: hack/lib/samples.sh)
# and prints what it did (kubectl get conv,ckpt: restarts and messages; the agents' logs), how
# to explore and how to stop. The script creates no pod itself: the controller owns agent pods.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
lc=$root/hack/local-cluster
# shellcheck source=hack/lib/samples.sh
. "$root/hack/lib/samples.sh"
# shellcheck source=hack/lib/local-s3.sh
. "$root/hack/lib/local-s3.sh"
# The Conversation of config/samples whose agent tells the crash-and-resume story.
AGENT_CONV=coding-agent
# The host-run manager's Session API: on the pod network's bridge, where agent pods reach the
# host, and where the API server's aggregator reaches it for kubectl parley (docs/development.md).
BRIDGE_IP=10.88.0.1
SESSION_API=$BRIDGE_IP:8082
# Where the host-run manager keeps the Session API CA (Secret and ConfigMap
# parley-session-api-ca), the namespace of the install's Service that the APIService names.
PARLEY_NAMESPACE=parley-system
# The install's Session API Service: the aggregator verifies the serving certificate for
# <service>.<namespace>.svc.
SESSION_API_SERVICE=parley-session-api
# The label of the EndpointSlice that names this host as the Service's endpoint.
HOST_ENDPOINT_LABEL=endpointslice.kubernetes.io/managed-by=run-local.parley.dev

# shellcheck source=hack/lib/steps.sh
. "$root/hack/lib/steps.sh"
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
# agent_state: "<restarts> <AgentRunning reason>" of the agent sample (go-template: ranging
# over a status that is not there yet prints nothing instead of failing).
agent_state() {
  kubectl get conversations.parley.dev "$AGENT_CONV" -o go-template='{{with .status}}{{with .agent}}{{or .restarts 0}}{{end}} {{range .conditions}}{{if eq .type "AgentRunning"}}{{.reason}}{{end}}{{end}}{{end}}' 2>/dev/null
}
# apiservice_available: the aggregator reaches the Session API through the APIService.
apiservice_available() {
  [ "$(kubectl get apiservice v1alpha1.session.parley.dev -o go-template='{{with .status}}{{range .conditions}}{{if eq .type "Available"}}{{.status}}{{end}}{{end}}{{end}}')" = True ]
}
# host_aggregation_objects: what lets the API server's aggregator reach a manager that runs on
# this host: the install's APIService (from dist/install.yaml, unchanged), and its Service
# without a selector, whose one endpoint is the host's bridge address and the Session API port.
# The aggregator dials endpoints directly (--enable-aggregator-routing; no kube-proxy here).
host_aggregation_objects() {
  awk 'BEGIN {RS = "\n---\n"} /\nkind: APIService\n/ {print "---"; print}' dist/install.yaml
  cat <<EOF
---
apiVersion: v1
kind: Service
metadata:
  name: $SESSION_API_SERVICE
  namespace: $PARLEY_NAMESPACE
  labels: {app.kubernetes.io/name: parley}
spec:
  ports: [{name: https, port: 8082, protocol: TCP, targetPort: 8082}]
---
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata:
  name: $SESSION_API_SERVICE-host
  namespace: $PARLEY_NAMESPACE
  labels: {kubernetes.io/service-name: $SESSION_API_SERVICE, ${HOST_ENDPOINT_LABEL/=/: }}
addressType: IPv4
endpoints: [{addresses: ["$BRIDGE_IP"], conditions: {ready: true}}]
ports: [{name: https, port: 8082, protocol: TCP}]
EOF
}
# agent_story_ended: the agent sample completed after one restart, or ended for good.
agent_story_ended() {
  case $(agent_state) in
  "1 Completed" | *MaxRestartsExceeded | *PoisonTurn | *InvalidTemplate | *TemplateConflict | *BundleTooLarge) return 0 ;;
  esac
  return 1
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
# process (a host process), in-cluster, or none (it did not build)
manager_mode=none
if [ "${PARLEY_MANAGER:-process}" = in-cluster ] && [ "$with_node" = 1 ]; then
  step "Manager (image localhost/parley-manager:${IMAGE_TAG:-dev}, config/default, in the cluster)"
  "$lc" stop manager
  # An earlier host-process run's endpoint names this host, where no manager listens now.
  kubectl -n "$PARLEY_NAMESPACE" delete endpointslice -l "$HOST_ENDPOINT_LABEL" --ignore-not-found >/dev/null
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
    manager_mode=in-cluster
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
    env=()
    # Agent pods reach the host at the bridge address, and so does the API server's aggregator
    # (kubectl parley's path): TLS, with a certificate for that address and for the Service name
    # the aggregator verifies, signed by the CA the manager keeps in $PARLEY_NAMESPACE (as the
    # install's replicas do: it survives restarts, so running agents keep trusting it). Without
    # the node there is no bridge, no agent and no aggregated path: plain HTTP on loopback.
    if [ "$with_node" = 1 ]; then
      kubectl create namespace "$PARLEY_NAMESPACE" --dry-run=client -o yaml | kubectl apply -f - >/dev/null
      env+=(POD_NAMESPACE="$PARLEY_NAMESPACE")
      host_aggregation_objects | kubectl apply -f -
      args+=(--session-api-bind-address="$SESSION_API" --agent-api-url="https://$SESSION_API"
        --session-api-hosts="$BRIDGE_IP,$SESSION_API_SERVICE.$PARLEY_NAMESPACE.svc")
    else
      args+=(--session-api-bind-address=127.0.0.1:8082 --session-api-insecure)
    fi
    # A manager deployed by an earlier PARLEY_MANAGER=in-cluster run would compete with this one.
    kubectl -n parley-system delete deployment parley-controller-manager --ignore-not-found >/dev/null
    "$lc" stop manager
    env "${env[@]}" "$lc" start manager "$root/bin/manager" "${args[@]}"
    manager_running=1
    manager_mode=process
    manager_where="host process, log $logs/manager.log; Session API $([ "$with_node" = 1 ] && echo "https://$SESSION_API" || echo "http://127.0.0.1:8082")"
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
if [ "$with_node" = 1 ]; then
  # Before the samples: the agent sample's first pod must find its image (nothing is pulled).
  hack/images.sh agent
fi
if [ "$manager_mode" = process ]; then
  # config/default installs config/rbac's agent role as parley-conversation-agent-role, the
  # name the samples' RoleBinding gives; a host-run manager installs nothing, so do it here.
  sed 's/^  name: conversation-agent-role$/  name: parley-conversation-agent-role/' config/rbac/conversation_agent_role.yaml |
    kubectl apply -f -
fi
# The objectStore samples' S3 server, bucket and Secret, and the overlay that points them at it.
# On the bridge with the node, where an in-cluster manager reaches it too.
s3_addr=$([ "$with_node" = 1 ] && echo 10.88.0.1 || echo 127.0.0.1):9000
local_s3_samples "$root" "$lc" "$s3_addr" "$root/.local/run-local-samples"
kubectl apply -k "$root/.local/run-local-samples"
# Earlier versions of this script ran a pod of their own; agent pods are the controller's now.
kubectl delete pod sample-agent --ignore-not-found >/dev/null

story=0
step "The agent sample: converses, crashes once, resumes (Conversation $AGENT_CONV)"
if [ "$with_node" = 0 ]; then
  warn "no node: the agent sample's pod cannot run"
elif [ "$manager_mode" = none ]; then
  warn "no manager is running: nobody starts the agent sample's pod"
elif [ "$manager_mode" = in-cluster ]; then
  # No kube-proxy here: only 10.96.0.1 answers among Service addresses, so agents cannot reach
  # the in-cluster manager's Session API Service; the host-run manager serves it on the bridge.
  echo "PARLEY_MANAGER=in-cluster: agent pods cannot reach the Session API Service on this cluster (no kube-proxy);"
  echo "the agent sample's appends fail, it is restarted and ends Failed. Run without PARLEY_MANAGER for the story."
else
  # Two pods, the 5 s backoff between them, twelve appends: well under the 180 s allowed.
  t=$SECONDS
  if ! wait_until 180 agent_story_ended; then
    kubectl describe conversations.parley.dev "$AGENT_CONV" >&2 || true
    fail "the agent sample did not finish within 180s (now: $(agent_state)); see $logs/manager.log and kubectl get pods"
  fi
  [ "$(agent_state)" = "1 Completed" ] ||
    fail "the agent sample ended as '$(agent_state)' instead of completing after one restart: kubectl describe conversation $AGENT_CONV; to replay it, kubectl delete conversation $AGENT_CONV and run again"
  echo "completed after 1 restart, $((SECONDS - t))s after the samples were applied"
  story=1
fi

if [ "$manager_mode" != none ]; then
  # The samples without an agent are up within seconds of the manager's first reconcile.
  wait_until 60 samples_up "$root" ||
    warn "samples not up after 60s: $(samples_not_up "$root" | paste -sd ';' -) (kubectl describe them; the manager's log)"
fi

step "kubectl get conv,ckpt"
kubectl get conv,ckpt 2>/dev/null || warn "the Conversation and Checkpoint CRDs are not installed"
step "kubectl get pods -o wide"
kubectl get pods -o wide
if [ "$story" = 1 ]; then
  step "The agent sample's story (kubectl logs of its two pods)"
  for pod in "$AGENT_CONV-agent-1" "$AGENT_CONV-agent-2"; do
    echo "--- $pod"
    kubectl logs "$pod" 2>/dev/null || echo "(its logs are gone)"
  done
  echo
  kubectl get conversations.parley.dev "$AGENT_CONV" -o go-template='{{.metadata.name}}: {{with .status.agent}}{{.restarts}} restart after {{with .lastFailure}}{{.reason}} (exit code {{.exitCode}}) of {{.podName}} in turn {{.turn}}{{end}}; {{.podName}} resumed from Checkpoint {{.resumedFrom}}{{end}}; {{.status.history.messages}} messages in {{.status.history.turns}} turns
'
fi

# kubectl parley on the agent sample: its transcript and its status, read through the API
# server (the aggregated group session.parley.dev) with the admin kubeconfig as it is: the API
# server authenticates its client certificate and passes the identity on to the Session API.
plugin=0
if [ "$story" = 1 ] && [ "$manager_mode" = process ]; then
  if go build -o bin/kubectl-parley ./cmd/kubectl-parley; then
    plugin=1
    step "kubectl parley describe $AGENT_CONV"
    bin/kubectl-parley describe "$AGENT_CONV" || warn "kubectl parley describe failed"
    wait_until 60 apiservice_available ||
      warn "the APIService v1alpha1.session.parley.dev is not Available after 60s: kubectl get apiservice v1alpha1.session.parley.dev -o yaml"
    step "kubectl parley history $AGENT_CONV (bin/kubectl-parley, through the API server)"
    bin/kubectl-parley history "$AGENT_CONV" || warn "kubectl parley history failed"
  else
    warn "./cmd/kubectl-parley does not build"
  fi
fi

cat <<EOF

Parley is running on a local cluster$([ "$with_node" = 1 ] || echo " (CONTROL PLANE ONLY: the real node failed, pods cannot run)").
  manager:     $([ "$manager_running" = 1 ] && echo "$manager_where" || echo "NOT running (see the warnings above)")
  logs:        $logs/ (one file per component)
  S3 server:   versitygw at http://$s3_addr (the objectStore sample's history; log $logs/s3.log)

Explore:
  export KUBECONFIG=$KUBECONFIG
  kubectl get conv,ckpt,pods
  kubectl describe conv $AGENT_CONV
$([ "$plugin" = 1 ] && echo "  PATH=$root/bin:\$PATH kubectl parley tail -f $AGENT_CONV")
$([ "$plugin" = 1 ] && echo "  kubectl get --raw /apis/session.parley.dev/v1alpha1/namespaces/default/conversations/$AGENT_CONV/messages")
$([ "$with_node" = 1 ] && echo "  kubectl logs $AGENT_CONV-agent-1; kubectl logs $AGENT_CONV-agent-2" || echo "  hack/local-cluster logs   # kubelet.log, containerd.log: why the node failed")
  kubectl delete conv $AGENT_CONV && make run-local    # replay the agent sample's story
$([ "$with_node" = 1 ] && echo "  make demo-claude-code   # a real Claude Code agent converses, is SIGKILLed mid-turn and resumes")
  hack/local-cluster status$([ "$plugin" = 1 ] && printf '\n\n%s\n%s' \
  "The idle agent sample answers, sleeps 30 s later (its pod gone), and a message wakes it:" \
  "  PATH=$root/bin:\$PATH kubectl parley send idle-agent \"hello\" --wait   # or: kubectl parley chat idle-agent")

Stop everything (cluster, node, manager): make cluster-down
EOF
