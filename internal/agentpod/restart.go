package agentpod

import (
	"fmt"
	"time"

	parleyv1alpha1 "github.com/parley-dev/parley/api/v1alpha1"
)

// PoisonAfter is how many crashes in a row at the same turn make it a poison turn.
const PoisonAfter = 3

// Policy is spec.agent's restart settings.
type Policy struct {
	MaxRestarts int32
	Initial     time.Duration
	Max         time.Duration
}

// Backoff is the delay before restart number restarts+1: initial, doubled for every restart
// already made, capped at max.
func (p Policy) Backoff(restarts int32) time.Duration {
	d := p.Initial
	for i := int32(0); i < restarts && d < p.Max; i++ {
		d *= 2
	}
	return min(d, p.Max)
}

// Verdict says what follows a crash.
type Verdict struct {
	// Restart: a new pod starts at StartAt. Otherwise the agent has failed for Reason.
	Restart bool
	StartAt time.Time
	Reason  string
	Message string
	// FailuresAtTurn counts the crashes in a row at the crash's turn, this one included.
	FailuresAtTurn int32
}

// AfterCrash decides whether a crashed agent is restarted. restarts is how many restarts were
// made before this crash; prevTurn and prevFailures describe the previous crash (prevFailures 0
// when there was none); turn is the turn the agent was working on (one past the last complete
// turn), at is when it crashed.
func AfterCrash(p Policy, restarts int32, prevTurn int64, prevFailures int32, turn int64, at time.Time) Verdict {
	failures := int32(1)
	if prevFailures > 0 && prevTurn == turn {
		failures = prevFailures + 1
	}
	v := Verdict{FailuresAtTurn: failures}
	switch {
	case failures >= PoisonAfter:
		v.Reason = parleyv1alpha1.ReasonPoisonTurn
		v.Message = fmt.Sprintf("the agent crashed %d times in a row at turn %d; it is not restarted: "+
			"fix the agent or fork the conversation from an earlier Checkpoint", failures, turn)
	case restarts >= p.MaxRestarts:
		v.Reason = parleyv1alpha1.ReasonMaxRestartsExceeded
		v.Message = fmt.Sprintf("the agent crashed after %d restarts (agent.maxRestarts %d); it is not restarted", restarts, p.MaxRestarts)
	default:
		v.Restart = true
		v.StartAt = at.Add(p.Backoff(restarts))
	}
	return v
}
