package tokens

import (
	"fmt"
	"strings"

	"github.com/tiktoken-go/tokenizer"
)

// Tokenizer names accepted by New and by a Conversation's spec.context.tokenizer.
const (
	Cl100kBase  = "cl100k_base"
	O200kBase   = "o200k_base"
	Approximate = "approximate"
)

// Names lists the tokenizer names New accepts, in a stable order.
func Names() []string { return []string{Cl100kBase, O200kBase, Approximate} }

// TextCounter counts the tokens of plain text. Implementations are safe for concurrent use.
type TextCounter interface {
	// Name is the tokenizer's name, one of Names().
	Name() string
	// CountText returns the number of tokens text encodes to.
	CountText(text string) int
}

// NewTextCounter returns the text counter of the named tokenizer.
func NewTextCounter(name string) (TextCounter, error) {
	switch name {
	case Cl100kBase:
		return newBPECounter(tokenizer.Cl100kBase)
	case O200kBase:
		return newBPECounter(tokenizer.O200kBase)
	case Approximate:
		return ApproximateCounter{}, nil
	default:
		return nil, fmt.Errorf("unknown tokenizer %q: want one of %s", name, strings.Join(Names(), ", "))
	}
}

// bpeCounter counts with an exact byte-pair encoding.
type bpeCounter struct {
	name  string
	table *bpeTable
	// short remembers the counts of short texts, which repeat: tool names, the placeholder
	// of cleared tool results, one-word answers.
	short *countCache
}

const (
	// maxShortText is the longest text remembered in bpeCounter.short, in bytes.
	maxShortText = 64
	// shortTextEntries bounds bpeCounter.short.
	shortTextEntries = 1 << 14
)

func newBPECounter(encoding tokenizer.Encoding) (*bpeCounter, error) {
	table, err := bpeTables[encoding]()
	if err != nil {
		return nil, err
	}
	return &bpeCounter{name: string(encoding), table: table, short: newCountCache(shortTextEntries)}, nil
}

func (c *bpeCounter) Name() string { return c.name }

func (c *bpeCounter) CountText(text string) int {
	if text == "" {
		return 0
	}
	if len(text) > maxShortText {
		return c.table.count(text)
	}
	key := cacheKey{id: text}
	if n, ok := c.short.get(key); ok {
		return n
	}
	n := c.table.count(text)
	c.short.put(key, n)
	return n
}

// ApproximateCounter estimates one token per four bytes of UTF-8, rounded up.
//
// Bytes rather than characters: scripts with multi-byte characters (CJK, Cyrillic) cost more
// tokens per character, and counting bytes keeps the estimate closer for them.
type ApproximateCounter struct{}

// BytesPerToken is the ratio ApproximateCounter assumes.
const BytesPerToken = 4

func (ApproximateCounter) Name() string { return Approximate }

func (ApproximateCounter) CountText(text string) int {
	return (len(text) + BytesPerToken - 1) / BytesPerToken
}
