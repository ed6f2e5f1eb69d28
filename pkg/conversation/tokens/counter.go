package tokens

import (
	"github.com/parley-dev/parley/pkg/conversation"
)

// Counter counts the tokens of text, of one message, and of a whole conversation state.
// Implementations are safe for concurrent use.
type Counter interface {
	TextCounter
	// CountMessage returns what the message costs in a model's context.
	CountMessage(m *conversation.Message) int
	// CountState returns what the conversation costs in a model's context: the system message
	// and State.Messages, plus the priming of the model's reply. Subagent threads are not
	// counted: the parent's context holds only their results, which are tool results in
	// State.Messages. It must equal CountState of the state without messages plus
	// CountMessage of each message: compaction works out its figures from that sum.
	CountState(s *conversation.State) int
}

// New returns the Counter for a tokenizer name of spec.context.tokenizer (see Names), with
// per-message caching and provider-reported usage as MessageCounter describes. The approximate
// counter is built without a cache unless WithCacheSize says otherwise: hashing a message costs
// more than estimating it.
func New(name string, opts ...Option) (Counter, error) {
	text, err := NewTextCounter(name)
	if err != nil {
		return nil, err
	}
	if name == Approximate {
		opts = append([]Option{WithCacheSize(0)}, opts...)
	}
	return NewMessageCounter(text, opts...), nil
}

// Option configures a MessageCounter.
type Option func(*MessageCounter)

// DefaultCacheSize is the number of message versions a MessageCounter remembers by default.
const DefaultCacheSize = 1 << 16

// WithCacheSize bounds the per-message cache; zero or less turns caching off.
func WithCacheSize(n int) Option { return func(c *MessageCounter) { c.cacheSize = n } }

// WithReportedUsage chooses whether provider-reported output tokens replace the count of an
// assistant message (default true; see MessageCounter).
func WithReportedUsage(use bool) Option { return func(c *MessageCounter) { c.useReported = use } }
