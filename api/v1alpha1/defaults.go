package v1alpha1

import "time"

// The CRDs' defaults, read through accessors. The apiserver fills them in on every object it
// stores, but an object built in Go (a test, a client that skips defaulting, a field added by
// a newer CRD than the object) can leave them unset: consumers read the fields through these
// accessors so that the default is written here and in the kubebuilder marker, nowhere else.
// defaults_test.go compares every default: of the generated CRDs with them.
//
// Every accessor accepts a nil receiver, so an optional section (spec.agent, spec.checkpoints)
// reads as its defaults without a nil check at the caller.

// Defaults of the Conversation and Checkpoint CRDs, the values of their +kubebuilder:default
// markers.
const (
	DefaultTTL                = 24 * time.Hour
	DefaultExpirationPolicy   = ExpirationPolicyRetain
	DefaultCompactAtPercent   = 80
	DefaultStrategy           = CompactionSlidingWindow
	DefaultKeepRecentMessages = 10
	DefaultTokenizer          = TokenizerCL100K
	DefaultMaxRestarts        = 5
	DefaultBackoffInitial     = 10 * time.Second
	DefaultBackoffMax         = 5 * time.Minute
	DefaultResumeMountPath    = "/var/run/parley"
	DefaultAdapter            = AdapterGeneric
	DefaultCheckpointKeep     = 10
	DefaultSeedFormat         = SeedFormatAuto
	DefaultCheckpointReason   = CheckpointManual
	// DefaultConfigMapMaxBytes is 8Mi, also the ConfigMap store's own default
	// (pkg/history/configmap.DefaultMaxBytes; a test in internal/historystore ties them).
	DefaultConfigMapMaxBytes = 8 << 20
	// DefaultObjectStoreMaxBytes is 64Mi.
	DefaultObjectStoreMaxBytes = 64 << 20
	// MaxHistoryBytes is the most objectStore.maxBytes may be (256Mi, the CRD's rule; the
	// ConfigMap ceiling is lower): no store keeps an epoch of more payload.
	MaxHistoryBytes = 256 << 20
)

// IsSuspended is spec.suspend (default false).
func (s *ConversationSpec) IsSuspended() bool {
	return s != nil && s.Suspend != nil && *s.Suspend
}

// GetTTL is lifetime.ttl, DefaultTTL when unset.
func (l *LifetimeSpec) GetTTL() time.Duration {
	if l == nil || l.TTL == nil {
		return DefaultTTL
	}
	return l.TTL.Duration
}

// GetExpirationPolicy is lifetime.expirationPolicy, DefaultExpirationPolicy when unset.
func (l *LifetimeSpec) GetExpirationPolicy() ExpirationPolicy {
	if l == nil || l.ExpirationPolicy == "" {
		return DefaultExpirationPolicy
	}
	return l.ExpirationPolicy
}

// GetCompactAtPercent is context.compactAtPercent, DefaultCompactAtPercent when unset.
func (c *ContextSpec) GetCompactAtPercent() int32 {
	if c == nil || c.CompactAtPercent == 0 {
		return DefaultCompactAtPercent
	}
	return c.CompactAtPercent
}

// GetStrategy is context.strategy, DefaultStrategy when unset.
func (c *ContextSpec) GetStrategy() CompactionStrategy {
	if c == nil || c.Strategy == "" {
		return DefaultStrategy
	}
	return c.Strategy
}

// GetKeepRecentMessages is context.keepRecentMessages, DefaultKeepRecentMessages when unset
// (or not positive, which the CRD's minimum refuses).
func (c *ContextSpec) GetKeepRecentMessages() int32 {
	if c == nil || c.KeepRecentMessages <= 0 {
		return DefaultKeepRecentMessages
	}
	return c.KeepRecentMessages
}

// GetTokenizer is context.tokenizer, DefaultTokenizer when unset.
func (c *ContextSpec) GetTokenizer() Tokenizer {
	if c == nil || c.Tokenizer == "" {
		return DefaultTokenizer
	}
	return c.Tokenizer
}

// GetMaxRestarts is agent.maxRestarts, DefaultMaxRestarts when unset.
func (a *AgentSpec) GetMaxRestarts() int32 {
	if a == nil || a.MaxRestarts == nil {
		return DefaultMaxRestarts
	}
	return *a.MaxRestarts
}

// GetResumeMountPath is agent.resumeMountPath, DefaultResumeMountPath when unset.
func (a *AgentSpec) GetResumeMountPath() string {
	if a == nil || a.ResumeMountPath == "" {
		return DefaultResumeMountPath
	}
	return a.ResumeMountPath
}

// GetAdapter is agent.adapter, DefaultAdapter when unset.
func (a *AgentSpec) GetAdapter() AgentAdapter {
	if a == nil || a.Adapter == "" {
		return DefaultAdapter
	}
	return a.Adapter
}

// GetInitial is backoff.initial, DefaultBackoffInitial when unset.
func (b *BackoffSpec) GetInitial() time.Duration {
	if b == nil || b.Initial == nil {
		return DefaultBackoffInitial
	}
	return b.Initial.Duration
}

// GetMax is backoff.max, DefaultBackoffMax when unset.
func (b *BackoffSpec) GetMax() time.Duration {
	if b == nil || b.Max == nil {
		return DefaultBackoffMax
	}
	return b.Max.Duration
}

// GetKeep is checkpoints.keep, DefaultCheckpointKeep when unset.
func (p *CheckpointPolicy) GetKeep() int32 {
	if p == nil || p.Keep == nil {
		return DefaultCheckpointKeep
	}
	return *p.Keep
}

// GetMaxBytes is configMap.maxBytes in bytes, DefaultConfigMapMaxBytes when unset.
func (c *ConfigMapHistory) GetMaxBytes() int64 {
	if c == nil || c.MaxBytes == nil {
		return DefaultConfigMapMaxBytes
	}
	return c.MaxBytes.Value()
}

// GetMaxBytes is objectStore.maxBytes in bytes, DefaultObjectStoreMaxBytes when unset.
func (o *ObjectStoreHistory) GetMaxBytes() int64 {
	if o == nil || o.MaxBytes == nil {
		return DefaultObjectStoreMaxBytes
	}
	return o.MaxBytes.Value()
}

// GetFormat is seed.format, DefaultSeedFormat when unset.
func (s *SeedSource) GetFormat() SeedFormat {
	if s == nil || s.Format == "" {
		return DefaultSeedFormat
	}
	return s.Format
}

// GetReason is a Checkpoint's spec.reason, DefaultCheckpointReason when unset.
func (s *CheckpointSpec) GetReason() CheckpointReason {
	if s == nil || s.Reason == "" {
		return DefaultCheckpointReason
	}
	return s.Reason
}
