package v1alpha1

// Condition types of a Conversation.
const (
	// ConditionReady: the session is live and usable.
	ConditionReady = "Ready"
	// ConditionHistoryAvailable: the history store is reachable and initialised.
	ConditionHistoryAvailable = "HistoryAvailable"
	// ConditionAgentRunning: the agent pod is running. Only a Conversation with spec.agent (or
	// whose removed agent's pod is being stopped) has it: a condition that cannot apply is left
	// out rather than reported False on every Conversation that keeps history only.
	ConditionAgentRunning = "AgentRunning"
	// ConditionExpired: the session reached its ttl or idle timeout.
	ConditionExpired = "Expired"
	// ConditionDegraded: something needs attention but the session goes on.
	ConditionDegraded = "Degraded"
	// ConditionCompacting: a compaction of the history is due or running. Only a Conversation
	// whose compaction is on (a strategy other than None and context.maxTokens) has it.
	ConditionCompacting = "Compacting"
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
	// ReasonNoAgent: spec.agent was removed and Parley stops the pod it ran. A Conversation
	// without spec.agent and without such a pod has no AgentRunning condition.
	ReasonNoAgent = "NoAgent"
	// ReasonPodRunning: the agent pod runs (AgentRunning=True).
	ReasonPodRunning = "PodRunning"
	// ReasonPodPending: the agent pod is created and waits to be scheduled or to start.
	ReasonPodPending = "PodPending"
	// ReasonPodUnschedulable: the scheduler cannot place the agent pod (not an agent crash).
	ReasonPodUnschedulable = "PodUnschedulable"
	// ReasonImagePullFailed: the agent image cannot be pulled (not an agent crash: no restart is
	// spent; the kubelet keeps trying and a template change replaces the pod).
	ReasonImagePullFailed = "ImagePullFailed"
	// ReasonContainerConfigInvalid: the kubelet cannot create the agent container (a missing
	// Secret or ConfigMap key, an invalid command): not an agent crash.
	ReasonContainerConfigInvalid = "ContainerConfigInvalid"
	// ReasonTemplateConflict: the agent template sets something Parley must set (restartPolicy,
	// the resume mount path, a reserved volume or PARLEY_* variable); no pod is created.
	ReasonTemplateConflict = "TemplateConflict"
	// ReasonInvalidTemplate: the API server refused the agent pod built from the template (the
	// condition quotes why); no pod is created until the template changes.
	ReasonInvalidTemplate = "InvalidTemplate"
	// ReasonRestartScheduled: the agent crashed; the next pod starts when the backoff ends.
	ReasonRestartScheduled = "RestartScheduled"
	// ReasonCompleted: the agent exited 0; it is not restarted.
	ReasonCompleted = "Completed"
	// ReasonSuspended: spec.suspend is true; the agent pod is removed and everything else kept.
	ReasonSuspended = "Suspended"
	// ReasonIdle: the agent waited for a person for spec.agent.idle.suspendAfter; its pod was
	// stopped and everything kept. The next user message appended through the Session API
	// wakes it (a new pod resumes with the bundle holding that message).
	ReasonIdle = "Idle"
	// ReasonAgentStopped: the session expired and its agent pod was removed.
	ReasonAgentStopped = "AgentStopped"
	// ReasonMaxRestartsExceeded: the agent crashed after agent.maxRestarts restarts.
	ReasonMaxRestartsExceeded = "MaxRestartsExceeded"
	// ReasonPoisonTurn: the agent crashed three times in a row at the same turn.
	ReasonPoisonTurn = "PoisonTurn"
	// ReasonPodNameTaken: a pod Parley did not create holds the next agent pod's name; Parley
	// neither adopts nor deletes it and retries later (AgentRunning=False).
	ReasonPodNameTaken = "PodNameTaken"
	// ReasonBundleNameTaken: a ConfigMap Parley did not create holds the next resume bundle's
	// name; Parley neither mounts nor deletes it and retries later (AgentRunning=False).
	ReasonBundleNameTaken = "BundleNameTaken"
	// ReasonBundleTooLarge: the resume bundle exceeds what a ConfigMap volume holds.
	ReasonBundleTooLarge = "BundleTooLarge"
	// ReasonNotImplemented: the feature is declared in the API but this version of the manager
	// does not act on it yet. The message names what is missing.
	ReasonNotImplemented = "NotImplemented"
	// ReasonSessionIDMismatch: spec.sessionID was set after the session started with another id.
	ReasonSessionIDMismatch = "SessionIDMismatch"
	// ReasonConversationNotFound: a Checkpoint names a Conversation that does not exist.
	ReasonConversationNotFound = "ConversationNotFound"

	// ReasonHistoryReady: the history is initialised and the store answers.
	ReasonHistoryReady = "HistoryReady"
	// ReasonInitializing: the history is being created (system prompt, seed, fork).
	ReasonInitializing = "Initializing"
	// ReasonSecretNotFound: a Secret the spec names does not exist.
	ReasonSecretNotFound = "SecretNotFound"
	// ReasonSecretInvalid: a Secret the spec names lacks a key or holds an unusable value.
	ReasonSecretInvalid = "SecretInvalid"
	// ReasonConfigMapNotFound: a ConfigMap the spec names (system prompt, seed) does not exist.
	ReasonConfigMapNotFound = "ConfigMapNotFound"
	// ReasonConfigMapKeyNotFound: the ConfigMap exists but lacks the named key.
	ReasonConfigMapKeyNotFound = "ConfigMapKeyNotFound"
	// ReasonSeedInvalid: the seed cannot be read as the declared (or detected) format.
	ReasonSeedInvalid = "SeedInvalid"
	// ReasonCheckpointNotFound: forkFrom names a Checkpoint that does not exist.
	ReasonCheckpointNotFound = "CheckpointNotFound"
	// ReasonForkSourceMismatch: forkFrom.conversation names another Conversation than the one
	// the Checkpoint belongs to; the fork is not made.
	ReasonForkSourceMismatch = "ForkSourceMismatch"
	// ReasonHistoryKeyTaken: another live Conversation already keeps its history where this one's
	// would be (the same pinned session id in the same store); this one never opens it.
	ReasonHistoryKeyTaken = "HistoryKeyTaken"
	// ReasonCheckpointNotReady: forkFrom names a Checkpoint whose snapshot is not written yet.
	ReasonCheckpointNotReady = "CheckpointNotReady"
	// ReasonSnapshotCorrupt: a stored snapshot failed verification (digest) and was not used.
	ReasonSnapshotCorrupt = "SnapshotCorrupt"
	// ReasonStoreUnavailable: the history store could not be reached or failed transiently.
	ReasonStoreUnavailable = "StoreUnavailable"
	// ReasonStoreMisconfigured: the objectStore settings cannot work (endpoint, CA bundle).
	ReasonStoreMisconfigured = "StoreMisconfigured"
	// ReasonBucketNotFound: the objectStore bucket does not exist.
	ReasonBucketNotFound = "BucketNotFound"
	// ReasonConditionalWritesUnsupported: the object store ignores If-None-Match / If-Match,
	// so two writers could both win; Parley refuses to use it.
	ReasonConditionalWritesUnsupported = "ConditionalWritesUnsupported"
	// ReasonHistoryTooLarge: the history reached its size limit (configMap.maxBytes).
	ReasonHistoryTooLarge = "HistoryTooLarge"
	// ReasonHistoryCorrupt: stored history bytes failed verification.
	ReasonHistoryCorrupt = "HistoryCorrupt"
	// ReasonHistoryDeleted: the expiration policy Delete removed the history.
	ReasonHistoryDeleted = "HistoryDeleted"
	// ReasonHistoryArchived: the expiration policy Archive kept a final checkpoint and removed
	// the live history.
	ReasonHistoryArchived = "HistoryArchived"
	// ReasonHistoryRetained: the session expired and its history is kept as it is.
	ReasonHistoryRetained = "HistoryRetained"
	// ReasonStoreError: the store failed in a way not covered by another reason.
	ReasonStoreError = "StoreError"

	// ReasonSnapshotWritten: a Checkpoint's snapshot is stored and verified.
	ReasonSnapshotWritten = "SnapshotWritten"
	// ReasonWaitingForHistory: a Checkpoint waits for its Conversation's history to be available.
	ReasonWaitingForHistory = "WaitingForHistory"
	// ReasonTurnNotFound: a Checkpoint asks for a turn the conversation has not reached.
	ReasonTurnNotFound = "TurnNotFound"
	// ReasonHistoryGone: the conversation's history was deleted; nothing can be snapshotted.
	ReasonHistoryGone = "HistoryGone"

	// ReasonThresholdReached: the context reached compactAtPercent of maxTokens (Compacting=True).
	ReasonThresholdReached = "ThresholdReached"
	// ReasonCompactionRequested: the annotation parley.dev/compact-requested-at asks for a
	// compaction newer than the last one (Compacting=True).
	ReasonCompactionRequested = "CompactionRequested"
	// ReasonWaitingForCheckpoint: the Compaction Checkpoint of the epoch is not Ready yet
	// (Compacting=True).
	ReasonWaitingForCheckpoint = "WaitingForCheckpoint"
	// ReasonCompactionRetrying: the last attempt failed; the runner retries with backoff
	// (Compacting=True).
	ReasonCompactionRetrying = "CompactionRetrying"
	// ReasonCompacted: the last compaction wrote a new epoch (Compacting=False).
	ReasonCompacted = "Compacted"
	// ReasonNotDue: the context is below compactAtPercent (Compacting=False).
	ReasonNotDue = "NotDue"
	// ReasonNothingToCompact: the strategy found nothing to fold without breaking its rules
	// (keepRecentMessages, tool call pairs) (Compacting=False).
	ReasonNothingToCompact = "NothingToCompact"
	// ReasonSummarizerUnavailable: the summarizer failed, timed out or answered garbage; the
	// history is untouched and the compaction retried with backoff (Degraded=True).
	ReasonSummarizerUnavailable = "SummarizerUnavailable"
	// ReasonCompactionFailed: a compaction failed for another reason (store, Secret) and is
	// retried with backoff (Degraded=True).
	ReasonCompactionFailed = "CompactionFailed"
	// ReasonCheckpointRefused: the API server refused a Checkpoint the manager creates (a
	// ResourceQuota on count/checkpoints.parley.dev, an admission policy); the message quotes
	// its answer (Degraded=True, cleared once no Checkpoint is refused).
	ReasonCheckpointRefused = "CheckpointRefused"
)

