// Package crashbench measures how long the controller takes to replace a crashed agent pod:
// from the kubelet's write of the Failed status to the next attempt's pod, on a real
// kube-apiserver and etcd (envtest) with the manager's Conversation and Checkpoint
// reconcilers running in this process, wired as cmd/manager wires them. envtest has no
// kubelet: the benchmark writes the pod status the way the kubelet reports an exit 1. It
// records every API call the manager makes, so it can say where the time goes and how many
// calls one restart costs. See docs/benchmarks.md, section "Agent crash to new pod".
package crashbench
