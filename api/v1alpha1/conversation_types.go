package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ConversationSpec is the desired state of one agent conversation session. The controller never
// writes it, so GitOps tools see no drift.
// +kubebuilder:validation:XValidation:rule="!has(oldSelf.sessionID) || (has(self.sessionID) && self.sessionID == oldSelf.sessionID)",message="spec.sessionID is immutable once set"
// +kubebuilder:validation:XValidation:rule="has(self.forkFrom) == has(oldSelf.forkFrom) && (!has(self.forkFrom) || self.forkFrom == oldSelf.forkFrom)",message="spec.forkFrom can only be set when the Conversation is created"
type ConversationSpec struct {
	// sessionID pins the session id (a UUID, e.g. to continue a session an agent already has).
	// When empty the controller mints one into status.sessionID. Immutable once set.
	// +optional
	// +kubebuilder:validation:MaxLength=36
	// +kubebuilder:validation:XValidation:rule="self.matches('^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$')",message="sessionID must be a UUID such as 0b7e1a3c-5f2d-4c8e-9a41-6d2f0e8b7c15"
	SessionID string `json:"sessionID,omitempty"`

	// systemPrompt is the conversation's system message.
	// +optional
	SystemPrompt *SystemPrompt `json:"systemPrompt,omitempty"`

	// seed points at initial messages (JSONL in the neutral format, or a Claude Code transcript),
	// so a conversation's opening can ship with its manifest.
	// +optional
	Seed *SeedSource `json:"seed,omitempty"`

	// history says where the conversation's messages are stored. Exactly one backend.
	// +required
	History HistorySpec `json:"history"`

	// lifetime bounds how long the session lives.
	// +optional
	// +kubebuilder:default={}
	Lifetime LifetimeSpec `json:"lifetime,omitempty"`

	// context describes the model's context window and how history is compacted to fit it.
	// +optional
	// +kubebuilder:default={}
	Context ContextSpec `json:"context,omitempty"`

	// agent is the pod that runs the agent. Without it Parley only keeps the history.
	// +optional
	Agent *AgentSpec `json:"agent,omitempty"`

	// checkpoints says when snapshots are taken besides the ones always taken on a crash and
	// before a compaction.
	// +optional
	Checkpoints *CheckpointPolicy `json:"checkpoints,omitempty"`

	// forkFrom starts this conversation as a copy of a Checkpoint (rewind or branch).
	// Settable only at creation.
	// +optional
	ForkFrom *ForkSource `json:"forkFrom,omitempty"`

	// suspend stops the agent pod and keeps everything else.
	// +optional
	// +kubebuilder:default=false
	Suspend *bool `json:"suspend,omitempty"`
}

// SystemPrompt is given inline or by reference, not both.
// +kubebuilder:validation:XValidation:rule="has(self.text) != has(self.configMapKeyRef)",message="systemPrompt needs exactly one of text or configMapKeyRef"
type SystemPrompt struct {
	// text is the system prompt itself.
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=65536
	Text string `json:"text,omitempty"`

	// configMapKeyRef names a key of a ConfigMap in the Conversation's namespace.
	// +optional
	ConfigMapKeyRef *ConfigMapKeyReference `json:"configMapKeyRef,omitempty"`
}

// SeedFormat is the encoding of seed messages.
// +kubebuilder:validation:Enum=Auto;Neutral;ClaudeCode
type SeedFormat string

const (
	// SeedFormatAuto detects the format from the content.
	SeedFormatAuto SeedFormat = "Auto"
	// SeedFormatNeutral is JSONL of Parley's neutral messages.
	SeedFormatNeutral SeedFormat = "Neutral"
	// SeedFormatClaudeCode is a Claude Code / Agent SDK transcript.
	SeedFormatClaudeCode SeedFormat = "ClaudeCode"
)

// SeedSource points at initial messages.
type SeedSource struct {
	// configMapKeyRef names a key of a ConfigMap in the Conversation's namespace.
	// +required
	ConfigMapKeyRef ConfigMapKeyReference `json:"configMapKeyRef"`

	// format of the seed.
	// +optional
	// +kubebuilder:default=Auto
	Format SeedFormat `json:"format,omitempty"`
}

