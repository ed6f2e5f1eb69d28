package metrics

import "github.com/prometheus/client_golang/prometheus"

// AgentCrashes counts agent pod failures by reason (Error, OOMKilled, Evicted, Deleted, ...).
var AgentCrashes = prometheus.NewCounterVec(prometheus.CounterOpts{
	Name: "parley_agent_crashes_total",
	Help: "Agent pod failures the controller recorded, by reason.",
}, []string{"reason"})

// AgentPodsStarted counts agent pods created, by cause (start, restart, resume, replace, wake).
var AgentPodsStarted = prometheus.NewCounterVec(prometheus.CounterOpts{
	Name: "parley_agent_pods_started_total",
	Help: "Agent pods the controller created, by cause: start, restart (after a crash), resume (after a suspend or a template change), replace (a pod that could not start), wake (a user message woke an idle agent).",
}, []string{"cause"})

// AgentsFailed counts agents given up on, by reason (MaxRestartsExceeded, PoisonTurn).
var AgentsFailed = prometheus.NewCounterVec(prometheus.CounterOpts{
	Name: "parley_agent_failures_total",
	Help: "Agents not restarted any more, by reason: MaxRestartsExceeded, PoisonTurn.",
}, []string{"reason"})

// CrashToStart is the time from an agent's crash to the creation of its replacement, backoff
// included (the controller's own share is what is left once the backoff is taken away).
var CrashToStart = prometheus.NewHistogram(prometheus.HistogramOpts{
	Name:    "parley_agent_crash_to_start_seconds",
	Help:    "Time from an agent pod's failure to the creation of the replacement pod, backoff included.",
	Buckets: []float64{0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600},
})

// WakeLatency is the time from the user message that woke an idle agent (its activity, as the
// Session API handed it over or patched it) to the controller's record of the new pod.
var WakeLatency = prometheus.NewHistogram(prometheus.HistogramOpts{
	Name:    "parley_agent_wake_seconds",
	Help:    "Time from the user message that woke an idle agent to the creation of its new pod.",
	Buckets: []float64{0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30},
})
