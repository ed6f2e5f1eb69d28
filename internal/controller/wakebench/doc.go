// Package wakebench measures how long a message takes to wake an agent suspended while idle:
// from the Session API's acknowledgement of the user message to the new agent pod's arrival on
// a watch, on a real kube-apiserver and etcd (envtest), with the manager's reconcilers, the
// activity hand-off and the Session API running in this process as cmd/manager wires them on
// the replica that holds the lease. envtest has no kubelet: the benchmark reports the pods
// Running itself. See docs/benchmarks.md, section "Idle agent woken by a message".
package wakebench
