#!/usr/bin/env bash
# make demo-claude-code: on the local cluster of `make run-local`, a real Claude Code agent
# (examples/claude-code: the CLI, headless, driven by a node script) converses, is SIGKILLed in
# the middle of a turn, and resumes in a new pod with the conversation Parley kept.
#
#  1. the example's image: the Claude Code CLI and its driver (hack/agent-images.sh claude-code)
#  2. the stub model (test/stubmodel) where the example's manifest points ANTHROPIC_BASE_URL, on
#     the pod network's bridge, as hack/local-cluster's process "stubmodel" (`make cluster-down`
#     stops it). It stands in for the Anthropic Messages API: it answers from
#     examples/claude-code/stub-model.json (a Read tool call, two answers, then it holds the
#     third turn's request open) and records every request it receives
#  3. examples/claude-code/conversation.yaml, unchanged: the controller runs the agent's pod
#  4. once the stub holds the third turn's request, the agent's container is SIGKILLed through the
#     node's containerd, as the kernel's OOM killer would end it
#  5. the controller records the crash, takes a Crash Checkpoint and starts a second pod with the
#     resume bundle; `claude --resume` continues the session and the agent finishes
# It prints the model requests, both pods' logs, the Conversation's status and history, and fails
# unless the first request after the crash carries the conversation the interrupted request
# carried (the earlier turns, tool call and result included, in order, each once).
#
# Against the real Anthropic API instead of the stub: docs/agents.md ("The Claude Code demo").
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
lc=$root/hack/local-cluster
manifest=examples/claude-code/conversation.yaml

# shellcheck source=hack/lib/steps.sh
. "$root/hack/lib/steps.sh"
# manifest_field TEMPLATE: a field of the example's manifest, read without a cluster.
manifest_field() {
  kubectl label --local -f "$manifest" parley.dev/read-only=true -o go-template="$1"
}
# agent_state: "<restarts> <AgentRunning reason>" of the Conversation.
agent_state() {
  kubectl get conversations.parley.dev "$conv" -o go-template='{{with .status}}{{with .agent}}{{or .restarts 0}}{{end}} {{range .conditions}}{{if eq .type "AgentRunning"}}{{.reason}}{{end}}{{end}}{{end}}' 2>/dev/null
}
agent_completed() { [ "$(agent_state)" = "1 Completed" ]; }
# record CMD: runs a command of hack/lib/stub-record.mjs on the stub's record of requests.
record() {
  curl -sf "http://$stub_addr/_stub/requests" | node "$root/hack/lib/stub-record.mjs" "$@"
}
held() { [ -n "$(record held)" ]; }

[ "$(id -u)" = 0 ] || fail "the demo kills a container through the node's containerd: run it as root"
command -v node >/dev/null || fail "node is not installed (the agent's image is built from the host's node)"
KUBECONFIG=$("$lc" kubeconfig)
export KUBECONFIG
# The Session API answers through the API server once make run-local's manager serves it.
"$lc" status >/dev/null 2>&1 && kubectl get --raw /apis/session.parley.dev/v1alpha1 >/dev/null 2>&1 ||
  fail "no local cluster with Parley's manager: run make run-local first"
kubectl get serviceaccount parley-agent >/dev/null 2>&1 ||
  fail "no ServiceAccount parley-agent (config/samples): run make run-local first"
conv=$(manifest_field '{{.metadata.name}}')
stub_url=$(manifest_field '{{range (index .spec.agent.template.spec.containers 0).env}}{{if eq .name "ANTHROPIC_BASE_URL"}}{{.value}}{{end}}{{end}}')
stub_addr=${stub_url#http://}

step "The agent's image (hack/agent-images.sh claude-code: the Claude Code CLI, node, the driver)"
hack/agent-images.sh claude-code

step "The stub model on $stub_addr (test/stubmodel, replies from examples/claude-code/stub-model.json)"
go build -o bin/stubmodel ./test/stubmodel/cmd
# A fresh stub for each run: its script starts over and its record is this run's.
"$lc" stop stubmodel
"$lc" start stubmodel "$root/bin/stubmodel" -listen "$stub_addr" -script "$root/examples/claude-code/stub-model.json"
wait_until 30 curl -sf "http://$stub_addr/_stub/requests" || fail "the stub model does not answer on $stub_addr; see $("$lc" logs)/stubmodel.log"

step "Conversation $conv ($manifest)"
if kubectl get conversations.parley.dev "$conv" >/dev/null 2>&1; then
  echo "deleting the Conversation of an earlier run, its pods and Checkpoints first"
  kubectl delete conversations.parley.dev "$conv" --cascade=foreground --wait --timeout 120s
fi
kubectl apply -f "$manifest"

step "The agent converses; the stub holds the third turn's model request"
wait_until 300 held || {
  record print >&2 || true
  kubectl logs "$conv-agent-1" >&2 || true
  fail "no held model request after 300s (now: $(agent_state)); kubectl describe conversation $conv"
}
record print
first=$conv-agent-1
kubectl logs "$first" || true
# A restart before the kill (an append the Session API refused, a crash of the driver) is not
# the story this demo tells: say why instead of killing the wrong pod.
[[ $(agent_state) == "0 "* ]] ||
  fail "the agent restarted before the kill (now: $(agent_state)): kubectl describe conversation $conv; see $("$lc" logs)/manager.log"

step "SIGKILL of the agent's container in $first, in the middle of its third turn"
id=$(kubectl get pod "$first" -o jsonpath='{.status.containerStatuses[0].containerID}')
"$lc" ctr tasks kill --signal SIGKILL "${id#containerd://}"
killed=$SECONDS

step "The controller restarts the agent from the Crash Checkpoint; claude --resume continues"
wait_until 300 agent_completed || {
  kubectl describe conversations.parley.dev "$conv" >&2 || true
  fail "the agent did not complete after one restart within 300s (now: $(agent_state))"
}
echo "completed $((SECONDS - killed))s after the kill"
kubectl get conversations.parley.dev "$conv" -o go-template='{{.metadata.name}}: {{with .status.agent}}{{.restarts}} restart after {{with .lastFailure}}{{.reason}} (exit code {{.exitCode}}) of {{.podName}} in turn {{.turn}}{{end}}; {{.podName}} resumed from Checkpoint {{.resumedFrom}}{{end}}; {{.status.history.messages}} messages in {{.status.history.turns}} turns
'
kubectl get pods -l parley.dev/conversation="$conv"
for pod in "$first" "$conv-agent-2"; do
  echo "--- kubectl logs $pod"
  kubectl logs "$pod"
done

step "The model requests the stub received"
record print
record resumed

step "kubectl parley history $conv (through the API server)"
go build -o bin/kubectl-parley ./cmd/kubectl-parley
bin/kubectl-parley history "$conv"

cat <<EOF

A real Claude Code CLI resumed its session after a SIGKILL, from the conversation Parley kept.
  kubectl describe conversation $conv; kubectl get checkpoints
  make demo-claude-code    # again (the Conversation is replaced)
  against the real Anthropic API: docs/agents.md, "The Claude Code demo"
EOF
