// Package apibench measures appends through the Session API against the same appends made
// directly to the store and against raw conditional writes on the same backend, in the same
// run: envtest (kube-apiserver and etcd) and versitygw on loopback, and in this process the
// manager as cmd/manager wires it (Conversation and Checkpoint controllers, history stores,
// batched activity, the Session API over TLS with real TokenReview and SubjectAccessReview).
// See docs/benchmarks.md, section "Appends through the Session API".
package apibench