// HistorySpec selects exactly one history backend. The backend cannot be switched after
// creation: the history already written lives there.
// +kubebuilder:validation:XValidation:rule="(has(self.configMap) ? 1 : 0) + (has(self.objectStore) ? 1 : 0) == 1",message="history needs exactly one backend: configMap or objectStore"
// +kubebuilder:validation:XValidation:rule="has(self.configMap) == has(oldSelf.configMap)",message="the history backend cannot be switched after creation; create a new Conversation (or fork one from a Checkpoint)"
type HistorySpec struct {
	// configMap keeps history in ConfigMaps the Conversation owns. For small sessions and
	// clusters without object storage.
	// +optional
	ConfigMap *ConfigMapHistory `json:"configMap,omitempty"`

	// objectStore keeps history in any S3-compatible object store.
	// +optional
	ObjectStore *ObjectStoreHistory `json:"objectStore,omitempty"`
}

// ConfigMapHistory keeps history in ConfigMaps owned by the Conversation.
type ConfigMapHistory struct {
	// name prefixes the ConfigMaps' names, which are "<name>-<sessionID>-history[.<part>]".
	// Defaults to the Conversation's name (cut to 128 characters). The session id in the
	// name keeps a re-created Conversation of the same name from reading an old history.
	// +optional
	// +kubebuilder:validation:MaxLength=128
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$`
	Name string `json:"name,omitempty"`

	// maxBytes bounds the history kept in etcd. Past it appends are refused; use objectStore
	// for larger histories.
	// +optional
	// +kubebuilder:default="8Mi"
	// +kubebuilder:validation:XValidation:rule="quantity(self).isGreaterThan(quantity('0'))",message="maxBytes must be positive"
	// +kubebuilder:validation:XValidation:rule="quantity(self).compareTo(quantity('64Mi')) <= 0",message="maxBytes must be at most 64Mi; use objectStore for larger histories"
	MaxBytes *resource.Quantity `json:"maxBytes,omitempty"`
}

// ObjectStoreHistory keeps history in an S3-compatible bucket.
// +kubebuilder:validation:XValidation:rule="self.bucket == oldSelf.bucket && self.endpoint == oldSelf.endpoint && has(self.prefix) == has(oldSelf.prefix) && (!has(self.prefix) || self.prefix == oldSelf.prefix)",message="objectStore endpoint, bucket and prefix are immutable: the history already written lives there"
type ObjectStoreHistory struct {
	// endpoint is the S3 endpoint as host[:port] or an http(s) URL.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=512
	// +kubebuilder:validation:XValidation:rule="!self.contains('@')",message="objectStore.endpoint must not carry credentials; put them in the Secret named by credentialsSecretRef"
	Endpoint string `json:"endpoint"`

	// bucket holds the history.
	// +required
	// +kubebuilder:validation:MinLength=3
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$`
	Bucket string `json:"bucket"`

	// prefix is prepended to every object key: key segments of letters, digits, '.', '_' and '-'
	// joined by single '/' (a trailing '/' is allowed), with no leading '/' and no '.' or '..'
	// segment, so that no store that maps keys to paths resolves it outside the bucket.
	// +optional
	// +kubebuilder:validation:MaxLength=512
	// +kubebuilder:validation:XValidation:rule="self == '' || self.matches('^[A-Za-z0-9._-]+(/[A-Za-z0-9._-]+)*/?$')",message="objectStore.prefix must be key segments of letters, digits, '.', '_' and '-' joined by single '/', without a leading '/'"
	// +kubebuilder:validation:XValidation:rule="!self.split('/').exists(s, s == '.' || s == '..')",message="objectStore.prefix must not hold a '.' or '..' segment"
	Prefix string `json:"prefix,omitempty"`

	// maxBytes bounds the history, all retained epochs together (checkpoints apart). Past it
	// appends are refused (the Session API answers 413). A replica holds a conversation's
	// current epoch in memory, hence the ceiling.
	// +optional
	// +kubebuilder:default="64Mi"
	// +kubebuilder:validation:XValidation:rule="quantity(self).isGreaterThan(quantity('0'))",message="objectStore.maxBytes must be positive"
	// +kubebuilder:validation:XValidation:rule="quantity(self).compareTo(quantity('256Mi')) <= 0",message="objectStore.maxBytes must be at most 256Mi: a replica holds a conversation's current epoch in memory"
	MaxBytes *resource.Quantity `json:"maxBytes,omitempty"`

	// region of the bucket, for stores that need one.
	// +optional
	// +kubebuilder:validation:MaxLength=64
	Region string `json:"region,omitempty"`

	// forcePathStyle addresses the bucket as endpoint/bucket instead of bucket.endpoint.
	// +optional
	ForcePathStyle bool `json:"forcePathStyle,omitempty"`

	// insecure talks plain HTTP to the endpoint.
	// +optional
	Insecure bool `json:"insecure,omitempty"`

	// credentialsSecretRef names a Secret in the Conversation's namespace with the keys
	// accessKeyID and secretAccessKey. Only the manager reads it; agents never see it.
	// +required
	CredentialsSecretRef *SecretReference `json:"credentialsSecretRef"`

	// caBundleSecretRef names a Secret whose key ca.crt holds the CA that signed the endpoint's
	// certificate.
	// +optional
	CABundleSecretRef *SecretReference `json:"caBundleSecretRef,omitempty"`
}

