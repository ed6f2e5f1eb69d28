// Package bench holds the benchmarks of pkg/history, run against a real
// kube-apiserver (envtest) and a real S3 server (versitygw), side by side
// with the naive baseline that rewrites the whole history on every append.
// See docs/benchmarks.md, section pkg/history.
package bench
