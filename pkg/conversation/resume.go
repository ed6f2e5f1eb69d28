package conversation

import (
	"errors"
	"fmt"
)

// ResumeValidation says how strictly a restarted agent's resume state is checked against
// what the conversation expects (the Adapter State seed's STRICT / RELAXED / NONE).
type ResumeValidation string

// Resume validation modes.
const (
	// ResumeStrict: there must be a resumable state of the expected adapter type, and its
	// session id must equal the expected one (when one is expected). Anything else refuses.
	ResumeStrict ResumeValidation = "Strict"
	// ResumeRelaxed: there must be a resumable state; a different adapter type or session id
	// is reported as a warning and the latest resumable state of any type is used.
	ResumeRelaxed ResumeValidation = "Relaxed"
	// ResumeNone: no checks; the latest resumable state of the expected type is used if
	// there is one, and no state at all means a fresh start, not an error.
	ResumeNone ResumeValidation = "None"
)

// ErrResumeMismatch is returned when resume validation refuses.
var ErrResumeMismatch = errors.New("conversation: resume state does not match")

// ResumeExpectation is what the conversation expects the agent to resume.
type ResumeExpectation struct {
	AdapterType string
	// SessionID is the adapter session expected; empty accepts any.
	SessionID string
}

// ResumeDecision is the outcome of ValidateResume.
type ResumeDecision struct {
	// State is the adapter state to resume from; nil means start fresh.
	State AdapterState
	// Warnings are the mismatches Relaxed let through.
	Warnings []string
}

// ValidateResume picks the adapter state a restarted agent resumes from, out of the states
// reported so far (oldest first), and checks it as the mode says.
func ValidateResume(mode ResumeValidation, states []AdapterState, want ResumeExpectation) (ResumeDecision, error) {
	switch mode {
	case ResumeNone:
		s, _ := FindResumable(states, want.AdapterType)
		return ResumeDecision{State: s}, nil
	case ResumeStrict:
		s, ok := FindResumable(states, want.AdapterType)
		if !ok {
			return ResumeDecision{}, fmt.Errorf("%w: no resumable %s state", ErrResumeMismatch, want.AdapterType)
		}
		if want.SessionID != "" && s.Session() != want.SessionID {
			return ResumeDecision{}, fmt.Errorf("%w: session %q, expected %q", ErrResumeMismatch, s.Session(), want.SessionID)
		}
		return ResumeDecision{State: s}, nil
	case ResumeRelaxed:
		s, ok := FindResumable(states, want.AdapterType)
		var warnings []string
		if !ok {
			s, ok = latestResumable(states)
			if !ok {
				return ResumeDecision{}, fmt.Errorf("%w: no resumable state", ErrResumeMismatch)
			}
			warnings = append(warnings, fmt.Sprintf("adapter type %q, expected %q", s.Type(), want.AdapterType))
		}
		if want.SessionID != "" && s.Session() != want.SessionID {
			warnings = append(warnings, fmt.Sprintf("session %q, expected %q", s.Session(), want.SessionID))
		}
		return ResumeDecision{State: s, Warnings: warnings}, nil
	}
	return ResumeDecision{}, fmt.Errorf("conversation: unknown resume validation %q", mode)
}

func latestResumable(states []AdapterState) (AdapterState, bool) {
	for i := len(states) - 1; i >= 0; i-- {
		if states[i] != nil && states[i].Resumable() {
			return states[i], true
		}
	}
	return nil, false
}