// ExpirationPolicy says what happens to the history when a conversation expires.
// +kubebuilder:validation:Enum=Delete;Archive;Retain
type ExpirationPolicy string

const (
	// ExpirationPolicyDelete deletes the history.
	ExpirationPolicyDelete ExpirationPolicy = "Delete"
	// ExpirationPolicyArchive takes a final checkpoint, then deletes the live history.
	ExpirationPolicyArchive ExpirationPolicy = "Archive"
	// ExpirationPolicyRetain keeps the history as it is.
	ExpirationPolicyRetain ExpirationPolicy = "Retain"
)

// LifetimeSpec bounds a session's life. Durations use Go syntax: 90s, 30m, 24h, 1h30m.
// +kubebuilder:validation:XValidation:rule="!has(self.ttl) || duration(self.ttl) > duration('0s')",message="lifetime.ttl must be positive"
// +kubebuilder:validation:XValidation:rule="!has(self.idleTimeout) || duration(self.idleTimeout) > duration('0s')",message="lifetime.idleTimeout must be positive"
// +kubebuilder:validation:XValidation:rule="!has(self.deleteAfter) || duration(self.deleteAfter) >= duration('0s')",message="lifetime.deleteAfter must not be negative"
type LifetimeSpec struct {
	// ttl is the session's lifetime from the Conversation's creation.
	// +optional
	// +kubebuilder:default="24h"
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Pattern=`^-?([0-9]+(\.[0-9]+)?(ns|us|µs|ms|s|m|h))+$`
	TTL *metav1.Duration `json:"ttl,omitempty"`

	// idleTimeout expires the session this long after its last activity.
	// +optional
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Pattern=`^-?([0-9]+(\.[0-9]+)?(ns|us|µs|ms|s|m|h))+$`
	IdleTimeout *metav1.Duration `json:"idleTimeout,omitempty"`

	// expirationPolicy says what happens to the history on expiry. Retain, the default, never
	// loses data by surprise.
	// +optional
	// +kubebuilder:default=Retain
	ExpirationPolicy ExpirationPolicy `json:"expirationPolicy,omitempty"`

	// deleteAfter deletes the Conversation object itself this long after it expired.
	// Unset keeps it.
	// +optional
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Pattern=`^-?([0-9]+(\.[0-9]+)?(ns|us|µs|ms|s|m|h))+$`
	DeleteAfter *metav1.Duration `json:"deleteAfter,omitempty"`
}

// CompactionStrategy is how history is shrunk to fit the context window.
// +kubebuilder:validation:Enum=SlidingWindow;ClearToolResults;Summarize;None
type CompactionStrategy string

const (
	// CompactionSlidingWindow keeps the system message and the newest messages that fit.
	CompactionSlidingWindow CompactionStrategy = "SlidingWindow"
	// CompactionClearToolResults replaces old tool outputs with placeholders.
	CompactionClearToolResults CompactionStrategy = "ClearToolResults"
	// CompactionSummarize folds the oldest exchanges into a summary written by a model.
	CompactionSummarize CompactionStrategy = "Summarize"
	// CompactionNone never compacts.
	CompactionNone CompactionStrategy = "None"
)

// Tokenizer counts tokens.
// +kubebuilder:validation:Enum=cl100k_base;o200k_base;approximate
type Tokenizer string

const (
	// TokenizerCL100K is OpenAI's cl100k_base encoding.
	TokenizerCL100K Tokenizer = "cl100k_base"
	// TokenizerO200K is OpenAI's o200k_base encoding.
	TokenizerO200K Tokenizer = "o200k_base"
	// TokenizerApproximate estimates one token per 4 bytes of UTF-8 text: fast, within about ±30 %.
	TokenizerApproximate Tokenizer = "approximate"
)

