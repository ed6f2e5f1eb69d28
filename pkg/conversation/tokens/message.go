package tokens

import (
	"hash/maphash"

	"github.com/parley-dev/parley/pkg/conversation"
)

// The framing a chat API adds around content, in tokens. These follow OpenAI's published
// accounting (every message is wrapped as <|start|>role ... <|end|>, a reply is primed with
// <|start|>assistant<|message|>); Anthropic's framing is of the same size.
const (
	// MessageOverhead is added once per message.
	MessageOverhead = 3
	// NameOverhead is added when a message carries an author name (plus the name's tokens).
	NameOverhead = 1
	// ReplyPriming is added once per state, for the start of the model's answer.
	ReplyPriming = 3
	// ToolCallOverhead is added per tool_use and tool_result block, for the structure around
	// the id, name and payload.
	ToolCallOverhead = 3
	// MediaTokens is charged for an image or document held by reference: its size in tokens
	// is unknown without the bytes. Anthropic charges about width×height/750 tokens for an
	// image, at most about 1,600; we assume the maximum so that compaction comes early rather
	// than late.
	MediaTokens = 1600
)

// minPlausibleUsageRatio guards against partial usage: a provider's output count below this
// fraction of our own count cannot describe the whole message (tokenizers of current models
// differ from cl100k_base by well under 2×). Claude Code transcripts, for one, record the
// usage of the first streamed chunk (output_tokens 1–3 for messages of hundreds of tokens).
const minPlausibleUsageRatio = 0.5

// MessageCounter counts messages with a TextCounter, caches the counts per message version,
// and prefers what the provider reported.
//
// Counting a message: MessageOverhead, plus NameOverhead and the name's tokens when it has a
// name, plus per block: text and thinking count their text; redacted_thinking its opaque
// data; tool_use ToolCallOverhead, its id, its name and its arguments (the exact string the
// provider sent, else the JSON input); tool_result ToolCallOverhead, its id and its output
// (text, or its content blocks counted the same way); image and document MediaTokens, unless
// the document is inline text, which is counted as text; an unknown block its raw JSON.
//
// Provider-reported usage: for an assistant message whose Usage.Output is set, the count is
// MessageOverhead + Usage.Output instead, because the provider counted with the model's real
// tokenizer (Claude's is not public). Output is what the model generated for this message
// alone; Usage.Input and the cache fields describe the whole prompt of that call, not this
// message, and are not used. A reported Output below half of our own count is taken for a
// partial report (streamed transcripts record an early chunk's usage) and ignored.
//
// Cache: counts are kept per (message id, hash of everything counted), so an edited or
// still-streaming message is recounted and two messages with equal content but different
// ids do not evict each other. The cache is bounded (WithCacheSize) and safe for concurrent
// use.
type MessageCounter struct {
	text        TextCounter
	useReported bool
	cacheSize   int
	cache       *countCache
}

// NewMessageCounter wraps a TextCounter.
func NewMessageCounter(text TextCounter, opts ...Option) *MessageCounter {
	c := &MessageCounter{text: text, useReported: true, cacheSize: DefaultCacheSize}
	for _, opt := range opts {
		opt(c)
	}
	if c.cacheSize > 0 {
		c.cache = newCountCache(c.cacheSize)
	}
	return c
}

// Name is the tokenizer's name.
func (c *MessageCounter) Name() string { return c.text.Name() }

// CountText counts plain text with the tokenizer.
func (c *MessageCounter) CountText(text string) int { return c.text.CountText(text) }

// CountState counts the system message, every message of State.Messages and ReplyPriming.
func (c *MessageCounter) CountState(s *conversation.State) int {
	if s == nil {
		return 0
	}
	n := ReplyPriming
	if s.System != nil {
		n += c.CountMessage(s.System)
	}
	for i := range s.Messages {
		n += c.CountMessage(&s.Messages[i])
	}
	return n
}

// CountMessage counts one message (see MessageCounter for how).
func (c *MessageCounter) CountMessage(m *conversation.Message) int {
	if m == nil {
		return 0
	}
	if c.cache == nil {
		return c.count(m)
	}
	key := cacheKey{id: m.ID, hash: hashMessage(m)}
	if n, ok := c.cache.get(key); ok {
		return n
	}
	n := c.count(m)
	c.cache.put(key, n)
	return n
}

func (c *MessageCounter) count(m *conversation.Message) int {
	n := MessageOverhead
	if m.Name != "" {
		n += NameOverhead + c.text.CountText(m.Name)
	}
	content := c.countBlocks(m.Blocks)
	if c.useReported && m.Role == conversation.RoleAssistant && m.Usage.Output > 0 &&
		float64(m.Usage.Output) >= minPlausibleUsageRatio*float64(content) {
		return n + int(m.Usage.Output)
	}
	return n + content
}

func (c *MessageCounter) countBlocks(blocks []conversation.Block) int {
	n := 0
	for i := range blocks {
		n += c.countBlock(&blocks[i])
	}
	return n
}

func (c *MessageCounter) countBlock(b *conversation.Block) int {
	switch b.Type {
	case conversation.BlockText, conversation.BlockThinking:
		return c.text.CountText(b.Text)
	case conversation.BlockRedactedThinking:
		return c.text.CountText(b.Data)
	case conversation.BlockToolUse:
		args := b.Arguments
		if args == "" {
			args = string(b.Input)
		}
		return ToolCallOverhead + c.text.CountText(b.ToolUseID) + c.text.CountText(b.ToolName) + c.text.CountText(args)
	case conversation.BlockToolResult:
		return ToolCallOverhead + c.text.CountText(b.ToolUseID) + c.text.CountText(b.Text) + c.countBlocks(b.Content)
	case conversation.BlockImage:
		return MediaTokens
	case conversation.BlockDocument:
		if b.Media != nil && b.Media.SourceType == "text" {
			return c.text.CountText(b.Media.Data)
		}
		return MediaTokens
	default:
		return c.text.CountText(string(b.Raw)) + c.text.CountText(b.Text)
	}
}

// hashSeed is per process: cache keys never leave it.
var hashSeed = maphash.MakeSeed()

// hashMessage hashes every field that CountMessage reads. Each field is hashed on its own
// with maphash.String (the runtime's AES-based hash, several GB/s) and the results are
// chained, so moving bytes from one field to the next changes the hash.
func hashMessage(m *conversation.Message) uint64 {
	var h fieldHash
	h.str(string(m.Role))
	h.str(m.Name)
	h.num(uint64(m.Usage.Output))
	h.blocks(m.Blocks)
	return h.sum
}

type fieldHash struct{ sum uint64 }

func (h *fieldHash) str(s string) { h.num(maphash.String(hashSeed, s)) }

// num chains v into the hash: xor, then a multiply and shift that spread every input bit.
func (h *fieldHash) num(v uint64) {
	h.sum = (h.sum ^ v) * 0x9E3779B97F4A7C15
	h.sum ^= h.sum >> 29
}

func (h *fieldHash) blocks(blocks []conversation.Block) {
	h.num(uint64(len(blocks)))
	for i := range blocks {
		b := &blocks[i]
		h.str(string(b.Type))
		h.str(b.Text)
		h.str(b.Data)
		h.str(b.ToolUseID)
		h.str(b.ToolName)
		h.str(b.Arguments)
		h.str(string(b.Input))
		h.str(string(b.Raw))
		if b.Media != nil {
			// Only inline text is counted; an image's bytes cost MediaTokens whatever they are.
			h.str(b.Media.SourceType)
			if b.Media.SourceType == "text" {
				h.str(b.Media.Data)
			}
		}
		h.blocks(b.Content)
	}
}
