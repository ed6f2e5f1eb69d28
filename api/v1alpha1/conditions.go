package v1alpha1

// Condition types of a Conversation.
const (
	// ConditionReady: the session is live and usable.
	ConditionReady = "Ready"
	// ConditionHistoryAvailable: the history store is reachable and initialised.
	ConditionHistoryAvailable = "HistoryAvailable"
	// ConditionAgentRunning: the agent pod is running.
	ConditionAgentRunning = "AgentRunning"
	// ConditionExpired: the session reached its ttl or idle timeout.
	ConditionExpired = "Expired"
	// ConditionDegraded: something needs attention but the session goes on.
	ConditionDegraded = "Degraded"
)

// Condition reasons. CamelCase, stable: alerts and scripts match on them.
const (
	// ReasonActive: the session is live.
	ReasonActive = "Active"
	// ReasonTTLExceeded: lifetime.ttl has passed since creation.
	ReasonTTLExceeded = "TTLExceeded"
	// ReasonIdleTimeout: lifetime.idleTimeout has passed since the last activity.
	ReasonIdleTimeout = "IdleTimeout"
	// ReasonNotExpired: the session is within its lifetime.
	ReasonNotExpired = "NotExpired"
	// ReasonExpired: the session expired.
	ReasonExpired = "Expired"
	// ReasonNoAgent: spec.agent is not set, so no pod is managed.
	ReasonNoAgent = "NoAgent"
	// ReasonNotImplemented: the feature is declared in the API but this version of the manager
	// does not act on it yet. The message names what is missing.
	ReasonNotImplemented = "NotImplemented"
	// ReasonSessionIDMismatch: spec.sessionID was set after the session started with another id.
	ReasonSessionIDMismatch = "SessionIDMismatch"
	// ReasonConversationNotFound: a Checkpoint names a Conversation that does not exist.
	ReasonConversationNotFound = "ConversationNotFound"
)

// Event reasons, emitted on the object they concern.
const (
	// EventSessionStarted: a session id was minted or pinned.
	EventSessionStarted = "SessionStarted"
	// EventExpired: the session expired.
	EventExpired = "Expired"
	// EventDeleted: an expired Conversation was deleted after lifetime.deleteAfter.
	EventDeleted = "DeletedAfterExpiry"
)