// ContextSpec describes the model's context window.
// +kubebuilder:validation:XValidation:rule="!has(self.strategy) || self.strategy != 'Summarize' || has(self.summarizer)",message="context.strategy Summarize needs context.summarizer"
type ContextSpec struct {
	// maxTokens is the model's context window. Unset: no compaction.
	// +optional
	// +kubebuilder:validation:Minimum=1
	MaxTokens *int64 `json:"maxTokens,omitempty"`

	// compactAtPercent of maxTokens triggers compaction.
	// +optional
	// +kubebuilder:default=80
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=100
	CompactAtPercent int32 `json:"compactAtPercent,omitempty"`

	// strategy used to compact.
	// +optional
	// +kubebuilder:default=SlidingWindow
	Strategy CompactionStrategy `json:"strategy,omitempty"`

	// keepRecentMessages are never compacted away.
	// +optional
	// +kubebuilder:default=10
	// +kubebuilder:validation:Minimum=1
	KeepRecentMessages int32 `json:"keepRecentMessages,omitempty"`

	// tokenizer used to count tokens when the provider did not report usage.
	// +optional
	// +kubebuilder:default=cl100k_base
	Tokenizer Tokenizer `json:"tokenizer,omitempty"`

	// summarizer writes summaries for the Summarize strategy.
	// +optional
	Summarizer *SummarizerSpec `json:"summarizer,omitempty"`
}

// SummarizerProvider is the API a summarizer speaks.
// +kubebuilder:validation:Enum=openai;anthropic
type SummarizerProvider string

const (
	// SummarizerOpenAI speaks an OpenAI-compatible /v1/chat/completions API.
	SummarizerOpenAI SummarizerProvider = "openai"
	// SummarizerAnthropic speaks the Anthropic Messages API.
	SummarizerAnthropic SummarizerProvider = "anthropic"
)

// SummarizerSpec configures the model that writes summaries. The manager sends the endpoint the
// apiKey and the history it summarises, so a plain-http endpoint must be asked for by name.
// +kubebuilder:validation:XValidation:rule="!has(self.endpoint) || self.endpoint.startsWith('https://') || (has(self.insecure) && self.insecure)",message="summarizer.endpoint must be an https:// URL: the manager sends it the apiKey and the history; set summarizer.insecure: true to allow plain http"
type SummarizerSpec struct {
	// provider is the API the endpoint speaks.
	// +required
	Provider SummarizerProvider `json:"provider"`

	// endpoint is the API's base URL. Defaults to the provider's public endpoint.
	// +optional
	// +kubebuilder:validation:MaxLength=512
	// +kubebuilder:validation:XValidation:rule="self.startsWith('https://') || self.startsWith('http://')",message="summarizer.endpoint must be an http(s) URL"
	Endpoint string `json:"endpoint,omitempty"`

	// model names the model, e.g. gpt-4o-mini or claude-haiku-4-5.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=256
	Model string `json:"model"`

	// credentialsSecretRef names a Secret whose key apiKey holds the API key. Whoever sets or
	// changes the summarizer must be allowed to get this Secret (checked at admission).
	// +required
	CredentialsSecretRef *SecretReference `json:"credentialsSecretRef"`

	// insecure allows an http:// endpoint: the API key and the history then travel unencrypted.
	// +optional
	Insecure bool `json:"insecure,omitempty"`
}

// AgentAdapter tells Parley how the agent resumes.
// +kubebuilder:validation:Enum=generic;claude-agent-sdk;openai
type AgentAdapter string

const (
	// AdapterGeneric mounts the neutral state and the provider renderings.
	AdapterGeneric AgentAdapter = "generic"
	// AdapterClaudeAgentSDK also mounts a Claude config directory the SDK resumes from.
	AdapterClaudeAgentSDK AgentAdapter = "claude-agent-sdk"
	// AdapterOpenAI is an agent built on the OpenAI SDK.
	AdapterOpenAI AgentAdapter = "openai"
)

