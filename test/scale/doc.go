// Package scale holds the scale benchmarks of the Conversation controller on envtest, against
// the real manager binary running as its own process (so its RSS is the manager's alone):
// 10,000 Conversations with ConfigMap histories created and expired (`make bench-scale`), and
// 1,000 Conversations whose agents sleep, 100 of them woken at once through the Session API
// (`make bench-wake-scale`). They are benchmarks, not tests: they run only with
// PARLEY_SCALE=1, and their figures are recorded in docs/benchmarks.md.
package scale
