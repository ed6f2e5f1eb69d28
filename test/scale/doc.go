// Package scale holds the scale benchmark of the Conversation controller: 10,000 Conversations
// with ConfigMap histories on envtest, reconciled by the real manager binary running as its own
// process. It is a benchmark, not a test: it runs only with PARLEY_SCALE=1 (`make bench-scale`)
// and its figures are recorded in docs/benchmarks.md.
package scale