// AgentSpec is the agent's pod.
// +kubebuilder:validation:XValidation:rule="!has(self.template.spec) || !has(self.template.spec.restartPolicy) || self.template.spec.restartPolicy == 'Never'",message="agent.template.spec.restartPolicy must be Never (or unset): Parley restarts a crashed agent itself, with the resume bundle"
type AgentSpec struct {
	// template of the agent pod: a Pod template (metadata and spec), validated by the apiserver
	// like a Pod's. Parley sets restartPolicy Never and mounts the resume bundle. Its fields are
	// the Pod's, documented there (kubectl explain pod.spec); the CRD leaves their descriptions
	// out to stay small enough for client-side kubectl apply.
	// +required
	Template corev1.PodTemplateSpec `json:"template"`

	// maxRestarts bounds how often a crashed agent is restarted.
	// +optional
	// +kubebuilder:default=5
	// +kubebuilder:validation:Minimum=0
	MaxRestarts *int32 `json:"maxRestarts,omitempty"`

	// backoff between restarts.
	// +optional
	// +kubebuilder:default={}
	Backoff BackoffSpec `json:"backoff,omitempty"`

	// resumeMountPath is where the resume bundle is mounted, read-only.
	// +optional
	// +kubebuilder:default="/var/run/parley"
	// +kubebuilder:validation:Pattern=`^/.*`
	// +kubebuilder:validation:MaxLength=256
	ResumeMountPath string `json:"resumeMountPath,omitempty"`

	// adapter the agent is built on.
	// +optional
	// +kubebuilder:default=generic
	Adapter AgentAdapter `json:"adapter,omitempty"`

	// idle suspends the agent pod while the agent waits for a person, and wakes it with the
	// next message appended through the Session API. Unset: the pod runs until the session
	// ends, is suspended by hand or completes.
	// +optional
	Idle *IdleSpec `json:"idle,omitempty"`
}

// IdleSpec scales a waiting agent to zero. The agent waits for a person when its last message
// is a final assistant answer (no tool call open, nothing streaming) or it reported
// session:idle. Suspension is recorded in status only (AgentRunning=False, reason Idle): the
// controller never writes spec, so GitOps tools see no drift.
// +kubebuilder:validation:XValidation:rule="duration(self.suspendAfter) > duration('0s')",message="idle.suspendAfter must be positive"
type IdleSpec struct {
	// suspendAfter is how long the agent may wait for a person before its pod is stopped
	// (gracefully, everything kept; no restart is counted). The next user message appended
	// through the Session API starts a new pod with the resume bundle holding it.
	// +required
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Pattern=`^-?([0-9]+(\.[0-9]+)?(ns|us|µs|ms|s|m|h))+$`
	SuspendAfter metav1.Duration `json:"suspendAfter"`
}

// BackoffSpec is an exponential backoff between restarts.
// +kubebuilder:validation:XValidation:rule="!has(self.initial) || duration(self.initial) > duration('0s')",message="backoff.initial must be positive"
// +kubebuilder:validation:XValidation:rule="!has(self.max) || duration(self.max) > duration('0s')",message="backoff.max must be positive"
// +kubebuilder:validation:XValidation:rule="!has(self.initial) || !has(self.max) || duration(self.initial) <= duration(self.max)",message="backoff.initial must not exceed backoff.max"
type BackoffSpec struct {
	// initial delay before the first restart.
	// +optional
	// +kubebuilder:default="10s"
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Pattern=`^-?([0-9]+(\.[0-9]+)?(ns|us|µs|ms|s|m|h))+$`
	Initial *metav1.Duration `json:"initial,omitempty"`

	// max delay between restarts.
	// +optional
	// +kubebuilder:default="5m"
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Pattern=`^-?([0-9]+(\.[0-9]+)?(ns|us|µs|ms|s|m|h))+$`
	Max *metav1.Duration `json:"max,omitempty"`
}

// CheckpointPolicy says when scheduled checkpoints are taken.
// +kubebuilder:validation:XValidation:rule="!has(self.interval) || duration(self.interval) > duration('0s')",message="checkpoints.interval must be positive"
type CheckpointPolicy struct {
	// everyTurns takes a checkpoint every N turns.
	// +optional
	// +kubebuilder:validation:Minimum=1
	EveryTurns *int32 `json:"everyTurns,omitempty"`

	// interval takes a checkpoint this often while the session is active.
	// +optional
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Pattern=`^-?([0-9]+(\.[0-9]+)?(ns|us|µs|ms|s|m|h))+$`
	Interval *metav1.Duration `json:"interval,omitempty"`

	// keep is how many checkpoints are retained; older ones are deleted.
	// +optional
	// +kubebuilder:default=10
	// +kubebuilder:validation:Minimum=1
	Keep *int32 `json:"keep,omitempty"`
}