// Agent failure reasons, recorded in status.agent.lastFailure.reason. A pod the system failed
// for another reason (DeadlineExceeded, OutOfcpu, …) records the pod's own status reason.
const (
	// AgentFailureError: the agent container exited non-zero.
	AgentFailureError = "Error"
	// AgentFailureOOMKilled: the agent container was killed for exceeding its memory limit.
	AgentFailureOOMKilled = "OOMKilled"
	// AgentFailureEvicted: the kubelet or the eviction API evicted the pod.
	AgentFailureEvicted = "Evicted"
	// AgentFailurePreempted: the scheduler preempted the pod for a higher-priority one.
	AgentFailurePreempted = "Preempted"
	// AgentFailureDeleted: someone other than Parley deleted the pod.
	AgentFailureDeleted = "Deleted"
	// AgentFailureNodeLost: the pod's node was removed or stayed not Ready too long.
	AgentFailureNodeLost = "NodeLost"
)

// Event reasons, emitted on the object they concern.
const (
	// EventSessionStarted: a session id was minted or pinned.
	EventSessionStarted = "SessionStarted"
	// EventExpired: the session expired.
	EventExpired = "Expired"
	// EventDeleted: an expired Conversation was deleted after lifetime.deleteAfter.
	EventDeleted = "DeletedAfterExpiry"
	// EventHistoryCreated: the history was created and initialised.
	EventHistoryCreated = "HistoryCreated"
	// EventSeedImported: the seed's messages were appended.
	EventSeedImported = "SeedImported"
	// EventForked: the history was started from a Checkpoint's snapshot.
	EventForked = "Forked"
	// EventHistoryUnavailable: the history could not be opened or initialised (Warning).
	EventHistoryUnavailable = "HistoryUnavailable"
	// EventHistoryReadDeferred: this replica was decoding as much stored history as its decode
	// budget allows, or the namespace had as many reconciles waiting on their S3 histories as it
	// may, so the history was not read (on a Conversation) or the snapshot not written (on a
	// Checkpoint) this time; looked at again shortly (Warning).
	EventHistoryReadDeferred = "HistoryReadDeferred"
	// EventHistoryDeleted: the expiration policy Delete removed the history.
	EventHistoryDeleted = "HistoryDeleted"
	// EventHistoryArchived: the expiration policy Archive removed the live history after a
	// final checkpoint.
	EventHistoryArchived = "HistoryArchived"
	// EventCheckpointCreated: the controller created a Checkpoint (Scheduled, Archive).
	EventCheckpointCreated = "CheckpointCreated"
	// EventCheckpointRefused: the API server refused a Checkpoint the manager creates (Warning,
	// once per streak of refusals); the message names the Checkpoint and quotes the refusal.
	EventCheckpointRefused = "CheckpointRefused"
	// EventCheckpointPruned: a Scheduled Checkpoint past checkpoints.keep was deleted.
	EventCheckpointPruned = "CheckpointPruned"
	// EventSnapshotWritten: a Checkpoint's snapshot was stored.
	EventSnapshotWritten = "SnapshotWritten"
	// EventSnapshotFailed: a Checkpoint's snapshot could not be written or verified (Warning).
	EventSnapshotFailed = "SnapshotFailed"
	// EventStoreCleanupFailed: deleting external history objects failed (Warning).
	EventStoreCleanupFailed = "StoreCleanupFailed"
	// EventCompacted: a compaction wrote a new history epoch.
	EventCompacted = "Compacted"
	// EventHistoryReset: a reset (POST …/reset) wrote a new history epoch after its Reset
	// Checkpoint.
	EventHistoryReset = "HistoryReset"
	// EventCompactionFailed: a compaction attempt failed and will be retried (Warning).
	EventCompactionFailed = "CompactionFailed"
	// EventAgentStarted: an agent pod was created (the first, or after a resume).
	EventAgentStarted = "AgentStarted"
	// EventAgentCrashed: the agent pod failed (Warning): the reason, exit code and turn.
	EventAgentCrashed = "AgentCrashed"
	// EventAgentRestarted: a new agent pod was created after a crash, with the resume bundle.
	EventAgentRestarted = "AgentRestarted"
	// EventAgentCompleted: the agent exited 0.
	EventAgentCompleted = "AgentCompleted"
	// EventAgentFailed: the agent is not restarted any more (Warning): maxRestarts or a poison turn.
	EventAgentFailed = "AgentFailed"
	// EventAgentStopped: the agent pod was removed (suspend, expiry).
	EventAgentStopped = "AgentStopped"
	// EventAgentNotStarted: the agent pod cannot start for a reason that is not a crash (Warning).
	EventAgentNotStarted = "AgentNotStarted"
	// EventAgentNameTaken: an object Parley did not create holds the name of the next agent pod
	// or resume bundle; it is left alone (Warning).
	EventAgentNameTaken = "AgentNameTaken"
	// EventAgentSuspended: the agent waited for a person for idle.suspendAfter; its pod was
	// stopped.
	EventAgentSuspended = "AgentSuspended"
	// EventAgentWoken: a user message woke an agent suspended while idle; a new pod resumes.
	EventAgentWoken = "AgentWoken"
)

// AnnotationCompactRequestedAt on a Conversation asks for a compaction now (RFC 3339 time):
// one is run when the time is newer than status.lastCompaction.time, whatever the context's
// size, unless the strategy is None.
const AnnotationCompactRequestedAt = "parley.dev/compact-requested-at"

// Annotations on a Reset Checkpoint (POST …/reset), the audit trail of a reset.
const (
	// AnnotationResetKey is a hash of the reset's Idempotency-Key: a retry with the same key
	// finds this Checkpoint and answers the first reset's result.
	AnnotationResetKey = "parley.dev/reset-key"
	// AnnotationResetRequestedBy is the user who asked for the reset.
	AnnotationResetRequestedBy = "parley.dev/reset-requested-by"
	// AnnotationResetResult is set once the new epoch is written: {"epoch","cleared","kept"}.
	AnnotationResetResult = "parley.dev/reset-result"
)
