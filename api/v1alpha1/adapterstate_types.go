package v1alpha1

import "k8s.io/apimachinery/pkg/runtime"

// The longest type and session id an AdapterState holds (the CRDs' maxLength). An agent
// reports its adapter state; one longer than these would make every status write that
// carries it invalid, so it is refused at the Session API and never copied into status.
const (
	MaxAdapterTypeLength      = 64
	MaxAdapterSessionIDLength = 256
)

// AdapterStateFits says whether an adapter state's type and session id fit an AdapterState.
func AdapterStateFits(adapterType, sessionID string) bool {
	return len(adapterType) <= MaxAdapterTypeLength && len(sessionID) <= MaxAdapterSessionIDLength
}

// AdapterState is what an agent's adapter reported about itself (e.g. the Claude Agent SDK's
// session id), so a restarted agent can resume its SDK session. The latest report wins.
type AdapterState struct {
	// type of the adapter, e.g. claude-agent-sdk.
	// +optional
	// +kubebuilder:validation:MaxLength=64
	Type string `json:"type,omitempty"`

	// sessionID is the adapter's own session id.
	// +optional
	// +kubebuilder:validation:MaxLength=256
	SessionID string `json:"sessionID,omitempty"`

	// resumable says whether the adapter can resume from this state.
	// +optional
	Resumable bool `json:"resumable,omitempty"`

	// data is adapter-specific state, kept small (a few KiB).
	// +optional
	// +kubebuilder:pruning:PreserveUnknownFields
	// +kubebuilder:validation:Schemaless
	// +kubebuilder:validation:Type=object
	Data *runtime.RawExtension `json:"data,omitempty"`
}
