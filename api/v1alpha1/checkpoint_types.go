package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// CheckpointReason says why a checkpoint was taken.
// +kubebuilder:validation:Enum=Manual;Crash;Compaction;Scheduled;Fork;Archive;Reset
type CheckpointReason string

const (
	// CheckpointManual was asked for by a person (kubectl create, kubectl parley checkpoint).
	CheckpointManual CheckpointReason = "Manual"
	// CheckpointCrash was taken when the agent crashed, at the last complete turn.
	CheckpointCrash CheckpointReason = "Crash"
	// CheckpointCompaction was taken before a compaction.
	CheckpointCompaction CheckpointReason = "Compaction"
	// CheckpointScheduled was taken by spec.checkpoints.
	CheckpointScheduled CheckpointReason = "Scheduled"
	// CheckpointFork was taken to start another conversation from.
	CheckpointFork CheckpointReason = "Fork"
	// CheckpointArchive was taken when the session expired with expirationPolicy Archive: the
	// final state, kept after the live history is removed.
	CheckpointArchive CheckpointReason = "Archive"
	// CheckpointReset was taken before a reset cleared the history (POST …/reset): everything
	// the history held, a turn still waiting for a tool included.
	CheckpointReset CheckpointReason = "Reset"
)

// ConversationReference names a Conversation in the Checkpoint's namespace.
type ConversationReference struct {
	// name of the Conversation.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`
}

// CheckpointSpec says what to snapshot. It is immutable: a checkpoint is a fact about the past.
// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="Checkpoint spec is immutable; create a new Checkpoint instead"
type CheckpointSpec struct {
	// conversationRef is the Conversation to snapshot.
	// +required
	ConversationRef ConversationReference `json:"conversationRef"`

	// reason the checkpoint is taken.
	// +optional
	// +kubebuilder:default=Manual
	Reason CheckpointReason `json:"reason,omitempty"`

	// turn to snapshot; the latest complete turn when unset.
	// +optional
	// +kubebuilder:validation:Minimum=0
	Turn *int64 `json:"turn,omitempty"`
}

// CheckpointPhase summarises a checkpoint's conditions.
// +kubebuilder:validation:Enum=Pending;Ready;Failed
type CheckpointPhase string

const (
	// CheckpointPending is not written yet.
	CheckpointPending CheckpointPhase = "Pending"
	// CheckpointReady is written and verified.
	CheckpointReady CheckpointPhase = "Ready"
	// CheckpointFailed could not be written.
	CheckpointFailed CheckpointPhase = "Failed"
)

// CheckpointStatus describes the stored snapshot.
type CheckpointStatus struct {
	// observedGeneration is the spec generation this status describes.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// phase summarises the conditions in one word.
	// +optional
	Phase CheckpointPhase `json:"phase,omitempty"`

	// conditions: Ready.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// sessionID of the conversation snapshotted.
	// +optional
	SessionID string `json:"sessionID,omitempty"`

	// turn snapshotted.
	// +optional
	Turn int64 `json:"turn,omitempty"`

	// sequence of the last message in the snapshot.
	// +optional
	Sequence int64 `json:"sequence,omitempty"`

	// messages in the snapshot.
	// +optional
	Messages int64 `json:"messages,omitempty"`

	// tokens in the snapshot.
	// +optional
	Tokens int64 `json:"tokens,omitempty"`

	// bytes of the stored snapshot.
	// +optional
	Bytes int64 `json:"bytes,omitempty"`

	// digest is the sha256 of the snapshot, verified on every read.
	// +optional
	Digest string `json:"digest,omitempty"`

	// location of the snapshot in the history store.
	// +optional
	Location string `json:"location,omitempty"`

	// adapterState at the time of the snapshot.
	// +optional
	AdapterState *AdapterState `json:"adapterState,omitempty"`
}

// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=ckpt,categories=parley
// +kubebuilder:printcolumn:name="Conversation",type=string,JSONPath=`.spec.conversationRef.name`
// +kubebuilder:printcolumn:name="Reason",type=string,JSONPath=`.spec.reason`
// +kubebuilder:printcolumn:name="Turn",type=integer,JSONPath=`.status.turn`
// +kubebuilder:printcolumn:name="Messages",type=integer,JSONPath=`.status.messages`
// +kubebuilder:printcolumn:name="Size",type=integer,JSONPath=`.status.bytes`
// +kubebuilder:printcolumn:name="Phase",type=string,JSONPath=`.status.phase`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`

// Checkpoint is an immutable snapshot of one conversation at one turn. Creating one is how a
// snapshot is asked for; a Conversation can later fork from it.
type Checkpoint struct {
	metav1.TypeMeta `json:",inline"`

	// metadata is standard object metadata.
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec says what to snapshot.
	// +required
	Spec CheckpointSpec `json:"spec"`

	// status describes the stored snapshot.
	// +optional
	Status CheckpointStatus `json:"status,omitempty"`
}

// +kubebuilder:object:root=true

// CheckpointList contains a list of Checkpoint.
type CheckpointList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Checkpoint `json:"items"`
}