// ForkSource names the Checkpoint a conversation starts from.
type ForkSource struct {
	// checkpoint is the name of a Checkpoint in the same namespace.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Checkpoint string `json:"checkpoint"`

	// conversation names the Conversation the Checkpoint belongs to. A fork copies that
	// conversation's history, so its author must be allowed to read it (get
	// conversations/history): of this Conversation when it is named, else of every Conversation
	// of the namespace (checked at admission). The controller refuses a Checkpoint of another.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	Conversation string `json:"conversation,omitempty"`
}

// ConversationPhase is a one-word summary of the conversation for printer columns. The
// conditions are the source of truth.
// +kubebuilder:validation:Enum=Pending;Active;Suspended;Recovering;Expired;Failed
type ConversationPhase string

const (
	// ConversationPending has not been set up yet.
	ConversationPending ConversationPhase = "Pending"
	// ConversationActive is live.
	ConversationActive ConversationPhase = "Active"
	// ConversationSuspended has its agent stopped on request.
	ConversationSuspended ConversationPhase = "Suspended"
	// ConversationRecovering is restarting a crashed agent.
	ConversationRecovering ConversationPhase = "Recovering"
	// ConversationExpired reached its ttl or idle timeout.
	ConversationExpired ConversationPhase = "Expired"
	// ConversationFailed cannot go on without help.
	ConversationFailed ConversationPhase = "Failed"
)

// ConversationStatus is the observed state of a conversation. It holds counts and references,
// never message content.
type ConversationStatus struct {
	// observedGeneration is the spec generation this status describes.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// sessionID is the session's id: spec.sessionID, or one the controller minted.
	// +optional
	SessionID string `json:"sessionID,omitempty"`

	// phase summarises the conditions in one word.
	// +optional
	Phase ConversationPhase `json:"phase,omitempty"`

	// conditions: Ready, HistoryAvailable, AgentRunning, Expired, Degraded, Compacting.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// history summarises the stored history.
	// +optional
	History *HistoryStatus `json:"history,omitempty"`

	// context is the context-window usage.
	// +optional
	Context *ContextStatus `json:"context,omitempty"`

	// lastActivityTime is when the agent last appended to the history.
	// +optional
	LastActivityTime *metav1.Time `json:"lastActivityTime,omitempty"`

	// expiresAt is when the session expires (the earlier of ttl and idle timeout).
	// +optional
	ExpiresAt *metav1.Time `json:"expiresAt,omitempty"`

	// agent is the agent pod's state.
	// +optional
	Agent *AgentStatus `json:"agent,omitempty"`

	// adapterState is the latest state the agent's adapter reported.
	// +optional
	AdapterState *AdapterState `json:"adapterState,omitempty"`

	// latestCheckpoint is the name of the newest Ready Checkpoint.
	// +optional
	LatestCheckpoint string `json:"latestCheckpoint,omitempty"`

	// lastCompaction records the latest compaction.
	// +optional
	LastCompaction *CompactionRecord `json:"lastCompaction,omitempty"`
}

// HistoryStatus summarises the stored history.
type HistoryStatus struct {
	// messages in the current epoch.
	// +optional
	Messages int64 `json:"messages,omitempty"`
	// turns in the current epoch.
	// +optional
	Turns int64 `json:"turns,omitempty"`
	// bytes stored for the current epoch.
	// +optional
	Bytes int64 `json:"bytes,omitempty"`
	// sequence of the newest message.
	// +optional
	Sequence int64 `json:"sequence,omitempty"`
	// epoch counts compactions: each writes a new epoch.
	// +optional
	Epoch int64 `json:"epoch,omitempty"`
	// location of the history, e.g. configmap://NAME or s3://BUCKET/PREFIX.
	// +optional
	Location string `json:"location,omitempty"`
}

// ContextStatus is the context-window usage.
type ContextStatus struct {
	// tokens in the current history.
	// +optional
	Tokens int64 `json:"tokens,omitempty"`
	// limit is spec.context.maxTokens.
	// +optional
	Limit int64 `json:"limit,omitempty"`
	// percent of the limit in use.
	// +optional
	Percent int32 `json:"percent,omitempty"`
}

