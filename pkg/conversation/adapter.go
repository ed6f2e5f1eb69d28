package conversation

import (
	"errors"
	"fmt"
	"time"
	"unicode/utf8"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
)

// Adapter types Parley knows. Any other string is a generic adapter.
const (
	AdapterClaudeAgentSDK = "claude-agent-sdk"
	AdapterOpenAI         = "openai"
	AdapterGeneric        = "generic"
)

// AdapterState is what an agent adapter reports about its own session so that a restarted
// agent can resume it (the Adapter State seed).
type AdapterState interface {
	// Type is the adapter type, e.g. AdapterClaudeAgentSDK.
	Type() string
	// Resumable reports whether the adapter can resume from this state.
	Resumable() bool
	// Session is the adapter's own session id ("" when it has none).
	Session() string
}

// ClaudeAgentSDKState is the Claude Agent SDK's session: resume=<SessionID> finds the
// transcript under the same WorkspacePath (the SDK files sessions by cwd).
type ClaudeAgentSDKState struct {
	SessionID      string    `json:"sessionId"`
	CreatedAt      time.Time `json:"createdAt,omitzero"`
	LastActivityAt time.Time `json:"lastActivityAt,omitzero"`
	WorkspacePath  string    `json:"workspacePath,omitzero"`
	PromptName     string    `json:"promptName,omitzero"`
	MessageCount   int       `json:"messageCount,omitzero"`
	// IsComplete is true when the SDK's last query finished (a result message was seen).
	// A complete session is still resumable: resuming continues it.
	IsComplete bool `json:"isComplete,omitzero"`
	// ForkedFrom is the SDK session this state was copied from when the conversation was forked
	// from a checkpoint: resume it with the SDK's forkSession option, so the new conversation
	// gets its own SDK session instead of writing into the source's.
	ForkedFrom string `json:"forkedFrom,omitzero"`
}

// Type implements AdapterState.
func (*ClaudeAgentSDKState) Type() string { return AdapterClaudeAgentSDK }

// Resumable implements AdapterState: the SDK can resume any session it has an id for.
func (s *ClaudeAgentSDKState) Resumable() bool { return s.SessionID != "" }

// Session implements AdapterState.
func (s *ClaudeAgentSDKState) Session() string { return s.SessionID }

// GenericAdapterState is the state of any other adapter: a type, an optional session id, a
// resumable bit, and opaque data the adapter reads back.
type GenericAdapterState struct {
	AdapterType string         `json:"adapterType"`
	SessionID   string         `json:"sessionId,omitzero"`
	CanResume   bool           `json:"resumable,omitzero"`
	Data        jsontext.Value `json:"data,omitzero"`
}

// Type implements AdapterState.
func (s *GenericAdapterState) Type() string { return s.AdapterType }

// Resumable implements AdapterState.
func (s *GenericAdapterState) Resumable() bool { return s.CanResume }

// Session implements AdapterState.
func (s *GenericAdapterState) Session() string { return s.SessionID }

// AdapterStates is a history of adapter states, oldest first. It serialises each state as
// {"type": ..., "state": {...}} so the concrete type comes back.
type AdapterStates []AdapterState

type adapterEnvelope struct {
	Type  string         `json:"type"`
	State jsontext.Value `json:"state"`
}

// MarshalJSON implements json.Marshaler.
func (a AdapterStates) MarshalJSON() ([]byte, error) {
	envs := make([]adapterEnvelope, 0, len(a))
	for _, s := range a {
		if s == nil {
			return nil, errors.New("conversation: nil adapter state")
		}
		raw, err := json.Marshal(s, lenientJSON)
		if err != nil {
			return nil, err
		}
		envs = append(envs, adapterEnvelope{Type: s.Type(), State: raw})
	}
	return json.Marshal(envs, lenientJSON)
}

// UnmarshalJSON implements json.Unmarshaler.
func (a *AdapterStates) UnmarshalJSON(data []byte) error {
	var envs []adapterEnvelope
	if err := json.Unmarshal(data, &envs, lenientJSON); err != nil {
		return err
	}
	out := make(AdapterStates, 0, len(envs))
	for _, env := range envs {
		s, err := DecodeAdapterState(env.Type, env.State)
		if err != nil {
			return err
		}
		out = append(out, s)
	}
	*a = out
	return nil
}

// DecodeAdapterState decodes the JSON state of an adapter of the given type: a
// ClaudeAgentSDKState for AdapterClaudeAgentSDK, a GenericAdapterState otherwise.
func DecodeAdapterState(adapterType string, data []byte) (AdapterState, error) {
	if adapterType == "" {
		return nil, errors.New("conversation: adapter state without a type")
	}
	if !utf8.ValidString(adapterType) { // JSON would mangle it: the state would come back as another type
		return nil, errors.New("conversation: adapter type is not valid UTF-8")
	}
	if !utf8.Valid(data) { // raw data (GenericAdapterState.Data) would not come back as stored
		return nil, fmt.Errorf("conversation: %s adapter state is not valid UTF-8", adapterType)
	}
	if adapterType == AdapterClaudeAgentSDK {
		var s ClaudeAgentSDKState
		if err := json.Unmarshal(data, &s, lenientJSON); err != nil {
			return nil, fmt.Errorf("conversation: decode %s adapter state: %w", adapterType, err)
		}
		return &s, nil
	}
	var s GenericAdapterState
	if err := json.Unmarshal(data, &s, lenientJSON); err != nil {
		return nil, fmt.Errorf("conversation: decode %s adapter state: %w", adapterType, err)
	}
	if s.AdapterType == "" {
		s.AdapterType = adapterType
	}
	if s.AdapterType != adapterType {
		return nil, fmt.Errorf("conversation: adapter state says type %q inside a %q envelope", s.AdapterType, adapterType)
	}
	return &s, nil
}

// FindResumable returns the latest state of the given adapter type that is resumable.
func FindResumable(states []AdapterState, adapterType string) (AdapterState, bool) {
	for i := len(states) - 1; i >= 0; i-- {
		s := states[i]
		if s != nil && s.Type() == adapterType && s.Resumable() {
			return s, true
		}
	}
	return nil, false
}
