package v1alpha1

import "k8s.io/apimachinery/pkg/runtime"

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