// AgentStatus is the agent pod's state.
type AgentStatus struct {
	// podName of the current agent pod.
	// +optional
	PodName string `json:"podName,omitempty"`
	// podUID is the UID of the agent pod Parley created under podName. The Session API binds
	// an agent token to its conversation by this UID (the token's pod-uid), not by the name:
	// a pod someone else creates under the same name is another pod.
	// +optional
	// +kubebuilder:validation:MaxLength=128
	PodUID string `json:"podUID,omitempty"`
	// attempt counts the agent pods started for this session (after crashes, and on resume
	// after a suspend); the current pod's name ends in it.
	// +optional
	Attempt int32 `json:"attempt,omitempty"`
	// restarts after crashes so far.
	// +optional
	Restarts int32 `json:"restarts,omitempty"`
	// lastFailure describes the latest crash.
	// +optional
	LastFailure *AgentFailure `json:"lastFailure,omitempty"`
	// failuresAtTurn counts the crashes in a row at lastFailure.turn; at three the turn is
	// poison and the agent is not restarted.
	// +optional
	FailuresAtTurn int32 `json:"failuresAtTurn,omitempty"`
	// nextStartAt is when the next agent pod starts, while a restart waits out its backoff.
	// +optional
	NextStartAt *metav1.Time `json:"nextStartAt,omitempty"`
	// resumedFrom is the Checkpoint the current pod resumed from.
	// +optional
	ResumedFrom string `json:"resumedFrom,omitempty"`
}

// AgentFailure describes one crash of the agent.
type AgentFailure struct {
	// reason, e.g. Error, OOMKilled, Evicted, Preempted, Deleted, NodeLost.
	// +optional
	Reason string `json:"reason,omitempty"`
	// exitCode of the agent container.
	// +optional
	ExitCode int32 `json:"exitCode,omitempty"`
	// podName of the pod that failed.
	// +optional
	PodName string `json:"podName,omitempty"`
	// message from the kubelet or the container's termination message, cut to 1024 bytes.
	// +optional
	// +kubebuilder:validation:MaxLength=1024
	Message string `json:"message,omitempty"`
	// turn that was in progress.
	// +optional
	Turn int64 `json:"turn,omitempty"`
	// time of the failure.
	// +optional
	Time *metav1.Time `json:"time,omitempty"`
}

// CompactionRecord records one compaction.
type CompactionRecord struct {
	// time of the compaction.
	// +optional
	Time *metav1.Time `json:"time,omitempty"`
	// strategy used.
	// +optional
	Strategy CompactionStrategy `json:"strategy,omitempty"`
	// tokensBefore compaction.
	// +optional
	TokensBefore int64 `json:"tokensBefore,omitempty"`
	// tokensAfter compaction.
	// +optional
	TokensAfter int64 `json:"tokensAfter,omitempty"`
	// messagesFolded into a summary or notice.
	// +optional
	MessagesFolded int64 `json:"messagesFolded,omitempty"`
	// checkpoint taken before compacting.
	// +optional
	Checkpoint string `json:"checkpoint,omitempty"`
}

// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=conv,categories=parley
// +kubebuilder:printcolumn:name="Session",type=string,JSONPath=`.status.sessionID`
// +kubebuilder:printcolumn:name="Phase",type=string,JSONPath=`.status.phase`
// +kubebuilder:printcolumn:name="Messages",type=integer,JSONPath=`.status.history.messages`
// +kubebuilder:printcolumn:name="Tokens",type=integer,JSONPath=`.status.context.tokens`
// +kubebuilder:printcolumn:name="Context%",type=integer,JSONPath=`.status.context.percent`
// +kubebuilder:printcolumn:name="Restarts",type=integer,JSONPath=`.status.agent.restarts`
// +kubebuilder:printcolumn:name="Expires",type=string,JSONPath=`.status.expiresAt`,description="When the session expires (RFC 3339); a date column would print <invalid> for a future time"
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`

// Conversation is one AI-agent conversation session: its history, lifetime, context budget and
// agent pod.
type Conversation struct {
	metav1.TypeMeta `json:",inline"`

	// metadata is standard object metadata.
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec is the desired state.
	// +required
	Spec ConversationSpec `json:"spec"`

	// status is the observed state.
	// +optional
	Status ConversationStatus `json:"status,omitempty"`
}

// +kubebuilder:object:root=true

// ConversationList contains a list of Conversation.
type ConversationList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Conversation `json:"items"`
}
